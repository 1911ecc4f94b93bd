// FlowNetwork used directly: the event loop lives in the test (t = next_completion(); pop every flow that
// ends at t; resolve(t)). Hand-computed cases first, then properties on seeded random networks: capacity, the
// max-min certificate, agreement with a from-scratch water-filling reference, scale invariance and
// determinism.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "sim/net/flow_network.hpp"

namespace ddlsim {
namespace {

constexpr double kGB = 1e9;
constexpr double kRel = 1e-9;

struct Completion {
  uint64_t tag;
  Time at;
  bool operator==(const Completion&) const = default;
};

// A flow to start at `start` (flows sharing a start instant are added together, then resolved once).
struct FlowSpec {
  std::vector<LinkId> route;
  double bytes = 0;
  double cap = 0;  // <= 0: unbounded
  Time start;
};

// Runs every flow to completion; `check` (if any) is called after every resolve with the network state.
template <class Check>
std::vector<Completion> simulate(FlowNetwork& net, const std::vector<FlowSpec>& flows, Check&& check) {
  std::vector<size_t> order(flows.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return flows[a].start < flows[b].start; });
  std::vector<Completion> out;
  size_t next = 0;
  while (next < order.size() || !net.empty()) {
    Time t_arrival = next < order.size() ? flows[order[next]].start : Time::max();
    Time t_done = net.next_completion();
    Time t = std::min(t_arrival, t_done);
    while (!net.empty() && net.next_completion() == t) out.push_back({net.pop_completion(), t});
    while (next < order.size() && flows[order[next]].start == t) {
      const FlowSpec& f = flows[order[next]];
      net.add_flow(f.route, f.bytes, f.cap, order[next], t);
      ++next;
    }
    net.resolve(t);
    check(net);
  }
  return out;
}

std::vector<Completion> simulate(FlowNetwork& net, const std::vector<FlowSpec>& flows) {
  return simulate(net, flows, [](const FlowNetwork&) {});
}

Time at(const std::vector<Completion>& done, uint64_t tag) {
  for (const Completion& c : done)
    if (c.tag == tag) return c.at;
  ADD_FAILURE() << "flow " << tag << " never completed";
  return Time::max();
}

// Completion time to 1 ps absolute (one rounding per rate change) or 1e-9 relative.
void expect_time(Time got, double want_s) {
  double tol = std::max(1e-12 * 2, want_s * kRel);
  EXPECT_NEAR(got.seconds(), want_s, tol) << "got " << got.picoseconds() << " ps";
}

void expect_rate(double got, double want) {
  EXPECT_NEAR(got, want, want * kRel);
}

// ---------------------------------------------------------------------------------------------------------------
// Hand-computed cases

TEST(FlowNetworkBasics, OneFlowTakesNOverB) {
  // t = n / B = 1 GB / 10 GB/s = 0.1 s
  FlowNetwork net;
  LinkId l = net.add_link(Rate{10 * kGB}, Time::us(1));
  auto done = simulate(net, {{{l}, 1 * kGB, 0, Time()}});
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].at, Time::from_seconds(0.1));
  EXPECT_TRUE(net.empty());
}

TEST(FlowNetworkBasics, LatencyIsNotPaidByTheNetwork) {
  // The network only drains; route latency is the caller's: route_latency = sum of link latencies.
  FlowNetwork net;
  LinkId a = net.add_link(Rate{10 * kGB}, Time::us(1));
  LinkId b = net.add_link(Rate{5 * kGB}, Time::ns(250));
  std::vector<LinkId> route{a, b};
  EXPECT_EQ(net.route_latency(route), Time::ns(1250));
  EXPECT_EQ(net.route_capacity(route).value, 5 * kGB);
  auto done = simulate(net, {{route, 1 * kGB, 0, Time()}});
  expect_time(done[0].at, 0.2);  // n / min(B) = 1 / 5
}

TEST(FlowNetworkBasics, KEqualFlowsOnOneLinkFinishTogetherAtKNOverB) {
  // k flows of n bytes on one link of B: each gets B/k, so all end at k·n/B.
  for (int k : {1, 2, 3, 4, 7, 16}) {
    FlowNetwork net;
    LinkId l = net.add_link(Rate{25 * kGB}, Time());
    std::vector<FlowSpec> flows(k, FlowSpec{{l}, 100e6, 0, Time()});
    auto done = simulate(net, flows, [&](const FlowNetwork& n) {
      for (FlowId f : n.active_flow_ids()) expect_rate(n.rate(f), 25 * kGB / k);
    });
    ASSERT_EQ(done.size(), static_cast<size_t>(k));
    for (const Completion& c : done) expect_time(c.at, k * 100e6 / (25 * kGB));
    // Simultaneous completions pop in creation order.
    for (int i = 0; i < k; ++i) EXPECT_EQ(done[i].tag, static_cast<uint64_t>(i));
  }
}

TEST(FlowNetworkBasics, MaxMinIsNotProportional) {
  // A crosses L1 (10) and L2 (100); B crosses L2 only. Max-min: A is held to 10 by L1, B takes the rest of
  // L2: 90 (a proportional split of L2 would give 50/50).
  FlowNetwork net;
  LinkId l1 = net.add_link(Rate{10 * kGB}, Time());
  LinkId l2 = net.add_link(Rate{100 * kGB}, Time());
  std::vector<LinkId> ra{l1, l2}, rb{l2};
  FlowId a = net.add_flow(ra, 1 * kGB, 0, 0, Time());
  FlowId b = net.add_flow(rb, 1 * kGB, 0, 1, Time());
  net.resolve(Time());
  expect_rate(net.rate(a), 10 * kGB);
  expect_rate(net.rate(b), 90 * kGB);
}

TEST(FlowNetworkBasics, ThreeLevelWaterFilling) {
  // L1 (10) carries A; L2 (100) carries A, B, C; L3 (30) carries C, D.
  // Fill: L1 fixes A at 10. L3 share 15 vs L2 share (100-10)/2 = 45: L3 fixes C, D at 15. B gets 100-10-15
  // = 75.
  FlowNetwork net;
  LinkId l1 = net.add_link(Rate{10 * kGB}, Time());
  LinkId l2 = net.add_link(Rate{100 * kGB}, Time());
  LinkId l3 = net.add_link(Rate{30 * kGB}, Time());
  std::vector<LinkId> ra{l1, l2}, rb{l2}, rc{l2, l3}, rd{l3};
  FlowId a = net.add_flow(ra, kGB, 0, 0, Time());
  FlowId b = net.add_flow(rb, kGB, 0, 1, Time());
  FlowId c = net.add_flow(rc, kGB, 0, 2, Time());
  FlowId d = net.add_flow(rd, kGB, 0, 3, Time());
  net.resolve(Time());
  expect_rate(net.rate(a), 10 * kGB);
  expect_rate(net.rate(b), 75 * kGB);
  expect_rate(net.rate(c), 15 * kGB);
  expect_rate(net.rate(d), 15 * kGB);
}

TEST(FlowNetworkBasics, PerFlowCap) {
  // One link of 10; flow A capped at 3, flow B uncapped: A = 3, B = 10 - 3 = 7.
  FlowNetwork net;
  LinkId l = net.add_link(Rate{10 * kGB}, Time());
  std::vector<LinkId> r{l};
  FlowId a = net.add_flow(r, kGB, 3 * kGB, 0, Time());
  FlowId b = net.add_flow(r, kGB, 0, 1, Time());
  net.resolve(Time());
  expect_rate(net.rate(a), 3 * kGB);
  expect_rate(net.rate(b), 7 * kGB);
  // A cap above the fair share does not bind: caps 8 and 9 on 10 → 5 and 5.
  FlowNetwork net2;
  LinkId l2 = net2.add_link(Rate{10 * kGB}, Time());
  std::vector<LinkId> r2{l2};
  FlowId c = net2.add_flow(r2, kGB, 8 * kGB, 0, Time());
  FlowId d = net2.add_flow(r2, kGB, 9 * kGB, 1, Time());
  net2.resolve(Time());
  expect_rate(net2.rate(c), 5 * kGB);
  expect_rate(net2.rate(d), 5 * kGB);
  // A lone capped flow: n / cap = 1 GB / 2 GB/s = 0.5 s.
  FlowNetwork net3;
  LinkId l3 = net3.add_link(Rate{10 * kGB}, Time());
  auto done = simulate(net3, {{{l3}, kGB, 2 * kGB, Time()}});
  expect_time(done[0].at, 0.5);
}

