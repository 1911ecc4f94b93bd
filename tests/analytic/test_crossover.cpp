// `ddlsim crossover` on a star (every GPU its own host, 25 GB/s links of 1 us: a route host-switch-host has
// latency l = 2 us): ring = 2(p−1)·(l + n/(p·B)), dedicated PS with k servers = 2·max(n/B, p·n/(k·B)) + 2·l.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "sim/io/csv.hpp"
#include "tests/support/cli.hpp"

using namespace ddlsim;

namespace {

CsvTable crossover(const std::string& extra) {
  auto o = ddlsim_test::run_ddlsim("crossover '" + std::string(DDLSIM_SOURCE_DIR) +
                                   "/scenarios/star-ps-vs-ring.yaml' --format csv " + extra);
  EXPECT_EQ(o.status, 0) << o.out;
  return parse_csv(o.out, "crossover output");
}

double ring(double p, double n) {
  return 2 * (p - 1) * (2e-6 + n / (p * 25e9));
}
double ps(double p, double k, double n) {
  return 2 * std::max(n / 25e9, p * n / (k * 25e9)) + 2 * 2e-6;
}

}  // namespace

TEST(Crossover, StarTimesServersToMatchAndOvertakingCount) {
  const double n = 256e3;
  CsvTable t = crossover(
      "--nodes 2,4,8,16,32 --set workload.bytes=256kB "
      "--set 'strategies=[ring, {name: ps, servers: 4, placement: dedicated}]'");
  ASSERT_EQ(t.rows.size(), 5u);
  int64_t first_ring_win = -1;
  bool ps_won = false;
  for (const auto& r : t.rows) {
    double p = std::stod(r[t.column("gpus")]);
    double t_ring = std::stod(r[t.column("ring_s")]), t_ps = std::stod(r[t.column("ps_s")]);
    EXPECT_NEAR(t_ring, ring(p, n), ring(p, n) * 1e-6) << p;
    EXPECT_NEAR(t_ps, ps(p, 4, n), ps(p, 4, n) * 1e-6) << p;
    // servers_to_match: the first power of two k with ps(p, k) <= ring(p), or -1.
    int64_t want = -1;
    for (int64_t k = 1; k <= 2 * static_cast<int64_t>(p); k *= 2)
      if (ps(p, static_cast<double>(k), n) <= ring(p, n) * (1 + 1e-9)) {
        want = k;
        break;
      }
    EXPECT_EQ(std::stoll(r[t.column("servers_to_match")]), want) << p;
    if (ps(p, 4, n) <= ring(p, n))
      ps_won = true;
    else if (ps_won && first_ring_win < 0)
      first_ring_win = static_cast<int64_t>(p);
  }
  // Formulas: ps(4, k=4) = 24.48 us < ring(4) = 27.36 us, ps(16, 4) = 85.92 us > ring(16) = 79.2 us.
  EXPECT_EQ(first_ring_win, 16);
}

TEST(Crossover, DedicatedPsNeverMatchesRingOnBandwidth) {
  // Large n: PS >= 2n/B > ring's 2(p−1)/p·n/B for any k, so no server count matches; the best is k >= p.
  CsvTable t = crossover("--nodes 4,8 --set workload.bytes=100MB");
  for (const auto& r : t.rows) {
    EXPECT_EQ(std::stoll(r[t.column("servers_to_match")]), -1);
    double p = std::stod(r[t.column("gpus")]);
    EXPECT_GE(std::stoll(r[t.column("best_servers")]), static_cast<int64_t>(p));
    double want = ps(p, p, 100e6) / ring(p, 100e6);
    EXPECT_NEAR(std::stod(r[t.column("best_ps_over_ring")]), want, want * 1e-6);
  }
}
