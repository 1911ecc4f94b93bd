// Per-link statistics (bytes carried, busy time, peak concurrent flows) against closed forms, on the flow
// network alone and through the Engine (transfers, and a collective on the fast path and the flow model).
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <vector>

#include "sim/net/flow_network.hpp"
#include "sim/train/collective.hpp"
#include "sim/train/engine.hpp"

namespace ddlsim {
namespace {

// Pops every completion, as the Engine does, and returns the time of the last one.
Time drain(FlowNetwork& net) {
  Time last;
  while (net.next_completion() != Time::max()) {
    last = net.next_completion();
    net.pop_completion();
    net.resolve(last);
  }
  return last;
}

TEST(EngineLinkUsage, TwoFlowsOnOneLinkCarryTwiceTheBytesBusyTwoBOverCPeakTwo) {
  const double B = 1e6, C = 1e9;
  FlowNetwork net;
  LinkId l = net.add_link(Rate{C}, Time());
  LinkId idle = net.add_link(Rate{C}, Time());
  net.add_flow(std::vector<LinkId>{l}, B, 0, 1, Time());
  net.add_flow(std::vector<LinkId>{l}, B, 0, 2, Time());
  net.resolve(Time());
  EXPECT_EQ(drain(net), Time::from_seconds(2 * B / C));
  std::vector<LinkUsage> u = net.link_usage();
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[l].link, l);
  EXPECT_DOUBLE_EQ(u[l].bytes, 2 * B);
  EXPECT_DOUBLE_EQ(u[l].busy_s, 2 * B / C);
  EXPECT_EQ(u[l].peak_flows, 2u);
  EXPECT_EQ(u[idle].bytes, 0);
  EXPECT_EQ(u[idle].busy_s, 0);
  EXPECT_EQ(u[idle].peak_flows, 0u);
}

// Busy time is the union of the flows' intervals: an idle gap between two flows does not count, and
// overlapping flows count once.
TEST(EngineLinkUsage, BusyTimeIsTheUnionOfFlowIntervals) {
  const double B = 1e6, C = 1e9;  // B/C = 1 ms
  FlowNetwork net;
  LinkId a = net.add_link(Rate{C}, Time());
  LinkId b = net.add_link(Rate{C}, Time());
  // On a: a flow over [0, 1 ms], then another over [3 ms, 4 ms]. On b: one flow over [0, 1 ms] and, through
  // both links, one from 0.5 ms: b is shared from 0.5 ms.
  net.add_flow(std::vector<LinkId>{a}, B, 0, 1, Time());
  net.add_flow(std::vector<LinkId>{b}, B, 0, 2, Time());
  net.resolve(Time());
  Time half = Time::from_seconds(0.5 * B / C);
  while (net.next_completion() < half) net.pop_completion();
  net.add_flow(std::vector<LinkId>{b}, B, 0, 3, half);
  net.resolve(half);
  Time end = drain(net);
  // b: flows 2 and 3 share from 0.5 ms: flow 2 has 0.5 MB left at C/2 (1 ms), then flow 3 its last 0.5 MB at
  // C: b busy from 0 to 2 ms.
  EXPECT_EQ(end, Time::from_seconds(2 * B / C));
  Time later = Time::from_seconds(3 * B / C);
  net.add_flow(std::vector<LinkId>{a}, B, 0, 4, later);
  net.resolve(later);
  drain(net);
  std::vector<LinkUsage> u = net.link_usage();
  EXPECT_DOUBLE_EQ(u[a].busy_s, 2 * B / C);
  EXPECT_EQ(u[a].peak_flows, 1u);
  EXPECT_DOUBLE_EQ(u[a].bytes, 2 * B);
  EXPECT_NEAR(u[b].busy_s, 2 * B / C, 1e-12);
  EXPECT_EQ(u[b].peak_flows, 2u);
}

struct Star {
  Topology topo;
  std::vector<VertexId> gpus;
};
Star make_star(int p, double rate, Time latency) {
  Star s;
  VertexId sw = s.topo.add_vertex(VertexKind::Switch, -1, "sw");
  for (int i = 0; i < p; ++i) {
    s.gpus.push_back(s.topo.add_vertex(VertexKind::Gpu, i, fmt::format("gpu{}", i)));
    s.topo.connect(s.gpus.back(), sw, LinkSpec{Rate{rate}, latency}, LinkClass::Host);
  }
  return s;
}

TEST(EngineLinkUsage, LinkNamesAreTheirTwoVertices) {
  Star s = make_star(2, 1e9, Time());
  EXPECT_EQ(link_name(s.topo, 0), "gpu0 > sw");
  EXPECT_EQ(link_name(s.topo, 1), "sw > gpu0");
  EXPECT_EQ(link_name(s.topo, 3), "sw > gpu1");
}

// Two transfers of B into one GPU share its downlink (sw > gpu2): 2B, busy 2B/C, two flows at once; each
// uplink carries B alone.
TEST(EngineLinkUsage, EngineTransfersIntoOneGpuShareItsDownlink) {
  const double B = 8e6, C = 25e9;
  Star s = make_star(3, C, Time::us(1));
  TaskGraph g;
  g.add_transfer(s.gpus[0], s.gpus[2], B, 0, 0);
  g.add_transfer(s.gpus[1], s.gpus[2], B, 1, 0);
  g.finalize();
  CommModel comm;
  Engine engine(s.topo, comm, g);
  EXPECT_EQ(engine.run(), Time::us(2) + Time::from_seconds(2 * B / C));
  std::vector<LinkUsage> u = engine.link_usage();
  ASSERT_EQ(u.size(), 6u);
  for (const LinkUsage& l : u) {
    std::string name = link_name(s.topo, l.link);
    if (name == "sw > gpu2") {
      EXPECT_DOUBLE_EQ(l.bytes, 2 * B);
      EXPECT_NEAR(l.busy_s, 2 * B / C, 1e-12);
      EXPECT_EQ(l.peak_flows, 2u);
    } else if (name == "gpu0 > sw" || name == "gpu1 > sw") {
      EXPECT_DOUBLE_EQ(l.bytes, B);
      EXPECT_NEAR(l.busy_s, 2 * B / C, 1e-12);  // the shared downlink holds each flow to C/2
      EXPECT_EQ(l.peak_flows, 1u);
    } else {
      EXPECT_EQ(l.bytes, 0) << name;
      EXPECT_EQ(l.peak_flows, 0u) << name;
    }
  }
}

// A ring allreduce through the Engine, repeated over steps: every link carries 2(p-1)/p n per step whether
// the collectives run by the fast path or message by message.
TEST(EngineLinkUsage, RingStepsCarryTheSameBytesOnBothPaths) {
  const int p = 6, steps = 3;
  const double n = 60e6, C = 25e9;
  Star s = make_star(p, C, Time::us(1));
  TaskGraph g;
  auto plan = std::shared_ptr<const CollectivePlan>(
      make_plan(CollectiveShape{.algorithm = Algorithm::Ring, .ranks = p, .bytes = n}));
  TaskId prev = 0;
  for (int k = 0; k < steps; ++k) {
    CollectiveTask c;
    c.plan = plan;
    c.members = s.gpus;
    c.isolated = true;
    TaskId t = g.add_collective(std::move(c), k);
    if (k > 0) g.depend(prev, t);
    prev = t;
  }
  g.finalize();
  CommModel comm;
  Engine fast(s.topo, comm, g, EngineOptions{true}), flow(s.topo, comm, g, EngineOptions{false});
  EXPECT_EQ(fast.run(), flow.run());
  EXPECT_EQ(fast.stats().fast_collectives, static_cast<uint64_t>(steps));
  std::vector<LinkUsage> uf = fast.link_usage(), us = flow.link_usage();
  double bytes = steps * 2.0 * (p - 1) / p * n;
  for (size_t l = 0; l < uf.size(); ++l) {
    EXPECT_NEAR(uf[l].bytes, bytes, 1e-9 * bytes);
    EXPECT_NEAR(us[l].bytes, bytes, 1e-9 * bytes);
    EXPECT_NEAR(uf[l].busy_s, us[l].busy_s, 1e-15);
    EXPECT_EQ(uf[l].peak_flows, 1u);
    EXPECT_EQ(us[l].peak_flows, 1u);
  }
}

// Whenever the fast path runs a plan, it records what the flow model would: the same bytes and busy time on
// every link, one message at a time (covers its skipped and periodic rounds).
TEST(EngineLinkUsage, FastPathRecordsWhatTheFlowModelDoes) {
  const int p = 8;
  const double n = 24e6, C = 25e9;
  Star s = make_star(p, C, Time::us(1));
  CommModel comm;
  comm.reduce[0].gamma_gpu = 1e-11;
  int fast_runs = 0;
  // The last case puts two ring members on one GPU: their messages to each other stay off the network, so no
  // round is exclusive and the periodic rounds are skipped from checked rounds.
  std::vector<VertexId> doubled = s.gpus;
  doubled[1] = doubled[0];
  for (auto [a, members] : {std::pair{Algorithm::Ring, s.gpus},
                            {Algorithm::HalvingDoubling, s.gpus},
                            {Algorithm::Tree, s.gpus},
                            {Algorithm::DoubleTree, s.gpus},
                            {Algorithm::Broadcast, s.gpus},
                            {Algorithm::ReduceScatter, s.gpus},
                            {Algorithm::AllGather, s.gpus},
                            {Algorithm::Ring, doubled}}) {
    TaskGraph g;
    CollectiveTask c;
    c.plan = make_plan(CollectiveShape{.algorithm = a, .ranks = p, .bytes = n});
    c.members = members;
    c.isolated = true;
    g.add_collective(std::move(c), 0);
    g.finalize();
    Engine fast(s.topo, comm, g, EngineOptions{true}), flow(s.topo, comm, g, EngineOptions{false});
    EXPECT_EQ(fast.run(), flow.run()) << algorithm_name(a);
    if (fast.stats().fast_collectives == 0) continue;
    ++fast_runs;
    std::vector<LinkUsage> uf = fast.link_usage(), us = flow.link_usage();
    for (size_t l = 0; l < uf.size(); ++l) {
      EXPECT_NEAR(uf[l].bytes, us[l].bytes, 1e-9 * n) << algorithm_name(a) << " " << link_name(s.topo, l);
      EXPECT_NEAR(uf[l].busy_s, us[l].busy_s, 1e-15) << algorithm_name(a) << " " << link_name(s.topo, l);
      EXPECT_EQ(uf[l].peak_flows, us[l].peak_flows) << algorithm_name(a) << " " << link_name(s.topo, l);
    }
  }
  EXPECT_GE(fast_runs, 4);
}

}  // namespace
}  // namespace ddlsim