TEST(FlowNetworkBasics, FinishingFlowReleasesBandwidth) {
  // One link B = 10 GB/s, flows of 1, 3 and 6 GB started together.
  //   [0, t1): three flows at B/3. Flow 0 ends at t1 = 3·1/B = 0.3 s.
  //   [t1, t2): two flows at B/2; flow 1 has 3 - 1 = 2 GB left: t2 = t1 + 2·2/B = 0.7 s.
  //   [t2, t3): flow 2 alone; it has 6 - 1 - 2 = 3 GB left: t3 = t2 + 3/B = 1.0 s (= total bytes / B).
  FlowNetwork net;
  LinkId l = net.add_link(Rate{10 * kGB}, Time());
  auto done =
      simulate(net, {{{l}, 1 * kGB, 0, Time()}, {{l}, 3 * kGB, 0, Time()}, {{l}, 6 * kGB, 0, Time()}});
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[0].tag, 0u);
  EXPECT_EQ(done[1].tag, 1u);
  EXPECT_EQ(done[2].tag, 2u);
  expect_time(done[0].at, 0.3);
  expect_time(done[1].at, 0.7);
  expect_time(done[2].at, 1.0);
}

TEST(FlowNetworkBasics, ReleaseAcrossLinks) {
  // A over L1 (10) + L2 (100), B and C over L2. A = 10, B = C = 45.
  // B (4.5 GB) and C (9 GB): B ends at 4.5/45 = 0.1 s; then C gets 90, with 9 - 4.5 = 4.5 GB left: ends at
  // 0.1 + 4.5/90 = 0.15 s. A (2 GB) stays at 10 throughout (L1 is its bottleneck): 0.2 s.
  FlowNetwork net;
  LinkId l1 = net.add_link(Rate{10 * kGB}, Time());
  LinkId l2 = net.add_link(Rate{100 * kGB}, Time());
  auto done = simulate(
      net, {{{l1, l2}, 2 * kGB, 0, Time()}, {{l2}, 4.5 * kGB, 0, Time()}, {{l2}, 9 * kGB, 0, Time()}});
  expect_time(at(done, 1), 0.1);
  expect_time(at(done, 2), 0.15);
  expect_time(at(done, 0), 0.2);
}

TEST(FlowNetworkBasics, LateArrivalSharesTheRest) {
  // B = 10 GB/s. A (2 GB) starts at 0, alone: by 0.1 s it has sent 1 GB. B (0.5 GB) starts at 0.1 s; both at
  // 5: B ends at 0.1 + 0.5/5 = 0.2 s, when A has 1 - 0.5 = 0.5 GB left, alone again at 10: ends at 0.25 s.
  FlowNetwork net;
  LinkId l = net.add_link(Rate{10 * kGB}, Time());
  auto done = simulate(net, {{{l}, 2 * kGB, 0, Time()}, {{l}, 0.5 * kGB, 0, Time::from_seconds(0.1)}});
  expect_time(at(done, 1), 0.2);
  expect_time(at(done, 0), 0.25);
}

TEST(FlowNetworkBasics, MessagesOnOneRouteDrainAsOneFlow) {
  // Route R = {L1 (10 GB/s), L2 (4 GB/s)} carries A (1 GB from 0) and B (0.5 GB from 0.1 s); C (3 GB from 0)
  // crosses L1 alone.
  //   [0, 0.1): A at 4 (L2), C at 10 - 4 = 6. A has 0.6 GB left, C 2.4.
  //   [0.1, 0.35): A and B at 4/2 = 2 each (one flow of two messages on L2), C at 10 - 4 = 6. B ends at
  //   0.1 + 0.5/2 = 0.35 s, when A has 0.6 - 0.5 = 0.1 GB left.
  //   [0.35, 0.375): A alone on L2 at 4: ends at 0.35 + 0.1/4 = 0.375 s. C still at 6: 2.4 - 6·0.275 = 0.75
  //   GB left, then alone at 10: ends at 0.375 + 0.075 = 0.45 s.
  FlowNetwork net;
  LinkId l1 = net.add_link(Rate{10 * kGB}, Time());
  LinkId l2 = net.add_link(Rate{4 * kGB}, Time());
  auto done = simulate(net, {{{l1, l2}, 1 * kGB, 0, Time()},
                             {{l1, l2}, 0.5 * kGB, 0, Time::from_seconds(0.1)},
                             {{l1}, 3 * kGB, 0, Time()}});
  expect_time(at(done, 1), 0.35);
  expect_time(at(done, 0), 0.375);
  expect_time(at(done, 2), 0.45);
  EXPECT_EQ(net.messages_bundled(), 1u);  // B joined A's flow
}

TEST(FlowNetworkBasics, EachMessageOfAFlowKeepsItsOwnBytesAndTag) {
  // One link B = 10 GB/s; three messages on it: A (3 GB) and B (1 GB) at 0, C (2 GB) at 0.1 s.
  //   [0, 0.1): A and B at 5 each: 0.5 GB each drained (A 2.5 left, B 0.5).
  //   [0.1, 0.25): three at 10/3: B ends at 0.1 + 0.5·3/10 = 0.25 s (A 2.0 left, C 1.5 left).
  //   [0.25, 0.55): two at 5: C ends at 0.25 + 1.5/5 = 0.55 s (A 0.5 left), then A alone at 10: 0.6 s.
  // remaining() and rate() answer per message; the tags come back in completion order.
  FlowNetwork net;
  LinkId l = net.add_link(Rate{10 * kGB}, Time());
  FlowId a = net.add_flow(std::vector<LinkId>{l}, 3 * kGB, 0, 10, Time());
  FlowId b = net.add_flow(std::vector<LinkId>{l}, 1 * kGB, 0, 11, Time());
  net.resolve(Time());
  expect_rate(net.rate(a), 5 * kGB);
  expect_rate(net.rate(b), 5 * kGB);
  const Time t1 = Time::from_seconds(0.1);
  EXPECT_NEAR(net.remaining(a, t1), 2.5 * kGB, 1e-3 * kGB);
  EXPECT_NEAR(net.remaining(b, t1), 0.5 * kGB, 1e-3 * kGB);
  FlowId c = net.add_flow(std::vector<LinkId>{l}, 2 * kGB, 0, 12, t1);
  net.resolve(t1);
  expect_rate(net.rate(c), 10 * kGB / 3);
  EXPECT_NEAR(net.remaining(c, t1), 2 * kGB, 1e-3 * kGB);
  EXPECT_EQ(net.messages_bundled(), 2u);
  std::vector<uint64_t> tags;
  std::vector<double> times;
  while (!net.empty()) {
    Time t = net.next_completion();
    tags.push_back(net.pop_completion());
    times.push_back(t.seconds());
    net.resolve(t);
  }
  EXPECT_EQ(tags, (std::vector<uint64_t>{11, 12, 10}));
  ASSERT_EQ(times.size(), 3u);
  expect_time(Time::from_seconds(times[0]), 0.25);
  expect_time(Time::from_seconds(times[1]), 0.55);
  expect_time(Time::from_seconds(times[2]), 0.6);
}

