// The max-plus fast path must give exactly the flow model's time (same picosecond), whether it runs (the
// messages on a link never need more than its capacity at their standalone rates) or falls back (it detects
// an oversubscribed link and hands over to the flow model). Each
// case runs one collective twice through run_collective_workload: EngineOptions{true} and
// EngineOptions{false}.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fmt/format.h>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "sim/config/scenario.hpp"
#include "sim/train/collective.hpp"
#include "sim/train/collective_workload.hpp"

namespace ddlsim {
namespace {

// Writes `text` to a file of its own (tests may run in parallel processes) and loads it as a scenario.
Scenario scenario_from(const std::string& text) {
  static int counter = 0;
  std::string path = fmt::format("{}ddlsim_fastpath_{}_{}.yaml", ::testing::TempDir(), getpid(), counter++);
  {
    std::ofstream out(path);
    out << text;
  }
  Scenario s = load_scenario(path, {});
  std::remove(path.c_str());
  return s;
}

// Cluster bodies (indented under `cluster:`), without `nodes`.
constexpr const char* kStar = R"(
  gpus_per_node: {gpn}
  gpu: a100-40gb
  network: {{kind: star, link: {{bandwidth: 25GB/s, latency: 1us}}}})";

// 2-level fat-tree, 4 hosts per leaf, 2:1 oversubscribed (2 spines): cross-leaf traffic of more than 2 hosts
// of a leaf at once must share an uplink.
constexpr const char* kFatTree = R"(
  gpus_per_node: {gpn}
  gpu: a100-40gb
  network:
    kind: fat-tree
    levels: 2
    hosts_per_leaf: 4
    oversubscription: "2:1"
    link: {{bandwidth: 25GB/s, latency: 500ns}}
    uplink: {{bandwidth: 25GB/s, latency: 1us}})";

// 4 groups of 2 routers, 2 hosts per router (16 ports: 12 GPUs + up to 2 dedicated servers), two global
// cables per router (one cable per pair of groups), slower than the local ones.
constexpr const char* kDragonfly = R"(
  gpus_per_node: {gpn}
  gpu: a100-40gb
  network:
    kind: dragonfly
    groups: 4
    routers_per_group: 2
    hosts_per_router: 2
    global_links_per_router: 2
    link: {{bandwidth: 25GB/s, latency: 500ns}}
    local_link: {{bandwidth: 50GB/s, latency: 300ns}}
    global_link: {{bandwidth: 12.5GB/s, latency: 2us}})";

// One router per group, 2 hosts each, a global cable between every pair of the 5 groups: ring messages use
// distinct directed links, so the fast path runs on a dragonfly too (10 ports: 8 GPUs + up to 2 servers).
constexpr const char* kDragonflySparse = R"(
  gpus_per_node: {gpn}
  gpu: a100-40gb
  network:
    kind: dragonfly
    groups: 5
    routers_per_group: 1
    hosts_per_router: 2
    global_links_per_router: 4
    link: {{bandwidth: 25GB/s, latency: 500ns}}
    global_link: {{bandwidth: 12.5GB/s, latency: 2us}})";

// Node interiors: 4 GPUs on an NVLink mesh, 2 NICs behind PCIe switches (GPUs 0,1 → NIC 0; 2,3 → NIC 1).
constexpr const char* kInterior = R"(
  gpu: a100-40gb
  node:
    gpus: 4
    nics: 2
    gpu_link: {{kind: nvlink-mesh, bandwidth: 100GB/s, latency: 700ns}}
    pcie: {{bandwidth: 32GB/s, latency: 400ns}}
  network: {{kind: star, link: {{bandwidth: 200Gb/s, latency: 1us}}}})";

// The same node interiors under NCCL's protocols: sums fused with the next step (slow enough, 30 GB/s, that
// they pace it) and the hierarchical phases pipelined in 1 MiB chunks per channel.
const std::string kInteriorNccl =
    std::string(kInterior) +
    "\n  comm: {{protocols: nccl, reduce_bandwidth_gpu: 30GB/s, pipeline_chunk: 1MiB}}";

constexpr const char* kComm = R"(
  comm: {alpha_inter: 3us, alpha_intra: 1500ns, efficiency_inter: 0.9, reduce_bandwidth_gpu: 120GB/s,
         reduce_bandwidth_cpu: 15GB/s})";

enum class Path { Fast, Slow, Either };

