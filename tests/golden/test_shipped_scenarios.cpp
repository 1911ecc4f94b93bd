// Every shipped scenario runs from the command line (as the README says) and reports a result per strategy
// and node count; --format json is valid enough to hold one "results" entry per row. The Aach et al.
// scenarios run here at 1 and 2 nodes only: the validation test runs them at every count.
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
      std::string small = std::string(dir) == "scenarios/aach2023" ? " --set 'cluster.nodes=[1, 2]'" : "";
      auto [status, out] = ddlsim_test::run_ddlsim("run '" + e.path().string() + "' --format csv" + small,
                                                   ddlsim_test::Capture::Both);
      EXPECT_EQ(status, 0) << out;
      EXPECT_GE(count(out, "\n"), 2u) << out;  // header + at least one result
      ++checked;
    }
  }
  EXPECT_GE(checked, 11);
}

TEST(ShippedScenarios, DescribePrintsLinksCommModelAndRoutes) {
  // `ddlsim describe` on a scenario that layers a comm key on its topology: JUWELS Booster's links by class,
  // the comm model with the scenario's 20 GB/s intra-node flow bound next to the topology's 6 us inter-node
  // alpha and 0.9 efficiency and its 600 GB/s GPU reduction, and a route between two GPUs of one node.
  auto [status, out] = ddlsim_test::run_ddlsim(
      "describe '" + std::string(DDLSIM_SOURCE_DIR) + "/scenarios/aach2023/resnet152-dali-cpu.yaml'",
      ddlsim_test::Capture::Both);
  ASSERT_EQ(status, 0) << out;
  for (const char* want : {"cluster juwels-booster: 1 nodes x 4", "nvlink", "comm intra any size",
                           "flow bound 20 GB/s", "comm inter any size     alpha 6 us", "efficiency 0.9",
                           "reduce any size     gpu 600 GB/s", "route 1 hops: n0.gpu0 > n0.gpu1"})
    EXPECT_NE(out.find(want), std::string::npos) << want << "\n" << out;
}

TEST(ShippedScenarios, DescribeSaysTheIntraNodeClassIsUnusedWithoutNodes) {
  // A star of one-GPU hosts has no two GPUs in one node, so the intra-node comm class never applies.
  auto [status, out] = ddlsim_test::run_ddlsim(
      "describe '" + std::string(DDLSIM_SOURCE_DIR) + "/scenarios/star-ps-vs-ring.yaml' --nodes 2",
      ddlsim_test::Capture::Both);
  ASSERT_EQ(status, 0) << out;
  EXPECT_NE(out.find("comm intra   (unused"), std::string::npos) << out;
  EXPECT_EQ(out.find("comm intra any size"), std::string::npos) << out;
}