TEST(FlowNetworkBasics, AFlowOfTwoMessagesInAnIncast) {
  // Server link S = 10 GB/s; sender links of 100 GB/s. Sender 1 sends 1 GB and 2 GB, sender 2 sends 4 GB, all
  // at 0: three messages on S at 10/3. The 1 GB one ends at 0.3 s; the other two at 5: sender 1's second has
  // 2 - 1 = 1 GB left, ends at 0.3 + 1/5 = 0.5 s; sender 2's has 4 - 1 - 1 = 2 GB left, alone at 10 from
  // 0.5 s: ends at 0.7 s.
  FlowNetwork net;
  LinkId srv = net.add_link(Rate{10 * kGB}, Time());
  LinkId x1 = net.add_link(Rate{100 * kGB}, Time());
  LinkId x2 = net.add_link(Rate{100 * kGB}, Time());
  auto done = simulate(
      net,
      {{{x1, srv}, 1 * kGB, 0, Time()}, {{x1, srv}, 2 * kGB, 0, Time()}, {{x2, srv}, 4 * kGB, 0, Time()}});
  expect_time(at(done, 0), 0.3);
  expect_time(at(done, 1), 0.5);
  expect_time(at(done, 2), 0.7);
  EXPECT_EQ(net.messages_bundled(), 1u);
}

TEST(FlowNetworkBasics, DisjointComponentsDoNotInteract) {
  // Two links, one flow each: each finishes at n / B of its own link, unaffected by the other's arrivals.
  FlowNetwork net;
  LinkId a = net.add_link(Rate{10 * kGB}, Time());
  LinkId b = net.add_link(Rate{20 * kGB}, Time());
  auto done = simulate(
      net,
      {{{a}, 1 * kGB, 0, Time()}, {{b}, 1 * kGB, 0, Time()}, {{b}, 1 * kGB, 0, Time::from_seconds(0.01)}});
  expect_time(at(done, 0), 0.1);
  // Link b: flow 1 alone for 0.01 s (0.2 GB), then both at 10: flow 1 has 0.8 GB → 0.01 + 0.08 = 0.09 s;
  // flow 2 has 1 - 0.8 = 0.2 GB left at 0.09 s, alone at 20 → 0.1 s.
  expect_time(at(done, 1), 0.09);
  expect_time(at(done, 2), 0.1);
}

TEST(FlowNetworkBasics, ZeroByteFlowCompletesImmediately) {
  FlowNetwork net;
  LinkId l = net.add_link(Rate{10 * kGB}, Time());
  auto done = simulate(net, {{{l}, 0, 0, Time::us(5)}});
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].at, Time::us(5));
}

TEST(FlowNetworkBasics, EmptyNetwork) {
  FlowNetwork net;
  EXPECT_TRUE(net.empty());
  EXPECT_EQ(net.next_completion(), Time::max());
  net.resolve(Time());
  EXPECT_EQ(net.active_flows(), 0u);
}

TEST(FlowNetworkBasics, AHeldFlowAboveTheNewShareMovesIntoTheClass) {
  // L (10 GB/s) carries A, B and G; M (4 GB/s) carries G and H. Water-filling: M's share 4/2 = 2 is below
  // L's 10/3, so G = H = 2 (certified on M) and A = B = (10 - 2)/2 = 4 (certified on L).
  // C, D and E join L at 0.1 s. Held at 2, G would leave (10 - 2)/5 = 1.6 to the others, below G: not
  // max-min. Filling again, L's 10/6 is now below M's 2, so A..E and G all take 10/6, and H takes what G
  // gave back on M: 4 - 10/6 = 7/3. One class step on L moves G in with the joiners, and one on M re-shares
  // H: no region solve.
  FlowNetwork net;
  LinkId l = net.add_link(Rate{10 * kGB}, Time());
  LinkId m = net.add_link(Rate{4 * kGB}, Time());
  std::vector<LinkId> on_l{l}, on_both{l, m}, on_m{m};
  FlowId a = net.add_flow(on_l, 10 * kGB, 0, 0, Time());
  FlowId b = net.add_flow(on_l, 10 * kGB, 0, 1, Time());
  FlowId g = net.add_flow(on_both, 10 * kGB, 0, 2, Time());
  FlowId h = net.add_flow(on_m, 10 * kGB, 0, 3, Time());
  net.resolve(Time());
  expect_rate(net.rate(g), 2 * kGB);
  expect_rate(net.rate(h), 2 * kGB);
  expect_rate(net.rate(a), 4 * kGB);
  expect_rate(net.rate(b), 4 * kGB);
  const Time t = Time::from_seconds(0.1);
  std::vector<FlowId> joined;
  for (uint64_t tag = 4; tag < 7; ++tag) joined.push_back(net.add_flow(on_l, 10 * kGB, 0, tag, t));
  const uint64_t solves = net.region_solves(), steps = net.class_updates();
  net.resolve(t);
  for (FlowId f : {a, b, g, joined[0], joined[1], joined[2]}) expect_rate(net.rate(f), 10 * kGB / 6);
  expect_rate(net.rate(h), 4 * kGB - 10 * kGB / 6);
  EXPECT_EQ(net.region_solves(), solves);
  EXPECT_EQ(net.class_updates(), steps + 2);
}

// ---------------------------------------------------------------------------------------------------------------
// Properties on random networks

struct RandomCase {
  std::vector<double> capacity;
  std::vector<FlowSpec> flows;
};

// Up to `max_links` links and `max_flows` flows (at least `min_flows`).
RandomCase random_case(uint64_t seed, bool staggered, size_t max_links = 24, size_t min_flows = 1,
                       size_t max_flows = 60) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  auto pick = [&](size_t lo, size_t hi) { return std::uniform_int_distribution<size_t>(lo, hi)(rng); };
  RandomCase c;
  size_t links = pick(1, max_links);
  for (size_t i = 0; i < links; ++i) c.capacity.push_back(std::pow(10.0, uniform(9, 11)));  // 1..100 GB/s
  size_t flows = pick(min_flows, max_flows);
  for (size_t i = 0; i < flows; ++i) {
    FlowSpec f;
    size_t hops = std::min(links, pick(1, 4));
    std::vector<LinkId> all(links);
    for (size_t l = 0; l < links; ++l) all[l] = static_cast<LinkId>(l);
    std::shuffle(all.begin(), all.end(), rng);
    f.route.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(hops));
    f.bytes = std::pow(10.0, uniform(5, 9));  // 100 kB .. 1 GB
    f.cap = pick(0, 9) < 3 ? std::pow(10.0, uniform(8.5, 10.5)) : 0;
    f.start = staggered && pick(0, 1) ? Time::from_seconds(uniform(0, 0.05)) : Time();
    c.flows.push_back(f);
  }
  return c;
}

FlowNetwork build(const RandomCase& c, double scale) {
  FlowNetwork net;
  for (double cap : c.capacity) net.add_link(Rate{cap * scale}, Time());
  return net;
}

// Max-min fair rates from scratch (textbook water-filling, no incremental state): the reference.
std::vector<double> reference_rates(const std::vector<double>& capacity,
                                    const std::vector<std::vector<LinkId>>& routes,
                                    const std::vector<double>& caps) {
  size_t n = routes.size();
  std::vector<double> rate(n, 0), residual = capacity;
  std::vector<bool> fixed(n, false);
  size_t left = n;
  while (left > 0) {
    std::vector<int> users(capacity.size(), 0);
    for (size_t f = 0; f < n; ++f)
      if (!fixed[f])
        for (LinkId l : routes[f]) ++users[l];
    double share = std::numeric_limits<double>::infinity();
    for (size_t l = 0; l < capacity.size(); ++l)
      if (users[l] > 0) share = std::min(share, residual[l] / users[l]);
    for (size_t f = 0; f < n; ++f)
      if (!fixed[f]) share = std::min(share, caps[f]);
    std::vector<size_t> now;
    for (size_t f = 0; f < n; ++f) {
      if (fixed[f]) continue;
      bool hit = caps[f] <= share * (1 + 1e-12);
      for (LinkId l : routes[f]) hit = hit || residual[l] / users[l] <= share * (1 + 1e-12);
      if (hit) now.push_back(f);
    }
    for (size_t f : now) {
      fixed[f] = true;
      rate[f] = share;
      for (LinkId l : routes[f]) residual[l] -= share;
    }
    left -= now.size();
  }
  return rate;
}

