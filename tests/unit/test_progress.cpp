// Progress of long runs: run_parallel counts each running simulation by the share of it done, weighed by its
// size, and the Engine reports the share of its tasks that have ended while it runs.
#include <gtest/gtest.h>

#include <vector>

#include "sim/train/engine.hpp"
#include "sim/train/training.hpp"

namespace ddlsim {
namespace {

// One thread, three tasks, each saying it is half done before it ends. Alike, the work done goes 0.5, 1, 1.5,
// 2, 2.5, 3 of 3; weighed 1, 2, 5 (of 8): 0.5, 1, 2, 3, 5.5, 8 of 8. `done` counts the finished ones.
TEST(Progress, RunParallelCountsTheShareOfTheRunningTask) {
  for (const std::vector<double>& weights : {std::vector<double>{}, std::vector<double>{1, 2, 5}}) {
    std::vector<double> seen;
    std::vector<size_t> done;
    std::vector<bool> ran = run_parallel(
        3, 1,
        [&](double fraction, size_t d, size_t total) {
          EXPECT_EQ(total, 3u);
          seen.push_back(fraction);
          done.push_back(d);
        },
        [&](size_t, const std::function<void(double)>& share) { share(0.5); }, weights);
    EXPECT_EQ(ran, (std::vector<bool>{true, true, true}));
    const std::vector<double> want = weights.empty() ? std::vector<double>{0.5, 1, 1.5, 2, 2.5, 3}
                                                     : std::vector<double>{0.5, 1, 2, 3, 5.5, 8};
    const double all = weights.empty() ? 3 : 8;
    ASSERT_EQ(seen.size(), want.size());
    for (size_t i = 0; i < seen.size(); ++i) EXPECT_DOUBLE_EQ(seen[i], want[i] / all) << i;
    EXPECT_EQ(done, (std::vector<size_t>{0, 1, 1, 2, 2, 3}));
  }
}

// Without a progress callback a task gets an empty share function (nothing to call).
TEST(Progress, NoCallbackNoShare) {
  bool empty = false;
  run_parallel(1, 1, {}, [&](size_t, const std::function<void(double)>& share) { empty = !share; });
  EXPECT_TRUE(empty);
}

// An Engine run of a chain of n delays of 1 us (n distinct instants): it reports shares of ended tasks that
// never fall and stay within [0, 1], every 4096 instants from the first: with n = 20,000 at least 4 times.
TEST(Progress, EngineReportsTheShareOfEndedTasksAsItRuns) {
  Topology topo;
  TaskGraph g;
  const int n = 20000;
  TaskId prev = kNoTask;
  for (int i = 0; i < n; ++i) {
    TaskId t = g.add_delay(Time::us(1), Category::Compute, 0, 0);
    if (prev != kNoTask) g.depend(prev, t);
    prev = t;
  }
  g.finalize();
  CommModel comm;
  Engine engine(topo, comm, g);
  std::vector<double> shares;
  engine.on_progress([&](double f) { shares.push_back(f); });
  engine.run();
  ASSERT_GE(shares.size(), 4u);
  EXPECT_EQ(shares.front(), 0);
  for (size_t i = 1; i < shares.size(); ++i) {
    EXPECT_GE(shares[i], shares[i - 1]);
    EXPECT_LE(shares[i], 1);
  }
  EXPECT_GT(shares.back(), 0.5);
}

}  // namespace
}  // namespace ddlsim