struct Case {
  std::string name;
  std::string cluster;  // kStar, ... (formatted with gpn)
  int gpn = 1;
  int nodes = 8;
  std::string collective;  // allreduce, reduce-scatter, all-gather, broadcast
  std::string strategy;    // YAML of one strategy
  Path expect = Path::Either;
  bool comm = false;
};

std::string yaml_of(const Case& c) {
  return fmt::format(
      "name: {}\ncluster:\n  nodes: {}{}{}\nworkload: {{collective: {}, bytes: 48MB}}\n"
      "strategies:\n  - {}\n",
      c.name, c.nodes, fmt::format(fmt::runtime(c.cluster), fmt::arg("gpn", c.gpn)), c.comm ? kComm : "",
      c.collective, c.strategy);
}

struct Outcome {
  CollectiveResult fast, slow;
};

Outcome run_both(const Case& c) {
  Scenario sc = scenario_from(yaml_of(c));
  const Strategy& st = sc.strategies.at(0);
  int64_t nodes = sc.cluster.node_counts.at(0);
  return {run_collective_workload(sc, st, nodes, EngineOptions{true}),
          run_collective_workload(sc, st, nodes, EngineOptions{false})};
}

int64_t ps_of(double seconds) {
  return std::llround(seconds * 1e12);
}

void check(const Case& c) {
  SCOPED_TRACE(c.name);
  Outcome o = run_both(c);
  // The flow model never takes the fast path; the fast option takes exactly one of the two.
  EXPECT_EQ(o.slow.stats.fast_collectives, 0u);
  EXPECT_EQ(o.slow.stats.slow_collectives, 1u);
  EXPECT_EQ(o.fast.stats.fast_collectives + o.fast.stats.slow_collectives, 1u);
  // Exactly the same time, to the picosecond.
  EXPECT_EQ(ps_of(o.fast.time_s), ps_of(o.slow.time_s))
      << "fast path " << (o.fast.stats.fast_collectives ? "ran" : "fell back") << ", differs by "
      << ps_of(o.fast.time_s) - ps_of(o.slow.time_s) << " ps";
  EXPECT_EQ(o.fast.time_s, o.slow.time_s);
  // Both count every message of the plan once.
  EXPECT_EQ(o.fast.stats.messages, o.slow.stats.messages);
  if (o.fast.stats.fast_collectives) {
    EXPECT_EQ(o.fast.stats.fast_messages, o.fast.stats.messages);
  }
  if (c.expect == Path::Fast) {
    EXPECT_EQ(o.fast.stats.fast_collectives, 1u) << "expected the fast path to run";
  }
  if (c.expect == Path::Slow) {
    EXPECT_EQ(o.fast.stats.slow_collectives, 1u) << "expected a fall back";
  }
  EXPECT_GT(o.slow.time_s, 0);
  std::printf("  %-34s ranks %3lld  %-9s  %.9f s  messages %llu\n", c.name.c_str(),
              static_cast<long long>(o.fast.gpus), o.fast.stats.fast_collectives ? "fast" : "fallback",
              o.slow.time_s, static_cast<unsigned long long>(o.slow.stats.messages));
}

// Every algorithm on one fabric (colocated PS: one server per GPU).
std::vector<Case> all_algorithms(const std::string& fabric, const char* cluster, int gpn, int nodes,
                                 bool comm) {
  std::string tag = fabric + (comm ? "+comm" : "");
  int p = gpn * nodes;
  return {
      {tag + " ring", cluster, gpn, nodes, "allreduce", "ring", Path::Either, comm},
      {tag + " rhd", cluster, gpn, nodes, "allreduce", "rhd", Path::Either, comm},
      {tag + " tree", cluster, gpn, nodes, "allreduce", "tree", Path::Either, comm},
      {tag + " direct", cluster, gpn, nodes, "allreduce", "direct", Path::Either, comm},
      {tag + " hierarchical", cluster, gpn, nodes, "allreduce", "hierarchical", Path::Either, comm},
      {tag + " hierarchical rhd", cluster, gpn, nodes, "allreduce", "{name: hierarchical, inter_node: rhd}",
       Path::Either, comm},
      {tag + " hierarchical tree", cluster, gpn, nodes, "allreduce", "{name: hierarchical, inter_node: tree}",
       Path::Either, comm},
      {tag + " double-tree", cluster, gpn, nodes, "allreduce", "double-tree", Path::Either, comm},
      {tag + " hierarchical double-tree", cluster, gpn, nodes, "allreduce",
       "{name: hierarchical, inter_node: double-tree}", Path::Either, comm},
      {tag + " reduce-scatter", cluster, gpn, nodes, "reduce-scatter", "ring", Path::Either, comm},
      {tag + " all-gather", cluster, gpn, nodes, "all-gather", "ring", Path::Either, comm},
      {tag + " broadcast", cluster, gpn, nodes, "broadcast", "tree", Path::Either, comm},
      {tag + " ps k=1", cluster, gpn, nodes, "allreduce", "{name: ps, servers: 1, placement: dedicated}",
       Path::Either, comm},
      {tag + " ps k=2", cluster, gpn, nodes, "allreduce", "{name: ps, servers: 2, placement: dedicated}",
       Path::Either, comm},
      {tag + " ps colocated", cluster, gpn, nodes, "allreduce",
       fmt::format("{{name: ps, servers: {}, placement: colocated}}", p), Path::Either, comm},
  };
}