// Checks (a) capacity, (b) the max-min certificate and (e) agreement with the reference on the active flows.
void check_state(const FlowNetwork& net, const std::vector<double>& capacity,
                 const std::vector<double>& cap_of_tag, const std::map<FlowId, uint64_t>& tag_of,
                 uint64_t seed) {
  std::vector<FlowId> ids = net.active_flow_ids();
  std::vector<double> load(capacity.size(), 0), top(capacity.size(), 0);
  for (FlowId f : ids)
    for (LinkId l : net.route(f)) {
      load[l] += net.rate(f);
      top[l] = std::max(top[l], net.rate(f));
    }
  for (size_t l = 0; l < capacity.size(); ++l)
    ASSERT_LE(load[l], capacity[l] * (1 + kRel)) << "seed " << seed << ": link " << l << " over capacity";
  std::vector<std::vector<LinkId>> routes;
  std::vector<double> caps;
  for (FlowId f : ids) {
    double cap = cap_of_tag[tag_of.at(f)];
    double r = net.rate(f);
    ASSERT_GT(r, 0) << "seed " << seed;
    ASSERT_LE(r, cap * (1 + kRel)) << "seed " << seed << ": flow over its cap";
    bool certified = r >= cap * (1 - kRel);
    for (LinkId l : net.route(f))
      certified = certified || (load[l] >= capacity[l] * (1 - kRel) && r >= top[l] * (1 - kRel));
    ASSERT_TRUE(certified) << "seed " << seed << ": flow " << f << " at " << r
                           << " is neither capped nor the largest on a saturated link";
    std::span<const LinkId> route = net.route(f);
    routes.emplace_back(route.begin(), route.end());
    caps.push_back(cap);
  }
  std::vector<double> want = reference_rates(capacity, routes, caps);
  for (size_t i = 0; i < ids.size(); ++i)
    ASSERT_NEAR(net.rate(ids[i]), want[i], want[i] * 1e-9) << "seed " << seed << ": flow " << ids[i];
}

// Runs a random case with the state checks after every resolve; returns the completion sequence.
std::vector<Completion> run_checked(const RandomCase& c, double scale, uint64_t seed,
                                    FlowNetwork* out_net = nullptr) {
  FlowNetwork local = build(c, scale);
  FlowNetwork& net = out_net ? *out_net : local;
  std::vector<double> capacity, cap_of_tag;
  for (double v : c.capacity) capacity.push_back(v * scale);
  for (const FlowSpec& f : c.flows)
    cap_of_tag.push_back(f.cap > 0 ? f.cap * scale : std::numeric_limits<double>::infinity());
  std::vector<FlowSpec> flows = c.flows;
  for (FlowSpec& f : flows) f.cap *= scale;
  // Flow ids are recycled; track which tag each active id carries by watching add_flow through a wrapper
  // loop.
  std::map<FlowId, uint64_t> tag_of;
  std::vector<size_t> order(flows.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return flows[a].start < flows[b].start; });
  std::vector<Completion> out;
  size_t next = 0;
  while (next < order.size() || !net.empty()) {
    Time t = std::min(next < order.size() ? flows[order[next]].start : Time::max(), net.next_completion());
    while (!net.empty() && net.next_completion() == t) out.push_back({net.pop_completion(), t});
    while (next < order.size() && flows[order[next]].start == t) {
      const FlowSpec& f = flows[order[next]];
      tag_of[net.add_flow(f.route, f.bytes, f.cap, order[next], t)] = order[next];
      ++next;
    }
    net.resolve(t);
    check_state(net, capacity, cap_of_tag, tag_of, seed);
    if (::testing::Test::HasFatalFailure()) return out;
  }
  return out;
}

// Completion times of a fluid simulation in doubles with the reference solver (no picosecond rounding).
// `curve` (when given) makes links 0..incast_links-1 incast links: their capacity is the line rate times the
// curve's goodput for the distinct first links of the flows on them.
std::vector<double> effective_capacity(const std::vector<double>& line,
                                       const std::vector<std::vector<LinkId>>& routes,
                                       const IncastCurve* curve, size_t incast_links) {
  std::vector<double> capacity = line;
  for (size_t l = 0; curve && l < incast_links; ++l) {
    std::vector<LinkId> senders;
    for (const auto& r : routes)
      if (std::find(r.begin(), r.end(), static_cast<LinkId>(l)) != r.end()) senders.push_back(r.front());
    std::sort(senders.begin(), senders.end());
    size_t n = static_cast<size_t>(std::unique(senders.begin(), senders.end()) - senders.begin());
    capacity[l] = line[l] * curve->goodput(static_cast<double>(std::max<size_t>(n, 1)));
  }
  return capacity;
}

std::vector<double> reference_finish(const RandomCase& c, const IncastCurve* curve = nullptr,
                                     size_t incast_links = 0) {
  size_t n = c.flows.size();
  std::vector<double> finish(n, -1), remaining(n);
  std::vector<bool> started(n, false);
  for (size_t i = 0; i < n; ++i) remaining[i] = c.flows[i].bytes;
  double now = 0;
  size_t done = 0;
  while (done < n) {
    for (size_t i = 0; i < n; ++i)
      if (!started[i] && c.flows[i].start.seconds() <= now) started[i] = true;
    std::vector<size_t> active;
    std::vector<std::vector<LinkId>> routes;
    std::vector<double> caps;
    for (size_t i = 0; i < n; ++i)
      if (started[i] && finish[i] < 0) {
        active.push_back(i);
        routes.push_back(c.flows[i].route);
        caps.push_back(c.flows[i].cap > 0 ? c.flows[i].cap : std::numeric_limits<double>::infinity());
      }
    std::vector<double> rate =
        reference_rates(effective_capacity(c.capacity, routes, curve, incast_links), routes, caps);
    double step = std::numeric_limits<double>::infinity();
    for (size_t k = 0; k < active.size(); ++k) step = std::min(step, remaining[active[k]] / rate[k]);
    for (size_t i = 0; i < n; ++i)
      if (!started[i]) step = std::min(step, c.flows[i].start.seconds() - now);
    now += step;
    for (size_t k = 0; k < active.size(); ++k) {
      size_t i = active[k];
      remaining[i] -= rate[k] * step;
      if (remaining[i] <= c.flows[i].bytes * 1e-12) {
        finish[i] = now;
        ++done;
      }
    }
  }
  return finish;
}

// The network's completion times against reference_finish: to 1e-6 relative (picosecond rounding at every
// rate change), 1 ns absolute.
void expect_fluid_reference_finish(const RandomCase& c, uint64_t seed) {
  FlowNetwork net = build(c, 1.0);
  auto done = simulate(net, c.flows);
  std::vector<double> want = reference_finish(c);
  ASSERT_EQ(done.size(), c.flows.size());
  for (const Completion& x : done)
    ASSERT_NEAR(x.at.seconds(), want[x.tag], std::max(want[x.tag] * 1e-6, 1e-9))
        << "seed " << seed << " flow " << x.tag;
}

constexpr uint64_t kCases = 200;

TEST(FlowNetworkProperties, CapacityAndMaxMinCertificate) {
  for (uint64_t seed = 1; seed <= kCases; ++seed) {
    RandomCase c = random_case(seed, false);
    run_checked(c, 1.0, seed);
    if (HasFatalFailure()) return;
  }
}

TEST(FlowNetworkProperties, CertificateHoldsWithStaggeredArrivals) {
  for (uint64_t seed = 1001; seed <= 1000 + kCases; ++seed) {
    RandomCase c = random_case(seed, true);
    run_checked(c, 1.0, seed);
    if (HasFatalFailure()) return;
  }
}

