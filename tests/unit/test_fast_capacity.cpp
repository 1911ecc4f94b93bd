// The fast path by capacity: a collective keeps its max-plus time whenever the standalone rates of the
// messages on every link sum to at most its capacity at every instant (then max-min gives every message its
// standalone rate), even where messages overlap on a link; beyond the capacity it falls back. Checked against
// the flow model (EngineOptions{false}) on hand-built topologies.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "sim/net/topology.hpp"
#include "sim/train/collective.hpp"
#include "sim/train/engine.hpp"

namespace ddlsim {
namespace {

struct Net {
  Topology topo;
  std::vector<VertexId> gpus;
};

// Two dragonfly groups of two routers (a0-a1, b0-b1, local cables of `local` B/s); global cables a1-b0 and
// a1-b1 of `global` B/s; GPUs h0, h2 on a0 and h1 on b0, h3 on b1 (host links of `host` B/s). The ring
// h0 → h1 → h2 → h3 → h0 sends h0 → h1 and h2 → h3 both over the local link a0 > a1 (then over different
// global cables), and h1 → h2 and h3 → h0 both over a1 > a0: two messages at once on each of those local
// links, each held to `global` by its global cable.
Net two_group_dragonfly(double host, double local, double global) {
  Net n;
  Topology& t = n.topo;
  VertexId a0 = t.add_vertex(VertexKind::Switch, -1, "g0.r0", 0);
  VertexId a1 = t.add_vertex(VertexKind::Switch, -1, "g0.r1", 0);
  VertexId b0 = t.add_vertex(VertexKind::Switch, -1, "g1.r0", 1);
  VertexId b1 = t.add_vertex(VertexKind::Switch, -1, "g1.r1", 1);
  t.connect(a0, a1, LinkSpec{Rate{local}, Time::ns(300)}, LinkClass::Local);
  t.connect(b0, b1, LinkSpec{Rate{local}, Time::ns(300)}, LinkClass::Local);
  t.connect(a1, b0, LinkSpec{Rate{global}, Time::us(2)}, LinkClass::Global);
  t.connect(a1, b1, LinkSpec{Rate{global}, Time::us(2)}, LinkClass::Global);
  VertexId at[4] = {a0, b0, a0, b1};
  for (int i = 0; i < 4; ++i) {
    n.gpus.push_back(t.add_vertex(VertexKind::Gpu, i, fmt::format("h{}", i)));
    t.connect(n.gpus.back(), at[i], LinkSpec{Rate{host}, Time::ns(500)}, LinkClass::Host);
  }
  return n;
}

struct Both {
  Time fast, flow;
  EngineStats fast_stats, flow_stats;
  std::vector<LinkUsage> fast_usage, flow_usage;
};

// One isolated collective of `plan` over `members`, `repeats` times in a row, on both paths.
Both run_both(const Net& n, const CommModel& comm, std::shared_ptr<const CollectivePlan> plan,
              const std::vector<VertexId>& members, int repeats = 1) {
  TaskGraph g;
  TaskId prev = 0;
  for (int k = 0; k < repeats; ++k) {
    CollectiveTask c;
    c.plan = plan;
    c.members = members;
    c.isolated = true;
    TaskId t = g.add_collective(std::move(c), k);
    if (k > 0) g.depend(prev, t);
    prev = t;
  }
  g.finalize();
  Engine fast(n.topo, comm, g, EngineOptions{true}), flow(n.topo, comm, g, EngineOptions{false});
  Both b;
  b.fast = fast.run();
  b.flow = flow.run();
  b.fast_stats = fast.stats();
  b.flow_stats = flow.stats();
  b.fast_usage = fast.link_usage();
  b.flow_usage = flow.link_usage();
  return b;
}

// The same time to the picosecond, or within the flow model's relative slack.
void expect_same_time(Time fast, Time flow) {
  double tol = std::max(1.0, 1e-9 * static_cast<double>(flow.picoseconds()));
  EXPECT_LE(std::abs(static_cast<double>(fast.picoseconds() - flow.picoseconds())), tol)
      << "fast " << fast.picoseconds() << " ps, flow model " << flow.picoseconds() << " ps";
}

// What the fast path records per link is what the flow model does: bytes, busy time, peak.
void expect_same_usage(const Net& n, const Both& b) {
  ASSERT_EQ(b.fast_usage.size(), b.flow_usage.size());
  for (size_t l = 0; l < b.fast_usage.size(); ++l) {
    const LinkUsage &f = b.fast_usage[l], &s = b.flow_usage[l];
    std::string name = link_name(n.topo, static_cast<LinkId>(l));
    EXPECT_NEAR(f.bytes, s.bytes, 1e-9 * std::max(1.0, s.bytes)) << name;
    EXPECT_NEAR(f.busy_s, s.busy_s, 1e-9 * s.busy_s + 1e-11) << name;
    EXPECT_EQ(f.peak_flows, s.peak_flows) << name;
  }
}

std::shared_ptr<const CollectivePlan> plan_of(Algorithm a, uint32_t p, double bytes) {
  return make_plan(CollectiveShape{.algorithm = a, .ranks = p, .bytes = bytes});
}

TEST(FastCapacity, DragonflyRingSharingALocalLinkWithinCapacity) {
  // Local 25 GB/s carries two messages of 12.5 GB/s (each capped by its global cable): exactly full.
  Net n = two_group_dragonfly(25e9, 25e9, 12.5e9);
  CommModel comm;
  for (Algorithm a : {Algorithm::Ring, Algorithm::ReduceScatter, Algorithm::AllGather}) {
    SCOPED_TRACE(algorithm_name(a));
    Both b = run_both(n, comm, plan_of(a, 4, 48e6), n.gpus, 2);
    EXPECT_EQ(b.fast_stats.fast_collectives, 2u) << "the fast path must accept it";
    EXPECT_EQ(b.flow_stats.fast_collectives, 0u);
    EXPECT_EQ(b.fast.picoseconds(), b.flow.picoseconds());
    EXPECT_EQ(b.fast_stats.messages, b.flow_stats.messages);
    expect_same_usage(n, b);
    uint32_t peak = 0;
    for (const LinkUsage& u : b.fast_usage) peak = std::max(peak, u.peak_flows);
    EXPECT_EQ(peak, 2u);  // the local links did carry two messages at once
  }
}

TEST(FastCapacity, DragonflyRingWithEfficiencyAndAlpha) {
  // Efficiency 0.9: each message runs at 0.9 · 12.5 GB/s; two of them fit a 22.5 GB/s local link.
  Net n = two_group_dragonfly(25e9, 22.5e9, 12.5e9);
  CommModel comm;
  comm.inter.ranges[0].efficiency = 0.9;
  comm.inter.ranges[0].alpha = Time::us(3);
  comm.reduce[0].gamma_gpu = 1 / 120e9;
  Both b = run_both(n, comm, plan_of(Algorithm::Ring, 4, 40'000'001), n.gpus, 3);
  EXPECT_EQ(b.fast_stats.fast_collectives, 3u);
  expect_same_time(b.fast, b.flow);
  expect_same_usage(n, b);
}

TEST(FastCapacity, OversubscribedLocalLinkStillFallsBack) {
  CommModel comm;
  // 2 · 12.5 GB/s on a 20 GB/s local link; and 2 · 12.6 GB/s on 25 GB/s (just over).
  for (auto [local, global] : {std::pair{20e9, 12.5e9}, std::pair{25e9, 12.6e9}}) {
    SCOPED_TRACE(fmt::format("local {} global {}", local, global));
    Net n = two_group_dragonfly(25e9, local, global);
    Both b = run_both(n, comm, plan_of(Algorithm::Ring, 4, 48e6), n.gpus);
    EXPECT_EQ(b.fast_stats.fast_collectives, 0u) << "the summed rates exceed the local link";
    EXPECT_EQ(b.fast_stats.slow_collectives, 1u);
    EXPECT_EQ(b.fast.picoseconds(), b.flow.picoseconds());
  }
  // With efficiency 0.9 the same 2 · 11.25 GB/s fits 22.5 GB/s but not 22.4 GB/s.
  comm.inter.ranges[0].efficiency = 0.9;
  Net tight = two_group_dragonfly(25e9, 22.4e9, 12.5e9);
  Both b = run_both(tight, comm, plan_of(Algorithm::Ring, 4, 48e6), tight.gpus);
  EXPECT_EQ(b.fast_stats.fast_collectives, 0u);
  EXPECT_EQ(b.fast.picoseconds(), b.flow.picoseconds());
}

// Random small fabrics: a few switches joined by a random tree plus extra cables, capacities from a small set
// (so that messages' rates often sum exactly to a link's capacity, or just past it), GPUs on random switches,
// random plans, members, sizes and comm models. Wherever the fast path runs it must land on the flow model's
// time (and link usage); it must run in many cases, some of them with messages overlapping on a link.
TEST(FastCapacity, RandomFabricsAgreeWithTheFlowModel) {
  std::mt19937_64 rng(20250114);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const double rates[] = {12.5e9, 25e9, 37.5e9, 50e9};
  const Algorithm algorithms[] = {Algorithm::Ring,       Algorithm::HalvingDoubling, Algorithm::Tree,
                                  Algorithm::DoubleTree, Algorithm::Direct,          Algorithm::ReduceScatter,
                                  Algorithm::AllGather,  Algorithm::Broadcast};
  int fast_runs = 0, shared_runs = 0, cases = 0;
  for (int i = 0; i < 160; ++i) {
    Net n;
    int switches = pick(2, 5), p = pick(3, 8);
    std::vector<VertexId> sw;
    for (int k = 0; k < switches; ++k)
      sw.push_back(n.topo.add_vertex(VertexKind::Switch, -1, fmt::format("s{}", k)));
    auto cable = [&] { return LinkSpec{Rate{rates[pick(0, 3)]}, Time::ns(pick(100, 2000))}; };
    for (int k = 1; k < switches; ++k) n.topo.connect(sw[k], sw[pick(0, k - 1)], cable(), LinkClass::Local);
    for (int g = 0; g < p; ++g) {
      n.gpus.push_back(n.topo.add_vertex(VertexKind::Gpu, g, fmt::format("gpu{}", g)));
      n.topo.connect(n.gpus.back(), sw[pick(0, switches - 1)],
                     LinkSpec{Rate{rates[pick(0, 1)]}, Time::ns(pick(100, 1000))}, LinkClass::Host);
    }
    CommModel comm;
    int c = pick(0, 3);
    if (c == 1) comm.inter.ranges[0].efficiency = 0.9;
    if (c == 2) comm.inter.ranges[0].bandwidth = 12.5e9;
    if (c == 3) {
      comm.inter.ranges[0].alpha = Time::ns(pick(0, 4000));
      comm.reduce[0].gamma_gpu = 1 / 100e9;
    }
    Algorithm a = algorithms[i % 8];
    std::vector<VertexId> members = n.gpus;
    std::shuffle(members.begin(), members.end(), rng);
    double bytes = pick(1000, 50'000'000);
    SCOPED_TRACE(fmt::format("case {}: {} p={} switches={} comm={} bytes={}", i, algorithm_name(a), p,
                             switches, c, bytes));
    Both b = run_both(n, comm, plan_of(a, static_cast<uint32_t>(p), bytes), members, 2);
    ++cases;
    expect_same_time(b.fast, b.flow);
    EXPECT_EQ(b.fast_stats.messages, b.flow_stats.messages);
    if (b.fast_stats.fast_collectives == 0) {
      // Declined: recorded on the flow model (with direct messages and skipped periods) and replayed once.
      EXPECT_EQ(b.fast_stats.replayed_collectives, 1u);
      expect_same_usage(n, b);
      continue;
    }
    EXPECT_EQ(b.fast_stats.fast_collectives, 2u);
    ++fast_runs;
    expect_same_usage(n, b);
    bool shared = false;
    for (const LinkUsage& u : b.fast_usage) shared = shared || u.peak_flows > 1;
    shared_runs += shared;
  }
  std::printf("  random fabrics: fast path ran in %d of %d, with messages sharing a link in %d\n", fast_runs,
              cases, shared_runs);
  EXPECT_GT(fast_runs, cases / 4);
  EXPECT_GT(shared_runs, 5);
}

}  // namespace
}  // namespace ddlsim
