// PyTorch's DDP benchmark on DGX-1 V100 machines (scenarios/pytorch-ddp-dgx1.yaml against
// scenarios/measured/pytorch_ddp_dgx1.csv): ResNet-50 and ResNet-101, 2 to 16 GPUs, DDP's default 25 MB
// buckets and 1 MB ones. Efficiency = per-GPU examples/s over DDP's on one GPU with the same buckets.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "sim/io/csv.hpp"
#include "tests/support/cli.hpp"

using namespace ddlsim;

namespace {

// strategy/gpus -> (measured, simulated) efficiency, from `ddlsim validate` on one model.
std::map<std::string, std::pair<double, double>> validate(const std::string& model, double samples_per_s) {
  std::string cmd = "validate '" + std::string(DDLSIM_SOURCE_DIR) +
                    "/scenarios/pytorch-ddp-dgx1.yaml' --measured '" + DDLSIM_SOURCE_DIR +
                    "/scenarios/measured/pytorch_ddp_dgx1.csv' --format csv --set workload.model=" + model +
                    " --set workload.compute.samples_per_s=" + std::to_string(samples_per_s);
  auto o = ddlsim_test::run_ddlsim(cmd);
  EXPECT_EQ(o.status, 0) << cmd << "\n" << o.out;
  CsvTable t = parse_csv(o.out, "validate output");
  std::map<std::string, std::pair<double, double>> rows;
  for (const auto& r : t.rows) {
    std::string key = r[t.column("strategy")] + "/" + r[t.column("gpus")];
    EXPECT_EQ(rows.count(key), 0u) << key << " twice: each label's rows go to that strategy alone";
    rows[key] = {std::stod(r[t.column("measured")]), std::stod(r[t.column("simulated")])};
  }
  return rows;
}

}  // namespace

TEST(PytorchDdpDgx1, EfficiencyByBucketSize) {
  // Models and their single-GPU rates without DDP (the benchmark's "no ddp" rows: 32 / 0.097 s, 32 / 0.162
  // s).
  for (auto [model, rate] : {std::pair<const char*, double>{"resnet50", 329}, {"resnet101", 197}}) {
    SCOPED_TRACE(model);
    auto rows = validate(model, rate);
    // 2 and 4 GPUs run on part of one node (the first GPUs), 8 on one, 16 on two: 8 rows per model.
    ASSERT_EQ(rows.size(), 8u);
    for (int g : {2, 4, 8, 16}) {
      auto big = rows["ddp/" + std::to_string(g)], small = rows["ddp-1mb/" + std::to_string(g)];
      // DDP's default 25 MB buckets: within 0.05 of the measured efficiency (0.011-0.040 now).
      EXPECT_NEAR(big.second, big.first, 0.05) << g;
      // Known miss: measured, 1 MB buckets lose 0.010-0.035 of efficiency to 25 MB from 2 GPUs on; simulated,
      // less than a third of that (1 MB is even ahead at some counts). When a mechanism closes the gap, this
      // fails: then hold the 1 MB rows like the 25 MB ones.
      double measured_gap = big.first - small.first, simulated_gap = big.second - small.second;
      EXPECT_GE(measured_gap, 0.009) << g;
      EXPECT_LT(simulated_gap, measured_gap / 3) << g;
    }
  }
}