TEST(FlowNetworkProperties, IncrementalRegionsAgreeOnLargeComponents) {
  // resolve() solves a region (new flows, flows on links a flow left) with the others held, grows it by every
  // flow whose certificate fails, and after a few rounds takes the whole component. 200-400 flows on at most
  // 64 links (half of the cases starting all at once) make components of hundreds of flows where all three
  // paths run; the checks after every resolve (capacity, certificate, reference rates to 1e-9) must hold.
  uint64_t growths = 0, fallbacks = 0;
  for (uint64_t seed = 3001; seed <= 3020; ++seed) {
    RandomCase c = random_case(seed, seed % 2 == 0, 64, 200, 400);
    FlowNetwork net = build(c, 1.0);
    run_checked(c, 1.0, seed, &net);
    if (HasFatalFailure()) return;
    growths += net.region_growths();
    fallbacks += net.component_fallbacks();
  }
  EXPECT_GT(growths, 100u);  // the paths were exercised, not just the first solve
  EXPECT_GT(fallbacks, 0u);
}

TEST(FlowNetworkProperties, ScalingCapacitiesScalesRates) {
  // Max-min is homogeneous of degree 1: capacities and caps × c ⇒ every rate × c (c = 3.7).
  constexpr double kScale = 3.7;
  for (uint64_t seed = 1; seed <= kCases; ++seed) {
    RandomCase c = random_case(seed, false);
    FlowNetwork a = build(c, 1.0), b = build(c, kScale);
    std::vector<FlowId> ia, ib;
    for (size_t i = 0; i < c.flows.size(); ++i) {
      const FlowSpec& f = c.flows[i];
      ia.push_back(a.add_flow(f.route, f.bytes, f.cap, i, Time()));
      ib.push_back(b.add_flow(f.route, f.bytes, f.cap * kScale, i, Time()));
    }
    a.resolve(Time());
    b.resolve(Time());
    for (size_t i = 0; i < c.flows.size(); ++i)
      ASSERT_NEAR(b.rate(ib[i]), kScale * a.rate(ia[i]), kScale * a.rate(ia[i]) * kRel) << "seed " << seed;
  }
}

TEST(FlowNetworkProperties, ScalingCapacitiesDividesCompletionTimes) {
  // Same bytes, c× the bandwidth: every flow starting at 0 finishes at t / c (to picosecond rounding).
  constexpr double kScale = 3.7;
  for (uint64_t seed = 1; seed <= kCases; ++seed) {
    RandomCase c = random_case(seed, false);
    std::vector<FlowSpec> scaled = c.flows;
    for (FlowSpec& f : scaled) f.cap *= kScale;
    FlowNetwork a = build(c, 1.0), b = build(c, kScale);
    auto da = simulate(a, c.flows), db = simulate(b, scaled);
    ASSERT_EQ(da.size(), db.size());
    for (const Completion& x : da) {
      double want = x.at.seconds() / kScale;
      ASSERT_NEAR(at(db, x.tag).seconds(), want, std::max(want * 1e-6, 1e-10)) << "seed " << seed;
    }
  }
}

TEST(FlowNetworkProperties, CompletionTimesMatchAFluidReference) {
  // Incremental re-solving (only the touched component) must give the same times as re-solving everything in
  // doubles at every event: to 1e-6 relative (picosecond rounding at every rate change).
  for (uint64_t seed = 2001; seed <= 2000 + kCases; ++seed) {
    RandomCase c = random_case(seed, true);
    expect_fluid_reference_finish(c, seed);
    if (HasFatalFailure()) return;
  }
}

TEST(FlowNetworkProperties, SameSeedSameCompletionSequence) {
  for (uint64_t seed = 1; seed <= kCases; ++seed) {
    RandomCase c1 = random_case(seed, true), c2 = random_case(seed, true);
    FlowNetwork a = build(c1, 1.0), b = build(c2, 1.0);
    auto da = simulate(a, c1.flows), db = simulate(b, c2.flows);
    ASSERT_EQ(da.size(), c1.flows.size());
    ASSERT_TRUE(da == db) << "seed " << seed;
  }
}

// Incast: `workers` NICs push to `servers` server links (optionally through one of two core links), in waves
// that start together or staggered, equal-sized or not, some capped, with some NICs slow enough to be the
// bottleneck, plus random cross traffic over all links. Exercises the per-link processor-sharing classes:
// joining, leaving, forming, and breaking up when a NIC or a core link takes over.
RandomCase incast_case(uint64_t seed, size_t workers, size_t servers, size_t waves) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  auto pick = [&](size_t lo, size_t hi) { return std::uniform_int_distribution<size_t>(lo, hi)(rng); };
  RandomCase c;
  for (size_t s = 0; s < servers; ++s) c.capacity.push_back(25 * kGB);  // server links 0..servers-1
  for (size_t w = 0; w < workers; ++w)                                  // NICs, a few slow
    c.capacity.push_back(pick(0, 5) == 0 ? uniform(0.05, 1) * kGB : uniform(10, 25) * kGB);
  size_t core = c.capacity.size();
  c.capacity.push_back(uniform(20, 200) * kGB);
  c.capacity.push_back(uniform(20, 200) * kGB);
  bool through_core = seed % 3 == 0;
  // Odd seeds: every server link has a twin in series (same capacity, same flows; e.g. PCIe then NIC), so a
  // class's members cross another saturated link that carries only them.
  size_t twins = c.capacity.size();
  if (seed % 2 == 1)
    for (size_t s = 0; s < servers; ++s) c.capacity.push_back(25 * kGB);
  for (size_t wave = 0; wave < waves; ++wave) {
    double wave_start = uniform(0, 0.02);
    bool equal = pick(0, 1) == 0;
    double bytes = std::pow(10.0, uniform(6, 8));
    for (size_t w = 0; w < workers; ++w)
      for (size_t s = 0; s < servers; ++s) {
        FlowSpec f;
        f.route.push_back(static_cast<LinkId>(servers + w));
        if (through_core) f.route.push_back(static_cast<LinkId>(core + w % 2));
        f.route.push_back(static_cast<LinkId>(s));
        if (seed % 2 == 1) f.route.push_back(static_cast<LinkId>(twins + s));
        f.bytes = equal ? bytes : bytes * uniform(0.5, 2);
        f.cap = pick(0, 19) == 0 ? uniform(0.5, 5) * kGB : 0;
        f.start = Time::from_seconds(wave_start + (pick(0, 1) ? uniform(0, 0.005) : 0));
        c.flows.push_back(f);
      }
  }
  size_t cross = pick(0, workers);
  for (size_t i = 0; i < cross; ++i) {
    FlowSpec f;
    std::vector<LinkId> all(c.capacity.size());
    for (size_t l = 0; l < all.size(); ++l) all[l] = static_cast<LinkId>(l);
    std::shuffle(all.begin(), all.end(), rng);
    f.route.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(pick(1, 3)));
    f.bytes = std::pow(10.0, uniform(6, 8.5));
    f.start = Time::from_seconds(uniform(0, 0.03));
    c.flows.push_back(f);
  }
  return c;
}