TEST(EngineFastPath, StarEveryAlgorithm) {
  for (const Case& c : all_algorithms("star", kStar, 1, 8, false)) check(c);
}

TEST(EngineFastPath, StarWithAlphaGamma) {
  for (const Case& c : all_algorithms("star", kStar, 1, 8, true)) check(c);
}

TEST(EngineFastPath, StarTwoGpusPerHostGroup) {
  // gpus_per_node 2 without interiors: every GPU still its own host; hierarchical uses pairs as "nodes".
  for (const Case& c : all_algorithms("star gpn2", kStar, 2, 4, false))
    if (c.strategy.find("ps") == std::string::npos) check(c);
}

TEST(EngineFastPath, StarTwoGpusPerHostGroupParameterServer) {
  // Without node interiors every GPU is its own node, so dedicated servers must be numbered after all GPUs,
  // not after `nodes` (with gpus_per_node 2 and 4 nodes, server0 once landed in "node 4" with gpu4 and had no
  // route). Expected: the same as 8 ranks with gpus_per_node 1, and fast == flow model.
  for (const Case& c : all_algorithms("star gpn2", kStar, 2, 4, false)) {
    if (c.strategy.find("ps") == std::string::npos) continue;
    EXPECT_NO_THROW(check(c)) << c.name;
  }
  // Dedicated PS, p = 8 GPUs, k = 2: T = 2·max(n/B, p·n/(k·B)) + 2·2l = 2·(8·48 MB/(2·25 GB/s)) + 4 us.
  try {
    Outcome o = run_both({"star gpn2 ps k=2 closed form", kStar, 2, 4, "allreduce",
                          "{name: ps, servers: 2, placement: dedicated}", Path::Either, false});
    double want = 2 * (8 * 48e6 / (2 * 25e9)) + 4e-6;
    EXPECT_NEAR(o.slow.time_s, want, want * 1e-9);
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
  }
}

TEST(EngineFastPath, StarNonPowerOfTwo) {
  for (int nodes : {3, 5, 6, 7}) {
    std::string tag = fmt::format("star p={}", nodes);
    check({tag + " rhd", kStar, 1, nodes, "allreduce", "rhd", Path::Either, false});
    check({tag + " rhd+comm", kStar, 1, nodes, "allreduce", "rhd", Path::Either, true});
    check({tag + " ring", kStar, 1, nodes, "allreduce", "ring", Path::Fast, false});
    check({tag + " tree", kStar, 1, nodes, "allreduce", "tree", Path::Either, false});
  }
}

TEST(EngineFastPath, StarKnownPaths) {
  // Ring and power-of-two rhd on a star never put two messages on one link at once: the fast path runs.
  check({"star ring (fast)", kStar, 1, 8, "allreduce", "ring", Path::Fast, false});
  check({"star ring+comm (fast)", kStar, 1, 8, "allreduce", "ring", Path::Fast, true});
  check({"star rhd (fast)", kStar, 1, 8, "allreduce", "rhd", Path::Fast, false});
  check({"star reduce-scatter (fast)", kStar, 1, 8, "reduce-scatter", "ring", Path::Fast, false});
  check({"star all-gather (fast)", kStar, 1, 8, "all-gather", "ring", Path::Fast, false});
  // Direct sends p-1 messages out of every uplink at once; a PS with k < p servers has p flows into a server:
  // both share links and must fall back.
  check({"star direct (fallback)", kStar, 1, 8, "allreduce", "direct", Path::Slow, false});
  check({"star ps k=2 (fallback)", kStar, 1, 8, "allreduce", "{name: ps, servers: 2, placement: dedicated}",
         Path::Slow, false});
}

