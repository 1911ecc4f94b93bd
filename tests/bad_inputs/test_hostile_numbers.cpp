// Hostile numbers through the real CLI: values so small, large or combined that picosecond Time (int64) or
// the arithmetic on them would overflow, underflow or wrap. Each run either gives the right number (checked
// against its closed form) or refuses with one line naming the key, exit status 2; none exits 1 (internal
// error), crashes or prints a silently wrong result.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tests/support/cli.hpp"

namespace {

using ddlsim_test::Capture;
using ddlsim_test::CliOutcome;

const std::string kCollective = "star-ps-vs-ring.yaml";
const std::string kTraining = "aach2023/resnet50-dali-cpu.yaml";
// One node and one strategy: the training scenario at its smallest.
const std::string kOneNode = "cluster.nodes=1' --set 'strategies=[ddp]";

CliOutcome run(const std::string& scenario, const std::vector<std::string>& sets, Capture capture) {
  std::string args = "run '" + std::string(DDLSIM_SOURCE_DIR) + "/scenarios/" + scenario + "'";
  for (const std::string& s : sets) args += " --set '" + s + "'";
  return ddlsim_test::run_ddlsim(args + " --format csv", capture);
}

size_t lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n + (!s.empty() && s.back() != '\n');
}

// Refused: exit status 2, one line on stderr naming `key` (as `key: `) and containing `fragment`.
void expect_refused(const std::string& scenario, const std::vector<std::string>& sets, const std::string& key,
                    const std::string& fragment) {
  std::string trace;
  for (const std::string& s : sets) trace += " --set " + s;
  SCOPED_TRACE(scenario + trace);
  CliOutcome o = run(scenario, sets, Capture::Stderr);
  EXPECT_EQ(o.status, 2) << o.out;
  EXPECT_EQ(lines(o.out), 1u) << o.out;
  EXPECT_NE(o.out.find(key + ": "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find(fragment), std::string::npos) << o.out;
}

// A CSV field of the first result row by column name.
double csv_field(const std::string& csv, const std::string& column) {
  std::istringstream in(csv);
  std::string header, row, cell;
  std::getline(in, header);
  std::getline(in, row);
  std::istringstream h(header), r(row);
  while (std::getline(h, cell, ',')) {
    std::string value;
    std::getline(r, value, ',');
    if (cell == column) return std::stod(value);
  }
  ADD_FAILURE() << "no column " << column << " in " << csv;
  return 0;
}

// 1. A loader so slow that 13 batches pass ~106 days of simulated time used to wrap (the step came out as if
// there were no loader); it is refused naming per_thread.
TEST(HostileNumbers, LoaderTooSlowForSimulatedTime) {
  expect_refused(kTraining, {kOneNode, "workload.loader.per_thread=1e-6"}, "workload.loader.per_thread",
                 "limit of simulated time");
}

// 1. A slow loader that fits is right: the step is loader-bound. A worker's loads run back to back on its
// loader, each batch_per_gpu / (threads x per_thread) = 64 / (8 x 1e-3) = 8000 s, while its compute takes
// ~0.1 s, so with no spread (loader cv, filesystem_cv and jitter 0) every step takes exactly 8000 s.
TEST(HostileNumbers, SlowLoaderGivesTheLoaderBoundStep) {
  CliOutcome o = run(kTraining,
                     {kOneNode, "workload.loader.per_thread=1e-3", "workload.loader.cv=0",
                      "workload.loader.filesystem_cv=0", "workload.jitter.cv=0"},
                     Capture::Stdout);
  ASSERT_EQ(o.status, 0) << o.out;
  EXPECT_NEAR(csv_field(o.out, "step_time_s"), 64 / (8 * 1e-3), 1e-6) << o.out;
}

// 2. Collective sizes past 1 PiB (1e18 B gave time 0; 2^63-1 B printed negative bytes and time 0).
TEST(HostileNumbers, CollectiveBytesOverTheLimit) {
  for (const char* b : {"1e18B", "9223372036854775807B"})
    expect_refused(kCollective, {"strategies=[ring]", std::string("workload.bytes=") + b}, "workload.bytes",
                   "over the limit of 1 PiB");
}

// 2. A size within the limit whose collective still passes simulated time: each message fits, the rounds
// together do not (the max-plus fast path would have wrapped to 0 s); refused at the strategy, naming bytes.
TEST(HostileNumbers, CollectiveLongerThanSimulatedTime) {
  for (const char* b : {"1TB", "1e8B"})
    expect_refused(
        kCollective,
        {"strategies=[ring]", "cluster.network.link.bandwidth=1B/s", std::string("workload.bytes=") + b},
        "strategies[0]", "workload.bytes");
}

// 2. Just inside the limit the slow-link ring is right (on the flow model: its bound is too close to the
// limit for the fast path). Ring allreduce of n = 3e6 B on p = 16 GPUs of a star with 1 B/s links:
// 2(p-1) = 30 rounds, each a message of n/p bytes per GPU at 1 B/s, so 30 x 2e6 / 16 = 3,750,000 s (the limit
// is 4.6e6 s), plus 30 x (alpha + route latency), microseconds.
TEST(HostileNumbers, SlowLinkCollectiveWithinTheLimit) {
  CliOutcome o =
      run(kCollective, {"strategies=[ring]", "cluster.network.link.bandwidth=1B/s", "workload.bytes=2e6B"},
          Capture::Stdout);
  ASSERT_EQ(o.status, 0) << o.out;
  EXPECT_NEAR(csv_field(o.out, "collective_time_s"), 30 * 2e6 / 16, 1.0) << o.out;
}

// 3. A link bandwidth below 1 B/s (25e-300 GB/s gave 0 s), on the fabric and in the comm model.
TEST(HostileNumbers, BandwidthBelowTheMinimum) {
  expect_refused(kCollective, {"strategies=[ring]", "cluster.network.link.bandwidth=25e-300GB/s"},
                 "cluster.network.link.bandwidth", "below the minimum of 1 B/s");
  expect_refused(kTraining, {kOneNode, "cluster.comm.bandwidth_intra=25e-300GB/s"},
                 "cluster.comm.bandwidth_intra", "below the minimum of 1 B/s");
}

// 4. A layer's forward FLOPs past 1e21 (1e300 PFLOP became inf and gave an 18 us step), and a finite count
// whose step passes simulated time (refused at batch_per_gpu, the formula in the message).
TEST(HostileNumbers, ForwardFlopsOverTheLimit) {
  expect_refused(
      kTraining,
      {kOneNode, "workload.model={name: m, layers: [{name: a, params: 1000, forward_flops: 1e300PFLOP}]}"},
      "workload.model.layers[0].forward_flops", "over the limit of 1e21 FLOP");
  expect_refused(
      kTraining,
      {kOneNode, "workload.model={name: m, layers: [{name: a, params: 1000, forward_flops: 1e21FLOP}]}"},
      "workload.batch_per_gpu", "limit of simulated time");
}

// 5. Already refused before this file; kept here with the other hostile numbers. The model file's own
// dataset.samples is checked too.
TEST(HostileNumbers, DatasetSamplesAndBucketSize) {
  expect_refused(kTraining, {kOneNode, "workload.dataset_samples=-5"}, "workload.dataset_samples",
                 "at least 1");
  expect_refused(kTraining,
                 {kOneNode,
                  "workload.model={name: m, layers: [{name: a, params: 1000, forward_flops: 1GFLOP}], "
                  "dataset: {samples: -5}}"},
                 "workload.model.dataset.samples", "between 1 and");
  expect_refused(kTraining, {"cluster.nodes=1", "strategies=[{name: ddp, bucket_size: 0B}]"},
                 "strategies[0].bucket_size", "at least 1 byte");
}

// 6. Each of these ran to "internal error: a transfer started while an isolated collective owned the network"
// (exit 1): Time wrapped in the fast path's int64 picoseconds.
TEST(HostileNumbers, AlphaOverTheLatencyLimit) {
  expect_refused(kTraining, {"cluster.nodes=2", "strategies=[ddp]", "cluster.comm.alpha_inter=100h"},
                 "cluster.comm.alpha_inter", "over the limit of 1 s");
}

TEST(HostileNumbers, BatchPerGpuOverTheLimit) {
  expect_refused(kTraining, {kOneNode, "workload.batch_per_gpu=2147483648"}, "workload.batch_per_gpu",
                 "between 1 and 65536");
}

TEST(HostileNumbers, CycleTimeOverTheLatencyLimit) {
  expect_refused(kTraining, {"cluster.nodes=2", "strategies=[{name: horovod, cycle_time: 1000h}]"},
                 "strategies[0].cycle_time", "over the limit of 1 s");
}

TEST(HostileNumbers, LayerParamsOverTheLimit) {
  expect_refused(
      kTraining,
      {kOneNode,
       "workload.model={name: m, layers: [{name: a, params: 9223372036854775807, forward_flops: 1GFLOP}]}"},
      "workload.model.layers[0].params", "limit of 1e+13");
  // Two layers whose sum would wrap an int64: the second one is named.
  expect_refused(kTraining,
                 {kOneNode,
                  "workload.model={name: m, layers: [{name: a, params: 9000000000000, forward_flops: "
                  "1GFLOP}, {name: b, params: 9000000000000, forward_flops: 1GFLOP}]}"},
                 "workload.model.layers[1].params", "limit of 1e+13");
}

// 7. No GPUs per node, with a training workload (it used to die of SIGFPE; now refused while parsing).
TEST(HostileNumbers, NoGpusPerNode) {
  expect_refused(kTraining, {kOneNode, "cluster.node.gpus=0"}, "cluster.node.gpus", "between 1 and 64");
  expect_refused(kCollective, {"workload={model: resnet50}", "strategies=[ddp]", "cluster.gpus_per_node=0"},
                 "cluster.gpus_per_node", "between 1 and 64");
}

// 8. steps (and warmup_steps) have a maximum of 10000: a billion steps would build a graph of billions of
// tasks (the run never ended).
TEST(HostileNumbers, StepsOverTheMaximum) {
  expect_refused(kTraining, {kOneNode, "workload.steps=1000000000"}, "workload.steps", "at most 10000");
  expect_refused(kTraining, {kOneNode, "workload.warmup_steps=10001"}, "workload.warmup_steps",
                 "at most 10000");
}

}  // namespace

