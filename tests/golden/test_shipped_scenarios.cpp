// Every shipped scenario runs from the command line (as the README says) and reports a result per strategy
// and node count; --format json is valid enough to hold one "results" entry per row.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/support/cli.hpp"

namespace {

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST(ShippedScenarios, EveryScenarioRuns) {
  namespace fs = std::filesystem;
  int checked = 0;
  for (const char* dir : {"scenarios", "scenarios/aach2023"}) {
    for (const auto& e : fs::directory_iterator(fs::path(DDLSIM_SOURCE_DIR) / dir)) {
      if (e.path().extension() != ".yaml") continue;
      SCOPED_TRACE(e.path().string());
      auto [status, out] =
          ddlsim_test::run_ddlsim("run '" + e.path().string() + "' --format csv", ddlsim_test::Capture::Both);
      EXPECT_EQ(status, 0) << out;
      EXPECT_GE(count(out, "\n"), 2u) << out;  // header + at least one result
      ++checked;
    }
  }
  EXPECT_GE(checked, 11);
}
