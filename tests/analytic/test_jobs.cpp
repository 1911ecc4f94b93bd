// Several jobs on one machine (scenario form with `jobs:`). Each job: a 4-layer model of P = 2.5e6
// parameters per layer (10 MB of FP32 gradients), 19.5 GFLOP forward per sample per layer on an A100 at
// efficiency 1 (1 ms forward, 2 ms backward per layer), batch 1, synthetic data, no jitter, 3 measured steps.
// Hosts are single GPUs (gpus_per_node 1) on 25 GB/s cables with 1 us latency.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "sim/config/scenario.hpp"
#include "sim/train/jobs.hpp"
#include "tests/support/cli.hpp"

using namespace ddlsim;

namespace {

const char* kWorkload =
    "{model: {name: four-layers, layers: [{name: l0, params: 2500000, forward_flops: 19.5GFLOP}, "
    "{name: l1, params: 2500000, forward_flops: 19.5GFLOP}, {name: l2, params: 2500000, forward_flops: "
    "19.5GFLOP}, {name: l3, params: 2500000, forward_flops: 19.5GFLOP}]}, batch_per_gpu: 1, precision: fp32, "
    "steps: 3, compute: {efficiency: 1}}";

std::string write_scenario(const std::string& network, int nodes, const std::string& jobs) {
  static int counter = 0;
  std::string path =
      (std::filesystem::temp_directory_path() / fmt::format("ddlsim-jobs-{}-{}.yaml", getpid(), counter++))
          .string();
  std::ofstream(path) << fmt::format(
      "name: jobs\ncluster: {{nodes: {}, gpus_per_node: 1, gpu: a100-40gb, network: {}}}\njobs:\n{}", nodes,
      network, jobs);
  return path;
}

Scenario scenario(const std::string& network, int nodes, const std::string& jobs) {
  std::string path = write_scenario(network, nodes, jobs);
  Scenario s = load_scenario(path, {});
  std::filesystem::remove(path);
  return s;
}

std::string job(const std::string& name, const std::string& strategy, const std::string& placement,
                int nodes = 0) {
  return fmt::format("  - {{name: {}, workload: {}, strategy: {}, placement: {}{}}}\n", name, kWorkload,
                     strategy, placement, nodes > 0 ? fmt::format(", nodes: {}", nodes) : "");
}

TrainingOptions one_thread() {
  TrainingOptions o;
  o.jobs = 1;
  return o;
}

}  // namespace