// Dragonfly-like: `groups` groups of `routers` routers, each router with two hosts (injection and ejection
// links); local links between the routers of a group, one global link per ordered pair of groups. A flow
// between hosts of different groups goes injection, local to the group's gateway, global, local, ejection;
// many flows share the few global links (the bottleneck classes), others are held by their host links.
RandomCase dragonfly_case(uint64_t seed, size_t groups, size_t routers, size_t flows) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  auto pick = [&](size_t lo, size_t hi) { return std::uniform_int_distribution<size_t>(lo, hi)(rng); };
  RandomCase c;
  auto add = [&](double cap) {
    c.capacity.push_back(cap);
    return static_cast<LinkId>(c.capacity.size() - 1);
  };
  size_t hosts = groups * routers * 2;
  std::vector<LinkId> inject(hosts), eject(hosts);
  for (size_t h = 0; h < hosts; ++h) {
    inject[h] = add(25 * kGB);
    eject[h] = add(25 * kGB);
  }
  // local[g][a][b]: router a to router b of group g; global[g][h]: group g to group h
  std::vector<std::vector<std::vector<LinkId>>> local(
      groups, std::vector<std::vector<LinkId>>(routers, std::vector<LinkId>(routers)));
  for (size_t g = 0; g < groups; ++g)
    for (size_t a = 0; a < routers; ++a)
      for (size_t b = 0; b < routers; ++b)
        if (a != b) local[g][a][b] = add(50 * kGB);
  std::vector<std::vector<LinkId>> global(groups, std::vector<LinkId>(groups));
  for (size_t g = 0; g < groups; ++g)
    for (size_t h = 0; h < groups; ++h)
      if (g != h) global[g][h] = add(uniform(10, 40) * kGB);
  for (size_t i = 0; i < flows; ++i) {
    size_t src = pick(0, hosts - 1), dst = pick(0, hosts - 1);
    size_t gs = src / (routers * 2), gd = dst / (routers * 2);
    if (gs == gd) continue;
    size_t rs = src / 2 % routers, rd = dst / 2 % routers;
    size_t gw_out = gd % routers, gw_in = gs % routers;  // the routers holding the global link
    FlowSpec f;
    f.route.push_back(inject[src]);
    if (rs != gw_out) f.route.push_back(local[gs][rs][gw_out]);
    f.route.push_back(global[gs][gd]);
    if (gw_in != rd) f.route.push_back(local[gd][gw_in][rd]);
    f.route.push_back(eject[dst]);
    f.bytes = pick(0, 1) ? 64e6 : std::pow(10.0, uniform(6, 8));
    f.cap = pick(0, 9) == 0 ? uniform(1, 10) * kGB : 0;
    f.start = pick(0, 2) ? Time() : Time::from_seconds(uniform(0, 0.01));
    c.flows.push_back(f);
  }
  return c;
}

TEST(FlowNetworkProperties, IncastClassesKeepTheCertificateAndTheReferenceRates) {
  // Capacity, certificate and the reference rates (1e-9) after every resolve, on incasts of 8-48 workers into
  // 1-4 server links; the processor-sharing classes must have done the work.
  uint64_t class_updates = 0;
  for (uint64_t seed = 4001; seed <= 4040; ++seed) {
    RandomCase c = incast_case(seed, 8 + seed % 41, 1 + seed % 4, 1 + seed % 3);
    FlowNetwork net = build(c, 1.0);
    run_checked(c, 1.0, seed, &net);
    if (HasFatalFailure()) return;
    class_updates += net.class_updates();
  }
  EXPECT_GT(class_updates, 1000u);
}

TEST(FlowNetworkProperties, IncastCompletionTimesMatchAFluidReference) {
  // Completion times through the virtual clocks agree with re-solving everything in doubles at every event.
  for (uint64_t seed = 5001; seed <= 5030; ++seed) {
    RandomCase c = incast_case(seed, 4 + seed % 29, 1 + seed % 3, 1 + seed % 2);
    expect_fluid_reference_finish(c, seed);
    if (HasFatalFailure()) return;
  }
}

TEST(FlowNetworkProperties, EqualIncastFlowsFinishTogetherInCreationOrder) {
  // p equal flows into one server link, all from distinct NICs: one class; all end at p·n/B, popped in
  // creation order (equal finish tags give equal times).
  for (size_t p : {2, 3, 17, 64, 255}) {
    FlowNetwork net;
    LinkId server = net.add_link(Rate{25 * kGB}, Time());
    std::vector<FlowSpec> flows;
    for (size_t w = 0; w < p; ++w) {
      LinkId nic = net.add_link(Rate{25 * kGB}, Time());
      flows.push_back({{nic, server}, 10e6, 0, Time()});
    }
    auto done = simulate(net, flows);
    ASSERT_EQ(done.size(), p);
    for (size_t i = 0; i < p; ++i) {
      EXPECT_EQ(done[i].tag, i);
      EXPECT_EQ(done[i].at, done[0].at);
    }
    expect_time(done[0].at, static_cast<double>(p) * 10e6 / (25 * kGB));
  }
}

TEST(FlowNetworkProperties, DragonflyLikeGlobalLinksKeepTheCertificate) {
  uint64_t class_updates = 0;
  for (uint64_t seed = 6001; seed <= 6030; ++seed) {
    RandomCase c = dragonfly_case(seed, 3 + seed % 3, 2 + seed % 3, 60 + seed % 140);
    FlowNetwork net = build(c, 1.0);
    run_checked(c, 1.0, seed, &net);
    if (HasFatalFailure()) return;
    class_updates += net.class_updates();
  }
  EXPECT_GT(class_updates, 100u);
}

TEST(FlowNetworkProperties, DragonflyLikeCompletionTimesMatchAFluidReference) {
  for (uint64_t seed = 7001; seed <= 7020; ++seed) {
    RandomCase c = dragonfly_case(seed, 3 + seed % 2, 2 + seed % 2, 40 + seed % 60);
    expect_fluid_reference_finish(c, seed);
    if (HasFatalFailure()) return;
  }
}

// Incast with several flows per worker and server at once (a worker's buckets in flight together): every
// member link of a class carries several of its members, which join and leave one by one (starts staggered,
// sizes uneven), some workers slow, some flows capped; odd seeds put a twin link in series with each server.
RandomCase bucket_incast_case(uint64_t seed, size_t workers, size_t servers, size_t buckets) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  auto pick = [&](size_t lo, size_t hi) { return std::uniform_int_distribution<size_t>(lo, hi)(rng); };
  RandomCase c;
  for (size_t s = 0; s < servers; ++s) c.capacity.push_back(25 * kGB);  // server links 0..servers-1
  for (size_t w = 0; w < workers; ++w) c.capacity.push_back(pick(0, 7) == 0 ? 0.5 * kGB : 25 * kGB);
  size_t twins = c.capacity.size();
  if (seed % 2 == 1)
    for (size_t s = 0; s < servers; ++s) c.capacity.push_back(25 * kGB);
  for (size_t b = 0; b < buckets; ++b)
    for (size_t w = 0; w < workers; ++w)
      for (size_t s = 0; s < servers; ++s) {
        FlowSpec f;
        f.route = {static_cast<LinkId>(servers + w), static_cast<LinkId>(s)};
        if (seed % 2 == 1) f.route.push_back(static_cast<LinkId>(twins + s));
        f.bytes = std::pow(10.0, uniform(6, 7.5));
        f.cap = pick(0, 29) == 0 ? uniform(0.2, 2) * kGB : 0;
        f.start = Time::from_seconds(0.001 * static_cast<double>(b) + uniform(0, 0.003));
        c.flows.push_back(f);
      }
  return c;
}