TEST(EngineFastPath, OversubscribedFatTree) {
  // 16 GPUs, 4 leaves of 4, 2 spines.
  for (const Case& c : all_algorithms("fat-tree 2:1", kFatTree, 1, 16, false)) check(c);
  for (const Case& c : all_algorithms("fat-tree 2:1", kFatTree, 1, 16, true)) check(c);
  // With 4 GPUs per "node" (one node per leaf) the hierarchical inter-node phase runs 4 rings at once, all
  // crossing from leaf i to leaf i+1 over 2 uplinks: ring flows share uplinks, the fast path must fall back.
  check({"fat-tree hierarchical shared uplinks", kFatTree, 4, 4, "allreduce", "hierarchical", Path::Slow,
         false});
  check({"fat-tree hierarchical shared uplinks+comm", kFatTree, 4, 4, "allreduce", "hierarchical", Path::Slow,
         true});
  // rhd's first exchange sends all 4 hosts of leaf 0 to leaf 2 at once: 4 flows on 2 uplinks.
  check({"fat-tree rhd shared uplinks", kFatTree, 1, 16, "allreduce", "rhd", Path::Slow, false});
}

TEST(EngineFastPath, MultipathForcesTheFlowModel) {
  // Splitting a message over several routes is not a max-plus recursion: the fast path declines.
  std::string cluster = std::string(kFatTree) + "\n  comm: {{multipath: 2}}";
  check({"fat-tree ring multipath", cluster, 1, 16, "allreduce", "ring", Path::Slow, false});
}

TEST(EngineFastPath, Dragonfly) {
  for (const Case& c : all_algorithms("dragonfly", kDragonfly, 1, 12, false)) check(c);
  for (const Case& c : all_algorithms("dragonfly", kDragonfly, 1, 12, true)) check(c);
  check({"dragonfly rhd p=8", kDragonfly, 1, 8, "allreduce", "rhd", Path::Either, false});
  // In the dense layout minimal routes of different ring messages share local links (e.g. 3→4 and 5→6 both
  // cross g2.r1→g2.r0), but 50 GB/s carries both (12.5 GB/s behind a global cable, 25 GB/s inside a group):
  // the ring runs on the fast path by capacity; with one router per group no link is shared at all.
  check({"dragonfly ring shared local links (fast)", kDragonfly, 1, 12, "allreduce", "ring", Path::Fast,
         false});
  check({"dragonfly ring+comm shared local links (fast)", kDragonfly, 1, 12, "allreduce", "ring", Path::Fast,
         true});
  for (const Case& c : all_algorithms("dragonfly sparse", kDragonflySparse, 1, 8, false)) check(c);
  for (const Case& c : all_algorithms("dragonfly sparse", kDragonflySparse, 1, 8, true)) check(c);
  check({"dragonfly sparse ring (fast)", kDragonflySparse, 1, 8, "allreduce", "ring", Path::Fast, true});
}

TEST(EngineFastPath, NodeInteriors) {
  // 4 nodes x 4 GPUs: intra-node messages ride NVLink, inter-node ones PCIe → NIC → star → NIC → PCIe.
  for (const Case& c : all_algorithms("nodes", kInterior, 4, 4, false)) check(c);
  for (const Case& c : all_algorithms("nodes", kInterior, 4, 4, true)) check(c);
  check({"nodes x3 rhd", kInterior, 4, 3, "allreduce", "rhd", Path::Either, false});
  check({"nodes x2 ring", kInterior, 4, 2, "allreduce", "ring", Path::Either, true});
}

TEST(EngineFastPath, NcclFusedSumsAndPipelinedPhases) {
  // Carried sums pace the next round's messages and the pipelined hierarchical plan streams its chunks: the
  // fast path must still land on the flow model's picosecond, wherever it runs.
  const std::pair<const char*, const char*> strategies[] = {
      {"ring", "ring"},
      {"hierarchical", "hierarchical"},
      {"hierarchical auto", "{name: hierarchical, inter_node: auto}"},
      {"hierarchical double-tree", "{name: hierarchical, inter_node: double-tree}"},
      {"double-tree", "double-tree"},
      {"tree", "tree"}};
  for (int nodes : {2, 3, 4}) {
    std::string tag = fmt::format("nccl x{} ", nodes);
    for (const auto& [name, st] : strategies)
      check({tag + name, kInteriorNccl, 4, nodes, "allreduce", st, Path::Either, false});
    check({tag + "reduce-scatter", kInteriorNccl, 4, nodes, "reduce-scatter", "ring", Path::Either, false});
  }
}

