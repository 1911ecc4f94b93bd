// Validation of collectives against published nccl-tests runs of shipped systems, from the shipped topology
// values alone (no fitting to the series), through `ddlsim validate` on the shipped scenarios. Held per
// series: the median |busbw error| within 10%, and within 25% at every size in the bandwidth regime, taken as
// the sizes whose measured busbw is at least half the series' peak (at and above Hockney's n_1/2, where the
// transfer, not the latency, decides the time).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/calib/readers.hpp"
#include "sim/io/csv.hpp"
#include "tests/support/cli.hpp"

using namespace ddlsim;

namespace {

struct Size {
  double bytes, measured_busbw, rel_error;
};

std::vector<Size> validate(const std::string& scenario, const std::string& measured,
                           const std::string& layout) {
  auto o = ddlsim_test::run_ddlsim("validate '" + std::string(DDLSIM_SOURCE_DIR) + "/scenarios/" + scenario +
                                   "' --measured '" + DDLSIM_SOURCE_DIR + "/scenarios/measured/" + measured +
                                   "' " + layout + " --format csv");
  EXPECT_EQ(o.status, 0) << o.out;
  CsvTable t = parse_csv(o.out, scenario);
  std::vector<Size> sizes;
  for (const auto& r : t.rows)
    sizes.push_back({std::stod(r[t.column("bytes")]), std::stod(r[t.column("measured_busbw")]),
                     std::stod(r[t.column("rel_error")])});
  return sizes;
}

TEST(PublishedCollectives, AwsP4deTwoNodesOverEfa) {
  // 2 p4de.24xlarge, 16 A100 80GB, 8 B to 2 GiB (aws-samples/awsome-distributed-training).
  std::vector<Size> sizes = validate("aws-p4de-nccl-tests.yaml", "nccl-tests/aws-p4de-2node-a100-efa.txt",
                                     "--ranks 16 --ranks-per-node 8");
  ASSERT_EQ(sizes.size(), 29u);
  std::vector<double> errors;
  double peak = 0;
  for (const Size& s : sizes) {
    errors.push_back(s.rel_error);
    peak = std::max(peak, s.measured_busbw);
  }
  EXPECT_LE(median(errors), 0.10);
  int bandwidth_regime = 0;
  for (const Size& s : sizes)
    if (s.measured_busbw >= peak / 2) {
      ++bandwidth_regime;
      EXPECT_LE(s.rel_error, 0.25) << s.bytes << " B";
    }
  EXPECT_EQ(bandwidth_regime, 7);  // 32 MiB to 2 GiB
}

}  // namespace