namespace {

// Beyond the reported cases: spreads and epochs so large that a draw or time_to_train_s became NaN or inf.
TEST(HostileNumbers, SpreadsAndEpochsOverTheirLimits) {
  expect_refused(kTraining, {kOneNode, "workload.jitter.cv=1e300"}, "workload.jitter.cv", "between 0 and 10");
  expect_refused(kTraining, {kOneNode, "workload.loader.cv=1e300"}, "workload.loader.cv", "between 0 and 10");
  expect_refused(kTraining, {kOneNode, "workload.epochs=1e308"}, "workload.epochs", "at most 1e6");
  expect_refused(kTraining, {kOneNode, "workload.epochs=inf"}, "workload.epochs", "finite");
}

// A run past simulated time that no single key explains (every bucket's allreduce on 1 B/s links) is refused
// at its strategy, for every kind of strategy, never an internal error.
TEST(HostileNumbers, TrainingLongerThanSimulatedTime) {
  for (const char* st : {"ddp", "horovod", "zero", "ps", "tree"})
    expect_refused(kTraining,
                   {"cluster.nodes=2", std::string("strategies=[") + st + "]",
                    "cluster.comm.bandwidth_inter=1B/s", "cluster.comm.bandwidth_intra=1B/s"},
                   "strategies[0]", "limit of simulated time");
}

}  // namespace