// Colocated parameter servers: `nodes` nodes, each with `gpus` GPUs (a link each way to the node's switch),
// an uplink and a downlink to the fabric, and a server on the node's CPU (a link each way). Every GPU pushes
// to every server (local pushes stay inside the node) and pulls from it after a delay: the all-to-all pattern
// whose classes overlap (a node's uplink carries flows to every server). With `rails`, a node has a NIC (an
// uplink and a downlink) per GPU and its server uses the first, as on JUWELS Booster: GPU 0's pushes share
// that uplink with the server's pulls, and move between the classes of the uplink and of the servers'
// downlinks as the other flows come and go.
RandomCase colocated_case(uint64_t seed, size_t nodes, size_t gpus, size_t buckets, bool rails = false) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  RandomCase c;
  auto add = [&](double cap) {
    c.capacity.push_back(cap);
    return static_cast<LinkId>(c.capacity.size() - 1);
  };
  const size_t nics = rails ? gpus : 1;
  std::vector<LinkId> up(nodes * nics), down(nodes * nics), srv_in(nodes), srv_out(nodes), gpu_out, gpu_in;
  for (size_t n = 0; n < nodes; ++n) {
    for (size_t k = 0; k < nics; ++k) {
      up[n * nics + k] = add(25 * kGB);
      down[n * nics + k] = add(25 * kGB);
    }
    srv_in[n] = add(31.5 * kGB);
    srv_out[n] = add(31.5 * kGB);
    for (size_t g = 0; g < gpus; ++g) {
      gpu_out.push_back(add(31.5 * kGB));
      gpu_in.push_back(add(31.5 * kGB));
    }
  }
  for (size_t b = 0; b < buckets; ++b)
    for (size_t w = 0; w < nodes * gpus; ++w) {
      size_t node = w / gpus;
      double start = 0.002 * static_cast<double>(b) + uniform(0, 0.001);
      for (size_t j = 0; j < nodes; ++j) {
        double bytes = 4e6 / static_cast<double>(nodes);
        FlowSpec push, pull;
        push.route = {gpu_out[w], srv_in[j]};
        pull.route = {srv_out[j], gpu_in[w]};
        if (j != node) {
          LinkId nic = static_cast<LinkId>(node * nics + (rails ? w % gpus : 0));  // the GPU's NIC
          push.route = {gpu_out[w], up[nic], down[j * nics], srv_in[j]};
          pull.route = {srv_out[j], up[j * nics], down[nic], gpu_in[w]};
        }
        push.bytes = pull.bytes = bytes;
        push.cap = pull.cap = j != node ? 22.5 * kGB : 0;  // a flow across nodes at 90% of the NIC
        push.start = Time::from_seconds(start);
        pull.start = Time::from_seconds(start + uniform(0.001, 0.002));
        c.flows.push_back(push);
        c.flows.push_back(pull);
      }
    }
  return c;
}

TEST(FlowNetworkProperties, BucketIncastClassesKeepTheCertificateAndTheReferenceRates) {
  uint64_t class_updates = 0, bundled = 0;
  for (uint64_t seed = 8001; seed <= 8024; ++seed) {
    RandomCase c = bucket_incast_case(seed, 4 + seed % 13, 1 + seed % 3, 2 + seed % 4);
    FlowNetwork net = build(c, 1.0);
    run_checked(c, 1.0, seed, &net);
    if (HasFatalFailure()) return;
    class_updates += net.class_updates();
    bundled += net.messages_bundled();
  }
  EXPECT_GT(class_updates, 1000u);
  EXPECT_GT(bundled, 100u);  // buckets in flight from one worker to one server: one flow
}

TEST(FlowNetworkProperties, BucketIncastCompletionTimesMatchAFluidReference) {
  for (uint64_t seed = 8101; seed <= 8116; ++seed) {
    RandomCase c = bucket_incast_case(seed, 3 + seed % 9, 1 + seed % 2, 2 + seed % 3);
    expect_fluid_reference_finish(c, seed);
    if (HasFatalFailure()) return;
  }
}

TEST(FlowNetworkProperties, ColocatedAllToAllKeepsTheCertificateAndTheReferenceRates) {
  uint64_t growths = 0, class_updates = 0, unaffected = 0;
  for (uint64_t seed = 8201; seed <= 8212; ++seed) {
    RandomCase c = colocated_case(seed, 3 + seed % 6, 1 + seed % 4, 1 + seed % 3);
    FlowNetwork net = build(c, 1.0);
    run_checked(c, 1.0, seed, &net);
    if (HasFatalFailure()) return;
    growths += net.region_growths();
    class_updates += net.class_updates();
    unaffected += net.links_unaffected();
  }
  EXPECT_GT(growths, 100u);  // regions grew and classes stepped: both paths ran
  EXPECT_GT(class_updates, 100u);
  // Links a flow left that carried no class and no flow certified on them (or uncertified) were passed over:
  // the reference rates checked after every resolve hold the skip to max-min.
  EXPECT_GT(unaffected, 100u);
}

TEST(FlowNetworkProperties, ColocatedAllToAllCompletionTimesMatchAFluidReference) {
  for (uint64_t seed = 8301; seed <= 8308; ++seed) {
    RandomCase c = colocated_case(seed, 3 + seed % 4, 1 + seed % 3, 1 + seed % 2);
    expect_fluid_reference_finish(c, seed);
    if (HasFatalFailure()) return;
  }
}

TEST(FlowNetworkProperties, ColocatedRailsKeepTheCertificateAndTheReferenceRates) {
  // Servers on the first of a node's NICs: class steps move held flows (GPU 0's pushes and pulls, certified
  // on the shared NIC or on a server's link) into the class of the link that now binds them.
  uint64_t moves = 0;
  for (uint64_t seed = 8251; seed <= 8262; ++seed) {
    RandomCase c = colocated_case(seed, 3 + seed % 5, 2 + seed % 3, 1 + seed % 3, true);
    FlowNetwork net = build(c, 1.0);
    run_checked(c, 1.0, seed, &net);
    if (HasFatalFailure()) return;
    moves += net.class_moves();
  }
  EXPECT_GT(moves, 100u);
}

TEST(FlowNetworkProperties, ColocatedRailsCompletionTimesMatchAFluidReference) {
  for (uint64_t seed = 8351; seed <= 8358; ++seed) {
    RandomCase c = colocated_case(seed, 3 + seed % 4, 2 + seed % 3, 1 + seed % 2, true);
    expect_fluid_reference_finish(c, seed);
    if (HasFatalFailure()) return;
  }
}

// Parameter servers partitioned over the hosts of a leaf-spine fabric with destination routing (each bucket
// to one server, as BytePS partitions): host h has an uplink and a downlink, leaf L an uplink and a downlink
// to each spine, and a flow between leaves climbs the spine that its destination's index selects (h mod
// spines, InfiniBand's d-mod-k). So a server's incast from other leaves shares its spine downlink with the
// pulls that go to hosts of the same index: that link and the server's downlink saturate together, with
// different flows certified on each (the class steps that hand a saturated link on to its own flows).
RandomCase spine_incast_case(uint64_t seed, size_t leaves, size_t hosts_per_leaf, size_t spines,
                             size_t buckets) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  RandomCase c;
  auto add = [&](double cap) {
    c.capacity.push_back(cap);
    return static_cast<LinkId>(c.capacity.size() - 1);
  };
  const size_t hosts = leaves * hosts_per_leaf;
  std::vector<LinkId> up(hosts), down(hosts), spine_up(leaves * spines), spine_down(leaves * spines);
  for (size_t h = 0; h < hosts; ++h) {
    up[h] = add(25 * kGB);
    down[h] = add(25 * kGB);
  }
  for (size_t i = 0; i < leaves * spines; ++i) {
    spine_up[i] = add(25 * kGB);
    spine_down[i] = add(25 * kGB);
  }
  auto route = [&](size_t a, size_t b) {
    size_t la = a / hosts_per_leaf, lb = b / hosts_per_leaf, k = b % spines;
    if (la == lb) return std::vector<LinkId>{up[a], down[b]};
    return std::vector<LinkId>{up[a], spine_up[la * spines + k], spine_down[lb * spines + k], down[b]};
  };
  for (size_t b = 0; b < buckets; ++b) {
    size_t server = (b * 5 + seed) % hosts;
    for (size_t w = 0; w < hosts; ++w) {
      if (w == server) continue;
      double start = 0.0005 * static_cast<double>(b) + uniform(0, 0.002);
      FlowSpec push, pull;
      push.route = route(w, server);
      pull.route = route(server, w);
      push.bytes = pull.bytes = std::pow(10.0, uniform(6, 7));
      push.cap = pull.cap = seed % 2 == 0 ? 22.5 * kGB : 0;  // a flow at 90% of the NIC, or unbounded
      push.start = Time::from_seconds(start);
      pull.start = Time::from_seconds(start + uniform(0.0005, 0.003));
      c.flows.push_back(push);
      c.flows.push_back(pull);
    }
  }
  return c;
}