TEST(EngineFastPath, RandomShapesAgreeToThePicosecond) {
  // Odd sizes, bandwidths and latencies (so every message time rounds), random rank counts, with and without
  // α/γ, on a star and on node interiors: wherever the fast path runs it must land on the flow model's
  // picosecond. Seeded: the same cases every run.
  std::mt19937_64 rng(20240611);
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const char* strategies[] = {"ring", "rhd", "hierarchical", "tree"};
  int fast_runs = 0;
  for (int i = 0; i < 48; ++i) {
    bool interior = i % 2 == 1;
    int gpn = interior ? pick(2, 4) : pick(1, 3);
    int nodes = pick(1, interior ? 4 : 9);
    if (gpn * nodes < 2) nodes = 2;
    std::string link =
        fmt::format("{{bandwidth: {:.4f}GB/s, latency: {}ns}}", uniform(5, 50), pick(50, 3000));
    std::string cluster =
        interior
            ? fmt::format(
                  "\n  gpu: a100-40gb\n  node: {{gpus: {}, nics: {}, gpu_link: {{kind: nvlink-mesh, "
                  "bandwidth: {:.3f}GB/s, latency: {}ns}}, pcie: {{bandwidth: {:.3f}GB/s, latency: {}ns}}}}"
                  "\n  network: {{kind: star, link: {}}}",
                  gpn, pick(1, gpn), uniform(50, 300), pick(100, 900), uniform(16, 64), pick(100, 900), link)
            : fmt::format("\n  gpus_per_node: {}\n  gpu: a100-40gb\n  network: {{kind: star, link: {}}}", gpn,
                          link);
    if (i % 3 == 0)
      cluster +=
          fmt::format("\n  comm: {{alpha_inter: {}ns, alpha_intra: {}ns, reduce_bandwidth_gpu: {:.2f}GB/s}}",
                      pick(0, 5000), pick(0, 2000), uniform(20, 200));
    // Escape braces: the cluster text goes through fmt once more in yaml_of.
    std::string escaped;
    for (char ch : cluster) escaped += ch == '{' ? "{{" : ch == '}' ? "}}" : std::string(1, ch);
    std::string collective = i % 7 == 3 ? "reduce-scatter" : i % 7 == 5 ? "all-gather" : "allreduce";
    std::string strategy = collective == "allreduce" ? strategies[i % 4] : "ring";
    Case c{
        fmt::format("random #{} {} gpn={} nodes={}{}", i, strategy, gpn, nodes, interior ? " interior" : ""),
        escaped,
        gpn,
        nodes,
        collective,
        strategy,
        Path::Either,
        false};
    // yaml_of fixes 48 MB; use an odd byte count instead.
    std::string text = yaml_of(c);
    size_t at = text.find("48MB");
    text.replace(at, 4, fmt::format("{}B", pick(1000, 90'000'000)));
    Scenario odd = scenario_from(text);
    SCOPED_TRACE(c.name);
    CollectiveResult fast = run_collective_workload(odd, odd.strategies[0], nodes, EngineOptions{true});
    CollectiveResult slow = run_collective_workload(odd, odd.strategies[0], nodes, EngineOptions{false});
    EXPECT_EQ(ps_of(fast.time_s), ps_of(slow.time_s))
        << (fast.stats.fast_collectives ? "fast path ran" : "fell back");
    EXPECT_EQ(fast.stats.messages, slow.stats.messages);
    fast_runs += static_cast<int>(fast.stats.fast_collectives);
  }
  EXPECT_GT(fast_runs, 10);  // the comparison is only worth something where the fast path ran
  std::printf("  random shapes: fast path ran in %d of 48\n", fast_runs);
}

TEST(EngineFastPath, SingleRankIsFree) {
  // p = 1: nothing to exchange; both paths end at time 0 (or at least agree).
  Case c{"star p=1 ring", kStar, 1, 1, "allreduce", "ring", Path::Either, false};
  Outcome o = run_both(c);
  EXPECT_EQ(o.fast.time_s, o.slow.time_s);
  EXPECT_EQ(o.slow.time_s, 0.0);
}

