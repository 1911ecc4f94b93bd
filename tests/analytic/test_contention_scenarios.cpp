// The shipped PS-vs-ring scenarios where contention shows, held to the arithmetic in their comments.
// n = 100 MB, B = 25 GB/s, 1 us per link.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "sim/config/scenario.hpp"
#include "sim/train/collective_workload.hpp"

using namespace ddlsim;

namespace {

std::map<std::string, double> times(const std::string& file, const std::vector<std::string>& sets = {}) {
  Scenario sc = load_scenario(std::string(DDLSIM_SOURCE_DIR) + "/scenarios/" + file, sets);
  std::map<std::string, double> out;
  for (const Strategy& st : sc.strategies)
    out[st.label] = run_collective_workload(sc, st, sc.cluster.node_counts[0]).time_s;
  return out;
}

constexpr double n = 100e6, B = 25e9, us = 1e-6;

}  // namespace

TEST(ContentionScenarios, FatTreeTwoToOne) {
  auto t = times("fattree-ps-vs-ring.yaml");
  // ring: 2(p−1)(l + n/(pB)), slowest hop crosses leaves: l = 4 links.
  EXPECT_NEAR(t["ring"], 30 * (4 * us + n / (16 * B)), 1e-9);
  // ps-1: incast 2·p·n/B (+ 2 route latencies of 4 links, push and pull).
  EXPECT_NEAR(t["ps-1"], 2 * 16 * n / B + 2 * 4 * us, 1e-9);
  // ps-4: the servers' leaf takes 16·n through 2 uplinks of B per direction: 2 · 16n/(2B), not 2·p·n/(k·B).
  EXPECT_NEAR(t["ps-4"], 2 * 16 * n / (2 * B) + 2 * 4 * us, 1e-6);
  EXPECT_GT(t["ps-4"], 1.9 * (2 * 16 * n / (4 * B)));
  // ps-colocated: each leaf sends 4 · (12/16) · n off-leaf per phase through 2B.
  EXPECT_NEAR(t["ps-colocated"], 2 * 4 * 0.75 * n / (2 * B), 2e-5);
  // Non-blocking: PS with k = p matches ring's bandwidth term 2(p−1)/p·n/B.
  auto nb = times("fattree-ps-vs-ring.yaml", {"cluster.network.oversubscription=\"1:1\""});
  EXPECT_NEAR(nb["ps-colocated"], 2 * 15.0 / 16 * n / B, 1e-5);
  EXPECT_NEAR(nb["ps-4"], 2 * 16 * n / (4 * B) + 2 * 4 * us, 1e-6);
  EXPECT_NEAR(nb["ring"], t["ring"], 1e-12);
}

TEST(ContentionScenarios, DragonflyGlobalLinks) {
  auto t = times("dragonfly-ps-vs-ring.yaml");
  EXPECT_NEAR(t["ring"], 62 * (5 * us + n / (32 * B)), 1e-9);  // no shared link, slowest hop 5 links
  EXPECT_NEAR(t["ps-1"], 2 * 32 * n / B, 1e-5);                // incast
  // k = p: each group pair's one global cable carries 8 · (8/32) · n per phase.
  EXPECT_NEAR(t["ps-colocated"], 2 * 8 * 0.25 * n / B, 2e-5);
  // rhd's distance-16 and -8 steps put 8 flows on one global cable: at least 2 · 8·(n/2 + n/4)/B.
  EXPECT_GT(t["rhd"], 2 * 8 * 0.75 * n / B);
  // Valiant splitting relieves that adversarial pattern and hurts the uncontended ring.
  auto mp = times("dragonfly-ps-vs-ring.yaml", {"cluster.comm.multipath=4"});
  EXPECT_LT(mp["rhd"], t["rhd"]);
  EXPECT_GT(mp["ring"], t["ring"]);
}