TEST(FlowNetworkProperties, SpineIncastHandOnKeepsTheCertificateAndTheReferenceRates) {
  uint64_t refills = 0, class_updates = 0;
  for (uint64_t seed = 8401; seed <= 8416; ++seed) {
    RandomCase c = spine_incast_case(seed, 2 + seed % 3, 3 + seed % 4, 1 + seed % 3, 3 + seed % 4);
    FlowNetwork net = build(c, 1.0);
    run_checked(c, 1.0, seed, &net);
    if (HasFatalFailure()) return;
    refills += net.class_refills();
    class_updates += net.class_updates();
  }
  EXPECT_GT(refills, 100u);  // class steps handed saturated links on
  EXPECT_GT(class_updates, 1000u);
}

TEST(FlowNetworkProperties, SpineIncastCompletionTimesMatchAFluidReference) {
  for (uint64_t seed = 8501; seed <= 8508; ++seed) {
    RandomCase c = spine_incast_case(seed, 2 + seed % 2, 3 + seed % 3, 1 + seed % 2, 3 + seed % 2);
    expect_fluid_reference_finish(c, seed);
    if (HasFatalFailure()) return;
  }
}

// Incast links: capacity = line rate x g(n), n the distinct senders (first links) with flows on the link.
const IncastCurve kHalfAtFour{{{1, 1.0}, {4, 0.5}, {16, 0.25}}};

TEST(FlowNetworkIncast, CurveIsLinearBetweenPointsAndFlatOutside) {
  // g(1) = 1, g(2) = 1 - 0.5/3, g(4) = 0.5, g(10) = 0.5 - 0.25·6/12 = 0.375, g(16) = g(100) = 0.25.
  EXPECT_DOUBLE_EQ(kHalfAtFour.goodput(1), 1.0);
  EXPECT_DOUBLE_EQ(kHalfAtFour.goodput(2), 1.0 - 0.5 / 3);
  EXPECT_DOUBLE_EQ(kHalfAtFour.goodput(4), 0.5);
  EXPECT_DOUBLE_EQ(kHalfAtFour.goodput(10), 0.375);
  EXPECT_DOUBLE_EQ(kHalfAtFour.goodput(100), 0.25);
  EXPECT_DOUBLE_EQ(IncastCurve{}.goodput(100), 1.0);
}

TEST(FlowNetworkIncast, NEqualSendersFinishAtNSOverBgN) {
  // n flows of S bytes from n distinct senders into one link of B: together they get B·g(n), so all end at
  // n·S / (B·g(n)); without the curve, n·S / B.
  for (size_t n : {1, 2, 4, 10, 40}) {
    SCOPED_TRACE(n);
    FlowNetwork net;
    LinkId sink = net.add_link(Rate{25 * kGB}, Time());
    net.set_incast(sink, &kHalfAtFour);
    std::vector<FlowSpec> flows;
    for (size_t w = 0; w < n; ++w)
      flows.push_back({{net.add_link(Rate{100 * kGB}, Time()), sink}, 10e6, 0, Time()});
    auto done = simulate(net, flows);
    ASSERT_EQ(done.size(), n);
    for (const Completion& c : done)
      expect_time(c.at,
                  static_cast<double>(n) * 10e6 / (25 * kGB * kHalfAtFour.goodput(static_cast<double>(n))));
  }
}

TEST(FlowNetworkIncast, CapacityFollowsTheSendersAsTheyLeave) {
  // 4 senders with S, 2S, 2S, 2S bytes: all at B·g(4)/4 until the first ends at t1 = 4S / (B·g(4)); the
  // other three then share B·g(3) with S left each: t2 = t1 + 3S / (B·g(3)).
  const double S = 10e6, B = 25 * kGB;
  FlowNetwork net;
  LinkId sink = net.add_link(Rate{B}, Time());
  net.set_incast(sink, &kHalfAtFour);
  std::vector<FlowSpec> flows;
  for (size_t w = 0; w < 4; ++w)
    flows.push_back({{net.add_link(Rate{B}, Time()), sink}, w == 0 ? S : 2 * S, 0, Time()});
  auto done = simulate(net, flows);
  double t1 = 4 * S / (B * kHalfAtFour.goodput(4));
  expect_time(at(done, 0), t1);
  for (uint64_t tag : {1, 2, 3}) expect_time(at(done, tag), t1 + 3 * S / (B * kHalfAtFour.goodput(3)));
}

TEST(FlowNetworkIncast, FlowsOfOneSenderCountOnce) {
  // Two flows from one sender (same first link) and one from another: 2 senders, B·g(2) shared by 3 flows,
  // the sender's own link (4B) not binding: all end at 3S / (B·g(2)).
  const double S = 10e6, B = 25 * kGB;
  FlowNetwork net;
  LinkId sink = net.add_link(Rate{B}, Time());
  net.set_incast(sink, &kHalfAtFour);
  LinkId a = net.add_link(Rate{4 * B}, Time()), b = net.add_link(Rate{4 * B}, Time());
  auto done =
      simulate(net, {{{a, sink}, S, 0, Time()}, {{a, sink}, S, 0, Time()}, {{b, sink}, S, 0, Time()}});
  for (uint64_t tag : {0, 1, 2}) expect_time(at(done, tag), 3 * S / (B * kHalfAtFour.goodput(2)));
}

TEST(FlowNetworkProperties, IncastLinksKeepTheReferenceRatesAndCompletionTimes) {
  // Random incasts (waves of workers into 1-3 server links, core links, cross traffic) with the server
  // links made incast links: after every resolve, the rates equal the reference water-filling on the
  // capacities the curve gives for the senders present; completion times equal the fluid reference's.
  for (uint64_t seed = 7001; seed <= 7030; ++seed) {
    RandomCase c = incast_case(seed, 4 + seed % 29, 1 + seed % 3, 1 + seed % 2);
    for (FlowSpec& f : c.flows) f.cap = 0;  // (caps are covered above; here every flow is uncapped)
    size_t servers = 1 + seed % 3;
    FlowNetwork net = build(c, 1.0);
    for (size_t s = 0; s < servers; ++s) net.set_incast(static_cast<LinkId>(s), &kHalfAtFour);
    auto done = simulate(net, c.flows, [&](const FlowNetwork& n) {
      std::vector<FlowId> ids = n.active_flow_ids();
      std::vector<std::vector<LinkId>> routes;
      for (FlowId f : ids) routes.emplace_back(n.route(f).begin(), n.route(f).end());
      std::vector<double> caps(ids.size(), std::numeric_limits<double>::infinity());
      std::vector<double> want =
          reference_rates(effective_capacity(c.capacity, routes, &kHalfAtFour, servers), routes, caps);
      for (size_t i = 0; i < ids.size(); ++i)
        ASSERT_NEAR(n.rate(ids[i]), want[i], want[i] * 1e-9) << "seed " << seed;
    });
    if (HasFatalFailure()) return;
    std::vector<double> want = reference_finish(c, &kHalfAtFour, servers);
    ASSERT_EQ(done.size(), c.flows.size());
    for (const Completion& x : done)
      ASSERT_NEAR(x.at.seconds(), want[x.tag], std::max(want[x.tag] * 1e-6, 1e-9))
          << "seed " << seed << " flow " << x.tag;
  }
}

TEST(FlowNetworkProperties, StatisticsCountFlows) {
  RandomCase c = random_case(7, true);
  FlowNetwork net = build(c, 1.0);
  simulate(net, c.flows);
  EXPECT_EQ(net.flows_started(), c.flows.size());
  EXPECT_GE(net.region_solves(), 1u);
  // Each region solve takes at least one flow and at most every flow of the case:
  // solves <= sum over solves of |region| <= solves x flows.
  EXPECT_GE(net.region_flows_solved(), net.region_solves());
  EXPECT_LE(net.region_flows_solved(), net.region_solves() * c.flows.size());
  EXPECT_TRUE(net.empty());
}

}  // namespace
}  // namespace ddlsim
