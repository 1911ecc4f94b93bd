// The Engine's parts on their own, with hand-built topologies and plans (no YAML): the event queue's (time,
// insertion) order, task readiness with FIFO resources, kernel interference (DeviceModel), and the collective
// executor on the flow model and on the max-plus fast path against closed forms.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <algorithm>
#include <optional>
#include <random>
#include <vector>

#include "sim/train/collective.hpp"
#include "sim/train/collective_executor.hpp"
#include "sim/train/device_model.hpp"
#include "sim/train/event_core.hpp"
#include "sim/train/transport.hpp"

namespace ddlsim {
namespace {

TEST(EngineEventQueue, PopsByTimeThenInsertionOrder) {
  EventQueue q;
  q.schedule(Time::ps(5), EventKind::TaskEnd, 1);
  q.schedule(Time::ps(3), EventKind::FlowStart, 2);
  q.schedule(Time::ps(5), EventKind::MessageDone, 3, 7);
  q.schedule(Time::ps(3), EventKind::RoundDone, 4);
  EXPECT_EQ(q.next_time(), Time::ps(3));
  std::vector<uint32_t> order;
  while (!q.empty()) order.push_back(q.pop().a);
  EXPECT_EQ(order, (std::vector<uint32_t>{2, 4, 1, 3}));
  EXPECT_EQ(q.next_time(), Time::max());
}

// Runs a simulated engine on an EventQueue: start(add) schedules the first events; then at each instant
// everything due pops, and after each pop more(now, popped, scheduled, add) may schedule events at now or
// later (add(t): one event at t ps). The pops must come in one heap's order: by time, then by insertion, i.e.
// the insertion sequence stable-sorted by time.
template <class Start, class More>
void expect_heap_order(Start&& start, More&& more) {
  EventQueue q;
  std::vector<std::pair<int64_t, uint32_t>> reference;  // (time, id) in insertion order, id = insertion index
  auto add = [&](int64_t t) {
    const auto id = static_cast<uint32_t>(reference.size());
    q.schedule(Time::ps(t), EventKind::TaskEnd, id);
    reference.emplace_back(t, id);
  };
  start(add);
  std::vector<uint32_t> popped;
  while (!q.empty()) {
    const Time now = q.next_time();
    q.advance(now);
    while (!q.empty() && q.next_time() == now) {
      popped.push_back(q.pop().a);
      more(now.picoseconds(), popped.size(), reference.size(), add);
    }
  }
  std::stable_sort(reference.begin(), reference.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  ASSERT_EQ(popped.size(), reference.size());
  for (size_t i = 0; i < popped.size(); ++i) ASSERT_EQ(popped[i], reference[i].second) << i;
}

// The queue keeps events of a few recent delays in FIFO lanes and the rest in a heap. Here: up to 20,000
// events, each pop scheduling 0-2 more at now + one of 12 delays (more than the lanes), zero among them.
TEST(EngineEventQueue, LanesPopInTheHeapsOrder) {
  std::mt19937 rng(7);
  const int64_t delays[12] = {0, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144};
  expect_heap_order(
      [&](auto&& add) {
        for (int i = 0; i < 20; ++i) add(delays[rng() % 12]);
      },
      [&](int64_t now, size_t, size_t scheduled, auto&& add) {
        if (scheduled >= 20000) return;
        for (uint32_t k = rng() % 3; k > 0; --k) add(now + delays[rng() % 12]);
      });
}

// A lane that never empties: 5000 events at 10 ps, each scheduling the next at +10 ps (the same lane) and
// every third one also at a random delay, up to 40,000 events. The lane drops its popped front once that is
// at least half of it (and 4096 events), and the order holds.
TEST(EngineEventQueue, ALaneThatNeverEmptiesCompactsInOrder) {
  std::mt19937 rng(11);
  expect_heap_order(
      [](auto&& add) {
        for (int i = 0; i < 5000; ++i) add(10);
      },
      [&](int64_t now, size_t popped, size_t scheduled, auto&& add) {
        if (scheduled >= 40000) return;
        add(now + 10);
        if (popped % 3 == 0) add(now + 1 + static_cast<int64_t>(rng() % 40));
      });
}

TEST(EngineTaskScheduler, ResourceRunsReadyTasksOneAtATimeInFifoOrder) {
  TaskGraph g;
  uint32_t gpu = g.add_resource();
  TaskId a = g.add_compute(gpu, Time::us(1), 0, 0);
  TaskId b = g.add_compute(gpu, Time::us(1), 0, 0);
  TaskId c = g.add_delay(Time::us(1), Category::Io, 0, 0);
  TaskId d = g.add_compute(gpu, Time::us(1), 0, 0);  // after c
  g.depend(c, d);
  g.finalize();
  TaskScheduler s(g);
  std::vector<TaskId> started;
  auto start = [&](TaskId t) { started.push_back(t); };
  s.begin(start);
  EXPECT_EQ(started, (std::vector<TaskId>{a, c}));  // b waits for the GPU
  started.clear();
  s.complete(c, start);  // d is ready but the GPU is taken: queued behind b
  EXPECT_TRUE(started.empty());
  EXPECT_EQ(s.release(a), b);
  EXPECT_EQ(s.release(b), d);
  EXPECT_EQ(s.release(d), TaskScheduler::kNone);
  EXPECT_TRUE(s.acquire(b));  // the GPU is free again
}

TEST(EngineDeviceModel, ComputeIsExtendedBySlowdownTimesResidentOverlapOnce) {
  TaskGraph g;
  g.collective_compute_slowdown = 0.5;
  uint32_t gpu = g.add_resource();
  TaskId launch = g.add_delay(Time::us(10), Category::Other, 0, 0);
  TaskId compute = g.add_compute(gpu, Time::us(40), 0, 0);
  CollectiveTask c;
  c.plan = make_plan(CollectiveShape{.algorithm = Algorithm::Ring, .ranks = 2, .bytes = 1e6});
  c.members = {0, 1};
  c.launch = {launch, launch};
  TaskId coll = g.add_collective(std::move(c), 0);
  g.finalize();
  DeviceModel dev(g);
  ASSERT_TRUE(dev.active());
  dev.compute_started(compute, Time());
  dev.task_finished(launch, Time::us(10));  // kernels resident on members 0 and 1 from 10 us
  EXPECT_EQ(dev.resident_time(0, Time::us(25)), Time::us(15).picoseconds());
  dev.task_finished(coll, Time::us(30));                          // ... to 30 us
  EXPECT_EQ(dev.extension(compute, Time::us(40)), Time::us(10));  // 0.5 x 20 us
  EXPECT_EQ(dev.extension(compute, Time::us(50)), Time());        // once
  EXPECT_EQ(dev.extension(launch, Time::us(50)), Time());         // only compute is slowed
}

TEST(EngineDeviceModel, InactiveWithoutSlowdown) {
  TaskGraph g;
  TaskId compute = g.add_compute(g.add_resource(), Time::us(40), 0, 0);
  g.finalize();
  DeviceModel dev(g);
  EXPECT_FALSE(dev.active());
  EXPECT_EQ(dev.extension(compute, Time::us(40)), Time());
}

// p GPUs, each its own host, on one switch: cables of `rate` bytes/s and `latency`.
struct Star {
  Topology topo;
  std::vector<VertexId> gpus;
  VertexId sw = kNoVertex;
};
Star make_star(int p, double rate, Time latency) {
  Star s;
  s.sw = s.topo.add_vertex(VertexKind::Switch, -1, "sw");
  for (int i = 0; i < p; ++i) {
    s.gpus.push_back(s.topo.add_vertex(VertexKind::Gpu, i, fmt::format("gpu{}", i)));
    s.topo.connect(s.gpus.back(), s.sw, LinkSpec{Rate{rate}, latency}, LinkClass::Host);
  }
  return s;
}

// The executor with the Engine's event loop around it (one collective task, id 0).
struct ExecutorRun {
  EventQueue events;
  EngineStats stats;
  Transport transport;
  std::optional<Time> done;
  CollectiveExecutor exec;
  ExecutorRun(const Topology& topo, const CommModel& comm)
      : transport(topo, comm, events), exec(transport, events, stats, [this](TaskId) { done = now; }) {}
  Time now;

  // The flow network's link usage plus the fast path's.
  std::vector<LinkUsage> usage() const {
    std::vector<LinkUsage> u = transport.net().link_usage();
    exec.add_fast_usage(u);
    return u;
  }

  Time run(const CollectiveTask& spec, bool fast) {
    done.reset();
    exec.start(0, spec, fast, now);
    FlowNetwork& net = transport.net();
    while (true) {
      Time t = std::min(net.next_completion(), events.next_time());
      if (t == Time::max()) break;
      now = t;
      while (true) {
        if (net.next_completion() == now) {
          exec.flow_done(net.pop_completion(), now);
        } else if (events.next_time() == now) {
          Event e = events.pop();
          if (e.kind == EventKind::TaskEnd) done = now;
          if (e.kind == EventKind::FlowStart) transport.start_flow(e.a, now);
          if (e.kind == EventKind::MessageDone) exec.message_done(e.a, e.b, now);
          if (e.kind == EventKind::RoundDone) exec.round_done(e.a, e.b, now);
          if (e.kind == EventKind::DirectDone) exec.flow_done(transport.finish_direct(e.a, now), now);
        } else {
          break;
        }
      }
      net.resolve(now);
    }
    EXPECT_TRUE(done.has_value());
    return done.value_or(Time::max());
  }
};

// An isolated allreduce of `bytes` per member over every GPU of the star (Ring; Direct: every member sends
// its whole buffer to every other at once, so its messages share links).
CollectiveTask allreduce_task(const Star& s, Algorithm algorithm, double bytes) {
  CollectiveTask c;
  c.plan = make_plan(
      CollectiveShape{.algorithm = algorithm, .ranks = static_cast<uint32_t>(s.gpus.size()), .bytes = bytes});
  c.members = s.gpus;
  c.isolated = true;
  return c;
}

// Ring allreduce on a star: 2(p-1) rounds, each one message of n/p per member on its own cables, so each
// round takes the route latency (two cables) plus n/(pC).
TEST(EngineCollectiveExecutor, RingOnStarMatchesClosedFormOnBothPaths) {
  for (int p : {4, 16}) {
    const double n = 48e6, C = 25e9;
    Star s = make_star(p, C, Time::us(1));
    CommModel comm;
    CollectiveTask spec = allreduce_task(s, Algorithm::Ring, n);
    Time expect = Time::ps(2 * (p - 1) * (Time::us(2) + Time::from_seconds(n / p / C)).picoseconds());
    ExecutorRun flow(s.topo, comm), fast(s.topo, comm);
    EXPECT_EQ(flow.run(spec, false), expect) << p;
    EXPECT_EQ(fast.run(spec, true), expect) << p;
    EXPECT_EQ(flow.stats.slow_collectives, 1u);
    EXPECT_EQ(fast.stats.fast_collectives, 1u);
    EXPECT_EQ(fast.stats.fast_messages, static_cast<uint64_t>(2 * (p - 1) * p));
    EXPECT_EQ(flow.stats.messages, fast.stats.messages);
  }
}

// Each cable direction of the ring carries 2(p-1) messages of n/p, one at a time, on either path; the fast
// path's memo records the usage again when the collective repeats.
TEST(EngineCollectiveExecutor, RingLinksCarryTwoPMinusOneOverPOfTheBuffer) {
  const int p = 8;
  const double n = 64e6, C = 25e9;
  Star s = make_star(p, C, Time::us(1));
  CommModel comm;
  CollectiveTask spec = allreduce_task(s, Algorithm::Ring, n);
  ExecutorRun flow(s.topo, comm), fast(s.topo, comm);
  flow.run(spec, false);
  fast.run(spec, true);
  double bytes = 2.0 * (p - 1) / p * n;
  double busy = 2 * (p - 1) * Time::from_seconds(n / p / C).seconds();
  for (const auto* r : {&flow, &fast}) {
    std::vector<LinkUsage> usage = r->usage();
    ASSERT_EQ(usage.size(), s.topo.links().size());
    for (const LinkUsage& u : usage) {
      EXPECT_NEAR(u.bytes, bytes, 1e-9 * bytes) << u.link;
      EXPECT_NEAR(u.busy_s, busy, 1e-15) << u.link;
      EXPECT_EQ(u.peak_flows, 1u) << u.link;
    }
  }
  fast.run(spec, true);  // from the memo
  EXPECT_EQ(fast.stats.fast_collectives, 2u);
  for (const LinkUsage& u : fast.usage()) EXPECT_NEAR(u.bytes, 2 * bytes, 1e-9 * bytes);
}

// A plan whose messages share links falls back to the flow model (no fast-path usage recorded twice): direct
// allreduce on a star, every member sending to every other at once.
TEST(EngineCollectiveExecutor, SharedLinksFallBackToTheFlowModel) {
  const int p = 4;
  const double n = 4e6, C = 10e9;
  Star s = make_star(p, C, Time());
  CommModel comm;
  CollectiveTask spec = allreduce_task(s, Algorithm::Direct, n);
  ExecutorRun fast(s.topo, comm), flow(s.topo, comm);
  Time t_fast = fast.run(spec, true), t_flow = flow.run(spec, false);
  EXPECT_EQ(t_fast, t_flow);
  EXPECT_EQ(fast.stats.fast_collectives, 0u);
  EXPECT_EQ(fast.stats.slow_collectives, 1u);
  // Each uplink carries the member's buffer to p-1 peers, (p-1) flows at once.
  for (const LinkUsage& u : fast.usage()) {
    EXPECT_NEAR(u.bytes, (p - 1) * n, 1e-6);
    EXPECT_EQ(u.peak_flows, static_cast<uint32_t>(p - 1));
  }
}

// A collective the fast path declines runs on the flow model once; later runs alone on an idle network replay
// that run. Each run of the direct allreduce takes the same time d as the flow model re-solved every time
// (t_k - t_{k-1} = d, to the picosecond), and every uplink carries k(p-1)n bytes after k runs.
TEST(EngineCollectiveExecutor, RepeatedContendedCollectiveReplaysTheFlowModelsRun) {
  const int p = 4;
  const double n = 4e6, C = 10e9;
  Star s = make_star(p, C, Time::us(1));
  CommModel comm;
  CollectiveTask spec = allreduce_task(s, Algorithm::Direct, n);
  ExecutorRun replay(s.topo, comm), flow(s.topo, comm);
  Time prev_replay, prev_flow;
  for (int k = 1; k <= 3; ++k) {
    Time a = replay.run(spec, true), b = flow.run(spec, false);
    EXPECT_EQ(a - prev_replay, b - prev_flow) << k;
    prev_replay = a;
    prev_flow = b;
    for (const LinkUsage& u : replay.usage()) EXPECT_NEAR(u.bytes, k * (p - 1) * n, 1e-6) << k;
  }
  EXPECT_EQ(replay.stats.slow_collectives, 3u);
  EXPECT_EQ(replay.stats.replayed_collectives, 2u);
  EXPECT_EQ(flow.stats.replayed_collectives, 0u);
  EXPECT_EQ(replay.stats.messages, flow.stats.messages);
  EXPECT_EQ(replay.transport.net().flows_started() * 3, flow.transport.net().flows_started());
}

// Two switches joined by one trunk cable, `half` GPUs on each (cables of C bytes/s, latency 1 us); the ring
// visits them two by two (a0 a1 b0 b1 a2 a3 ...), so half of its messages cross the trunk, half/2 in each
// direction at once, and share it. Those are slower than the messages inside a switch, so the ring starts
// out of step and settles into a period; the run that is recorded (fast allowed, the fast path declines)
// runs the messages inside a switch as direct messages (their cables are theirs alone) and skips the repeated
// periods (the reduce-scatter's and the all-gather's, which differ by the reduction). It
// must end at the flow model's own time, to the picosecond, with the same messages and link usage.
TEST(EngineCollectiveExecutor, PeriodicRoundsOfAContendedRingAreSkippedExactly) {
  for (double trunk : {1.0, 1.5, 2.0}) {  // trunk capacity / C
    const int half = 8;
    const double n = 64e6, C = 10e9;
    Topology topo;
    VertexId a = topo.add_vertex(VertexKind::Switch, -1, "a"),
             b = topo.add_vertex(VertexKind::Switch, -1, "b");
    topo.connect(a, b, LinkSpec{Rate{trunk * C}, Time::us(1)}, LinkClass::Global);
    std::vector<VertexId> members;
    for (int i = 0; i < 2 * half; ++i) {
      VertexId g = topo.add_vertex(VertexKind::Gpu, i, fmt::format("gpu{}", i));
      topo.connect(g, (i / 2) % 2 == 0 ? a : b, LinkSpec{Rate{C}, Time::us(1)}, LinkClass::Host);
      members.push_back(g);
    }
    CommModel comm;
    comm.reduce = {
        ReduceRange{.gamma_gpu = 1 / 50e9}};  // reduce-scatter rounds reduce, all-gather ones do not
    CollectiveTask spec;
    spec.plan = make_plan(CollectiveShape{.algorithm = Algorithm::Ring, .ranks = 2 * half, .bytes = n});
    spec.members = members;
    spec.isolated = true;
    ExecutorRun skip(topo, comm), flow(topo, comm);
    Time t_skip = skip.run(spec, true), t_flow = flow.run(spec, false);
    EXPECT_EQ(t_skip, t_flow) << trunk;
    EXPECT_GT(skip.stats.skipped_rounds, 0u) << trunk;
    EXPECT_EQ(skip.stats.fast_collectives, 0u) << trunk;
    EXPECT_EQ(skip.stats.messages, flow.stats.messages) << trunk;
    EXPECT_LT(skip.transport.net().flows_started(), flow.transport.net().flows_started()) << trunk;
    // The messages inside a switch are alone on their cables: direct, not flows; those over the trunk share
    // it.
    EXPECT_GT(skip.transport.net().flows_started(), 0u) << trunk;
    EXPECT_GT(skip.transport.parts_sent(), skip.transport.net().flows_started()) << trunk;
    std::vector<LinkUsage> us = skip.usage(), uf = flow.usage();
    for (size_t l = 0; l < us.size(); ++l) {
      EXPECT_NEAR(us[l].bytes, uf[l].bytes, 1e-9 * uf[l].bytes) << trunk << " link " << l;
      EXPECT_NEAR(us[l].busy_s, uf[l].busy_s, 1e-12) << trunk << " link " << l;
      EXPECT_EQ(us[l].peak_flows, uf[l].peak_flows) << trunk << " link " << l;
    }
    // A second run replays the recorded one: the same duration again.
    EXPECT_EQ(skip.run(spec, true) - t_skip, flow.run(spec, false) - t_flow) << trunk;
    EXPECT_EQ(skip.stats.replayed_collectives, 1u) << trunk;
  }
}

}  // namespace
}  // namespace ddlsim