TEST(EngineFastPath, MessageCountsMatchThePlans) {
  // ring: 2(p-1) rounds of p messages; direct: p(p-1); rhd (p = 2^k): 2·log2(p) rounds of p messages.
  Outcome ring = run_both({"ring", kStar, 1, 8, "allreduce", "ring", Path::Either, false});
  EXPECT_EQ(ring.fast.stats.messages, 2u * 7 * 8);
  Outcome direct = run_both({"direct", kStar, 1, 8, "allreduce", "direct", Path::Either, false});
  EXPECT_EQ(direct.slow.stats.messages, 8u * 7);
  Outcome rhd = run_both({"rhd", kStar, 1, 8, "allreduce", "rhd", Path::Either, false});
  EXPECT_EQ(rhd.fast.stats.messages, 2u * 3 * 8);
  for (uint32_t p : {1u, 2u, 6u, 8u}) {
    EXPECT_EQ(make_plan({Algorithm::Ring, p, 1, 0, 1e6})->message_count(), 2ull * (p - 1) * p);
    EXPECT_EQ(make_plan({Algorithm::Direct, p, 1, 0, 1e6})->message_count(), 1ull * p * (p - 1));
  }
}

TEST(CollectivePlans, AlphaBetaEstimate) {
  // Ring: 2(p-1) rounds, each member sends and receives n/p: T = 2(p-1)·(α + n/(p·B)).
  // Double tree on 2 ranks: C+1 rounds; the first and last move one chunk c = n/(2C), the others two.
  // Chunk 0 pays α up (round 0) and down (round 1); the chunks behind it stream (no α):
  // T = 2·α + 2C·c/B = 2·α + n/B.
  const double n = 64e6, alpha = 5e-6, rate = 20e9;
  for (uint32_t p : {2u, 5u, 16u}) {
    double want = 2.0 * (p - 1) * (alpha + n / (p * rate));
    EXPECT_NEAR(estimate_seconds(*make_plan({Algorithm::Ring, p, 1, 0, n}), alpha, rate), want, want * 1e-12);
  }
  auto tree = make_plan({Algorithm::DoubleTree, 2, 1, 0, n});
  double chunks = tree->rounds() - 1.0;
  EXPECT_EQ(chunks, std::ceil(n / 2 / (512 * 1024.0)));
  double want = 2 * alpha + n / rate;
  EXPECT_NEAR(estimate_seconds(*tree, alpha, rate), want, want * 1e-12);
}

TEST(CollectivePlans, DoubleTreeShape) {
  // NCCL's double binary tree on p ranks, n bytes: each tree carries n/2 over its p-1 edges, up and down, so
  // the plan moves 2·2(p-1)·n/2 = 2(p-1)·n bytes in all, no rank sends more than 2n (parent + two children in
  // the tree where it is inner, its parent in the other) and every rank is inner in one of the two trees.
  // Every round, what each rank receives is what was sent to it.
  const double n = 100e6;
  for (uint32_t p : {2u, 3u, 4u, 5u, 7u, 8u, 13u, 16u, 31u, 64u, 100u, 256u}) {
    SCOPED_TRACE(p);
    auto plan = make_plan({Algorithm::DoubleTree, p, 1, 0, n});
    std::vector<double> sent(p, 0);
    std::vector<uint32_t> to(p), inner_rounds(p, 0);
    std::vector<Send> out;
    double total = 0;
    for (uint32_t s = 0; s < plan->rounds(); ++s) {
      std::fill(to.begin(), to.end(), 0u);
      for (uint32_t r = 0; r < p; ++r) {
        out.clear();
        plan->sends(r, s, out);
        for (const Send& m : out) {
          ASSERT_LT(m.peer, p);
          ASSERT_NE(m.peer, r);
          ++to[m.peer];
          sent[r] += m.bytes;
          total += m.bytes;
        }
        if (out.size() >= 2) ++inner_rounds[r];  // sends to a child (and its parent) in one round
      }
      for (uint32_t r = 0; r < p; ++r)
        ASSERT_EQ(plan->receives(r, s), to[r]) << "rank " << r << " round " << s;
    }
    EXPECT_NEAR(total, 2.0 * (p - 1) * n, 2.0 * (p - 1) * n * 1e-12);
    for (uint32_t r = 0; r < p; ++r) {
      EXPECT_LE(sent[r], 2 * n * (1 + 1e-12)) << "rank " << r;
      EXPECT_GT(inner_rounds[r], 0u) << "rank " << r << " is a leaf in both trees";
    }
  }
}

}  // namespace
}  // namespace ddlsim
