// The fuzz targets on their seeds, in every build: each shipped scenario, topology and model through the
// scenario loader, each measured-data file through the CSV and measurement readers, the unit seeds through
// the unit parsers, and every input a fuzzer once found (tests/fuzz/regressions/<target>/). A target aborts
// on a finding, so the test passes when all of them return.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_targets.hpp"

namespace {

namespace fs = std::filesystem;

// Runs `target` on every regular file under the folders; returns how many.
size_t run_on(const std::function<int(const uint8_t*, size_t)>& target,
              const std::vector<std::string>& folders) {
  size_t n = 0;
  for (const std::string& folder : folders) {
    fs::path dir = fs::path(DDLSIM_SOURCE_DIR) / folder;
    if (!fs::exists(dir)) continue;
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir)) {
      if (!e.is_regular_file()) continue;
      std::ifstream in(e.path(), std::ios::binary);
      std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      EXPECT_EQ(target(reinterpret_cast<const uint8_t*>(data.data()), data.size()), 0) << e.path();
      ++n;
    }
  }
  return n;
}

}  // namespace

TEST(FuzzSeeds, ScenarioLoader) {
  EXPECT_GT(
      run_on(ddlsim_fuzz_scenario, {"scenarios", "topologies", "models", "tests/fuzz/regressions/scenario"}),
      30u);
}

TEST(FuzzSeeds, UnitParsers) {
  EXPECT_GE(run_on(ddlsim_fuzz_units, {"tests/fuzz/seeds/units", "tests/fuzz/regressions/units"}), 13u);
}

TEST(FuzzSeeds, CsvAndMeasurementReaders) {
  EXPECT_GT(run_on(ddlsim_fuzz_csv, {"scenarios/measured", "tests/fuzz/regressions/csv"}), 10u);
  EXPECT_GT(run_on(ddlsim_fuzz_measurements, {"scenarios/measured", "tests/fuzz/regressions/measurements"}),
            10u);
}