TEST(Jobs, PlacementsTakeFreeNodesInJobOrder) {
  // 16 nodes: the explicit job first (nodes 0, 1), then in order: contiguous 4 → the first run of 4 free
  // (2-5); spread 4 over the 10 free ones F = 6..15 → F[floor(i·10/4)] = F[0, 2, 5, 7] = 6, 8, 11, 13;
  // random 2 from the 6 left, with the seed.
  Scenario sc = scenario("{kind: star, link: {bandwidth: 25GB/s, latency: 1us}}", 16,
                         job("a", "ddp", "contiguous", 4) + job("b", "ddp", "spread", 4) +
                             job("c", "ddp", "random", 2) + job("d", "ddp", "[1, 0]"));
  std::vector<std::vector<int64_t>> p = place_jobs(sc);
  EXPECT_EQ(p[3], (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(p[0], (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(p[1], (std::vector<int64_t>{6, 8, 11, 13}));
  ASSERT_EQ(p[2].size(), 2u);
  for (int64_t k : p[2]) EXPECT_TRUE(k == 7 || k == 9 || k == 10 || k == 12 || k == 14 || k == 15) << k;
  EXPECT_EQ(place_jobs(sc), p);  // the same draw every time
  // Background traffic without nodes takes every node the others leave, after them, whatever its place in
  // the list.
  Scenario rest =
      scenario("{kind: star, link: {bandwidth: 25GB/s, latency: 1us}}", 8,
               "  - {name: bg, background: {load: 0.5, duration: 1ms}}\n" + job("a", "ddp", "spread", 3));
  std::vector<std::vector<int64_t>> q = place_jobs(rest);
  EXPECT_EQ(q[1], (std::vector<int64_t>{0, 2, 5}));  // F[floor(i·8/3)] = 0, 2, 5
  EXPECT_EQ(q[0], (std::vector<int64_t>{1, 3, 4, 6, 7}));
}

TEST(Jobs, DisjointJobsOnANonBlockingFatTreeAreNotSlowed) {
  // Two leaves of 4 hosts each, 4 uplinks per leaf (non-blocking): a ring job on leaf 0, a PS job on
  // leaf 1. No link carries both jobs' flows, so each job's flows get exactly the rates they get alone:
  // slowdown 1, exactly.
  Scenario sc = scenario(
      "{kind: fat-tree, levels: 2, hosts_per_leaf: 4, leaf_uplinks: 4, link: {bandwidth: 25GB/s, latency: "
      "1us}}",
      8,
      job("ring", "ddp", "contiguous", 4) +
          job("ps", "{name: ps, servers: 4, placement: colocated}", "contiguous", 4));
  JobsOutcome o = run_jobs(sc, one_thread());
  ASSERT_EQ(o.jobs.size(), 2u);
  for (const JobResult& r : o.jobs) {
    SCOPED_TRACE(r.job);
    EXPECT_GT(r.step_alone_s, 0);
    EXPECT_EQ(r.step_shared_s, r.step_alone_s);
    EXPECT_EQ(r.slowdown, 1.0);
  }
}

TEST(Jobs, TwoRingJobsForcedOntoOneLinkEachGetHalfOfIt) {
  // Two leaves of 2 hosts, one 25 GB/s uplink per leaf. Job a on nodes {0, 2}, job b on {1, 3}: identical
  // 2-rank rings, so their messages cross leaf 0's and leaf 1's uplinks at the same instants, two flows per
  // uplink direction, each at 25/2 GB/s by max-min. That is exactly the job alone on the same fabric with
  // every link at 12.5 GB/s: shared step time (25 GB/s, two jobs) = alone step time (12.5 GB/s, one job).
  const char* fabric =
      "{{kind: fat-tree, levels: 2, hosts_per_leaf: 2, leaf_uplinks: 1, link: {{bandwidth: {}, latency: "
      "1us}}}}";
  Scenario shared = scenario(fmt::format(fmt::runtime(fabric), "25GB/s"), 4,
                             job("a", "ring", "[0, 2]") + job("b", "ring", "[1, 3]"));
  Scenario half = scenario(fmt::format(fmt::runtime(fabric), "12.5GB/s"), 4, job("a", "ring", "[0, 2]"));
  JobsOutcome s = run_jobs(shared, one_thread());
  JobsOutcome h = run_jobs(half, one_thread());
  EXPECT_NEAR(s.jobs[0].step_shared_s, h.jobs[0].step_alone_s, 1e-9 * h.jobs[0].step_alone_s);
  EXPECT_NEAR(s.jobs[1].step_shared_s, h.jobs[0].step_alone_s, 1e-9 * h.jobs[0].step_alone_s);
  EXPECT_GT(s.jobs[0].slowdown, 1.01);  // the gradient allreduce is exposed: the sharing shows
}

TEST(Jobs, ResultsDoNotDependOnThreads) {
  Scenario sc = scenario(
      "{kind: fat-tree, levels: 2, hosts_per_leaf: 2, leaf_uplinks: 1, link: {bandwidth: 25GB/s, latency: "
      "1us}}",
      4,
      job("a", "ring", "spread", 2) + job("b", "{name: ps, servers: 1, placement: colocated}", "random", 2));
  TrainingOptions two;
  two.jobs = 2;
  JobsOutcome a = run_jobs(sc, one_thread()), b = run_jobs(sc, two);
  for (size_t j = 0; j < 2; ++j) {
    EXPECT_EQ(a.jobs[j].step_shared_s, b.jobs[j].step_shared_s);
    EXPECT_EQ(a.jobs[j].step_alone_s, b.jobs[j].step_alone_s);
  }
}

TEST(Jobs, BadPlacementsNameFileLineAndKey) {
  const std::string star = "{kind: star, link: {bandwidth: 25GB/s, latency: 1us}}";
  auto expect_error = [&](const std::string& jobs, int line, const std::string& key,
                          const std::string& text) {
    std::string path = write_scenario(star, 4, jobs);
    auto o = ddlsim_test::run_ddlsim("run '" + path + "'", ddlsim_test::Capture::Stderr);
    std::filesystem::remove(path);
    EXPECT_EQ(o.status, 2) << o.out;
    EXPECT_NE(o.out.find(fmt::format("{}:{}:", path, line)), std::string::npos) << o.out;
    EXPECT_NE(o.out.find(key + ": " + text), std::string::npos) << o.out;
    EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 1) << o.out;
  };
  expect_error(job("a", "ddp", "[0, 1]") + job("b", "ddp", "[1, 2]"), 5, "jobs[1].placement",
               "node 1 is a's too");
  expect_error(job("a", "ddp", "contiguous", 3) + job("b", "ddp", "spread", 2), 5, "jobs[1].nodes",
               "the jobs need 5 nodes so far, the machine has 4");
  expect_error(job("a", "ddp", "scattered", 2), 4, "jobs[0].placement",
               "unknown placement \"scattered\" (contiguous, spread, random or a list of node indices)");
  expect_error(job("a", "ddp", "[0, 7]"), 4, "jobs[0].placement",
               "node 7 is not on the machine (nodes 0..3)");
}

TEST(Jobs, BackgroundMessagesAloneTakeLatencyPlusSizeOverRate) {
  // Star: background traffic on nodes 2, 3 (each sends 4 MB to the other every m / (0.5 · 25 GB/s) = 320 us,
  // so its messages never overlap on a cable), a ring job on nodes 0, 1. Each message alone on its cables:
  // 2 · 1 us + 4e6 / 25e9 s = 162 us; the ring job shares no link with it: slowdown 1, exactly.
  Scenario sc =
      scenario("{kind: star, link: {bandwidth: 25GB/s, latency: 1us}}", 4,
               job("train", "ring", "[0, 1]") +
                   "  - {name: busy, background: {pattern: uniform, load: 0.5, message: 4MB, duration: "
                   "10ms}, placement: [2, 3]}\n");
  JobsOutcome o = run_jobs(sc, one_thread());
  ASSERT_EQ(o.jobs.size(), 2u);
  EXPECT_EQ(o.jobs[0].slowdown, 1.0);
  EXPECT_NEAR(o.jobs[1].step_alone_s, 2e-6 + 4e6 / 25e9, 1e-12);
  EXPECT_EQ(o.jobs[1].step_shared_s, o.jobs[1].step_alone_s);
}

TEST(Jobs, BackgroundLoadOnASharedUplinkSlowsATrainingJobMoreAsItGrows) {
  // Two leaves of 4 hosts, one 25 GB/s uplink each: a ring job on nodes 0 and 4 crosses both uplinks; all-to-
  // all background traffic among the other 6 nodes sends 3 of every 5 messages across them too, for longer
  // than the job runs. Offered loads the uplinks can carry (at 0.4: 3 nodes x 0.4 x 25 GB/s x 3/5 = 18 GB/s
  // of 25): the more of them, the less of the uplinks the ring gets by max-min: 1 < slowdown(0.1) <
  // slowdown(0.2) < slowdown(0.4).
  auto slowdown = [&](double load) {
    Scenario sc = scenario(
        "{kind: fat-tree, levels: 2, hosts_per_leaf: 4, leaf_uplinks: 1, link: {bandwidth: 25GB/s, latency: "
        "1us}}",
        8,
        job("train", "ring", "[0, 4]") +
            fmt::format(
                "  - {{name: busy, background: {{pattern: all-to-all, load: {}, message: 1MB, duration: "
                "150ms}}, placement: [1, 2, 3, 5, 6, 7]}}\n",
                load));
    return run_jobs(sc, one_thread()).jobs[0].slowdown;
  };
  double a = slowdown(0.1), b = slowdown(0.2), c = slowdown(0.4);
  EXPECT_GT(a, 1.0);
  EXPECT_GT(b, a);
  EXPECT_GT(c, b);
}

TEST(Jobs, TraceHasAProcessPerJob) {
  const std::string path = write_scenario("{kind: star, link: {bandwidth: 25GB/s, latency: 1us}}", 4,
                                          job("first", "ring", "[0, 1]") + job("second", "ddp", "[2, 3]"));
  const std::string trace = path + ".trace.json";
  auto o = ddlsim_test::run_ddlsim("run '" + path + "' --trace '" + trace + "'");
  EXPECT_EQ(o.status, 0) << o.out;
  std::ifstream in(trace);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  std::filesystem::remove(trace);
  EXPECT_NE(text.find(R"({"name":"process_name","ph":"M","pid":1,"args":{"name":"first"}})"),
            std::string::npos);
  EXPECT_NE(text.find(R"({"name":"process_name","ph":"M","pid":2,"args":{"name":"second"}})"),
            std::string::npos);
  EXPECT_NE(text.find(R"("pid":2,"tid":2)"), std::string::npos);  // worker 1 of the second job
}

TEST(Jobs, PsIncastSlowsANeighbourOnItsServersLeafByTheClosedForm) {
  // Two leaves of 4 hosts, one uplink each, every link B = 25 GB/s. PS job on nodes 0, 5, 6, 7 with one
  // server, colocated on node 0 (leaf 0): a one-layer model of 100 GB of gradients (chunk_size 100GB: one
  // push flow per worker). Its initial broadcast of the weights ends within 3 x 100 GB / B = 12 s; then the
  // k = 3 workers of leaf 1 push into node 0 for at least 100 GB / (B/4) = 16 s through leaf 1's uplink and
  // spine > leaf 0. The ring job on nodes 1 (leaf 0) and 4 (leaf 1) starts at 12.5 s: its flow 4 -> 1
  // shares those two links with the 3 pushes, each at B/(k+1) by max-min; its flow 1 -> 4 runs alone at B.
  // A ring round ends when both of a member's messages have, so every round takes (G/2)/(B/(k+1)): the job's
  // steps equal those of the ring alone with every link at B/(k+1) = 6.25 GB/s, and its gradient allreduce
  // (G = 4 layers x 10 MB, 2 rounds of G/2) takes 2·(G/2)·((k+1) − 1)/B = k·G/B = 4.8 ms more per step.
  const char* fabric =
      "{{kind: fat-tree, levels: 2, hosts_per_leaf: 4, leaf_uplinks: 1, link: {{bandwidth: {}, latency: "
      "1us}}}}";
  const std::string ps =
      "  - {name: ps, placement: [0, 5, 6, 7], strategy: {name: ps, servers: 1, placement: colocated, "
      "chunk_size: 100GB}, workload: {model: {name: big, layers: [{name: w, params: 25000000000, "
      "forward_flops: 19.5GFLOP}]}, batch_per_gpu: 1, precision: fp32, steps: 1, compute: {efficiency: "
      "1}}}\n";
  std::string ring = job("ring", "ring", "[1, 4]");
  ring.insert(ring.size() - 2, ", start: 12.5s");
  Scenario shared = scenario(fmt::format(fmt::runtime(fabric), "25GB/s"), 8, ps + ring);
  Scenario slow = scenario(fmt::format(fmt::runtime(fabric), "6.25GB/s"), 8, job("ring", "ring", "[1, 4]"));
  JobsOutcome s = run_jobs(shared, one_thread());
  JobsOutcome r = run_jobs(slow, one_thread());
  const JobResult& n = s.jobs.at(1);
  EXPECT_NEAR(n.step_shared_s, r.jobs.at(0).step_alone_s, 1e-9 * n.step_shared_s);
  EXPECT_NEAR(n.step_shared_s - n.step_alone_s, 3 * 40e6 / 25e9, 1e-9);
}

TEST(Jobs, NvlsJobsReduceInTheirOwnNodesSwitch) {
  // Two 1-node jobs on two nodes of 4 H100s whose NVSwitches reduce, each allreducing with NVLS: each job's
  // collective runs through its own node's switch, so the two jobs are alike and never share a link
  // (through node 0's switch the second job's messages would cross the fabric).
  const std::string cluster =
      "{nodes: 2, gpu: h100, node: {gpus: 4, nics: 1, gpu_link: {kind: nvswitch, bandwidth: 100GB/s, "
      "latency: "
      "1us, nvls: true}, pcie: {bandwidth: 50GB/s, latency: 1us}}, network: {kind: star, link: {bandwidth: "
      "25GB/s, latency: 1us}}}";
  std::string path =
      (std::filesystem::temp_directory_path() / fmt::format("ddlsim-jobs-nvls-{}.yaml", getpid())).string();
  std::ofstream(path) << "name: jobs\ncluster: " << cluster << "\njobs:\n"
                      << job("a", "{name: ddp, algorithm: nvls}", "[0]")
                      << job("b", "{name: ddp, algorithm: nvls}", "[1]");
  Scenario sc = load_scenario(path, {});
  std::filesystem::remove(path);
  JobsOutcome o = run_jobs(sc, one_thread());
  ASSERT_EQ(o.jobs.size(), 2u);
  EXPECT_EQ(o.jobs[0].step_alone_s, o.jobs[1].step_alone_s);
  for (const auto& r : o.jobs) EXPECT_EQ(r.step_shared_s, r.step_alone_s);
}
