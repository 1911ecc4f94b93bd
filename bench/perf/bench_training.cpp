// Training-step benchmarks: wall time of whole simulated ResNet-50 DDP runs (figures, never assertions).
//   juwels-1024-{hierarchical,ring}   256 nodes x 4 A100 of JUWELS Booster (dragonfly+), warm-up + 1 step,
//                                     plus the 4-GPU reference; contention goes through the flow model
//                                     wherever links are shared
//   juwels-1024-hierarchical-rhd      the same with halving-doubling between nodes: far partners share the
//                                     dragonfly+ global links, so every message runs on the flow model (the
//                                     engine's slow case: max-min re-solved incrementally)
//   juwels-1024-hierarchical-double-tree  NCCL's double binary tree between nodes: pipelined 64 KiB
//                                     chunks, up to four flows per NIC, all on the flow model
//   fattree-16384-{hierarchical,ring} 4096 nodes of the same node type on a 3-level non-blocking HDR
//                                     fat-tree, synthetic data (no file-system bound)
// Columns: case, gpus, messages (collective messages simulated), flows (flows solved on the flow
// model), wall_s, rss_MB (peak resident set so far), solves (max-min re-solves of a region of the flows),
// flows_per_solve (the flows one such re-solve took, on average).
//   alps-{4096-ring,4096-hierarchical}  (--alps only) ResNet-50 bf16 DDP on 1024 nodes x 4 GH200 of
//                                     topologies/alps-gh200 (Slingshot dragonfly): rings that span groups
//                                     share local links, so the flow model runs each distinct bucket once and
//                                     replays it
//   ps-colocated-{partition,byteps,range}-N
//                                     (--ps only) ResNet-50 with sync parameter servers colocated one
//                                     per node (N servers) on N nodes x 4 A100 of JUWELS Booster, warm-up
//                                     + one step, on the flow model: `partition` sends each 8 MB chunk to
//                                     one server (incasts of 4N flows), `byteps` each layer's 4,096,000-
//                                     byte partitions to the servers their keys hash to, `range` splits
//                                     every chunk over all servers (an all-to-all of 4N^2 flows per chunk)
//   ps-colocated-range-{sync,async}-N (--ps-async only) the Horovod guide's Inception V3 scenario (4 P100 per
//                                     node, one 25 GbE NIC) with a PS colocated on each of N nodes, by range,
//                                     sync and asynchronous, warm-up + one step: asynchronous pushes are
//                                     applied and pulled back each at its own time, so the all-to-all's flows
//                                     never start or end together and every event re-solves the nodes' NICs
//   dragonfly-16384-{juwels,alps}     (--dragonfly only) the default scenario's DDP (hierarchical, NCCL's
//                                     choice between nodes: the pipelined double tree) on 4096 nodes of
//                                     JUWELS Booster's dragonfly+ grown to that size, and of alps-gh200
//                                     (bf16), one step, loading from the scenario's file system: tree edges
//                                     between groups share global links, so the flow model carries ~2 M
//                                     messages
//   memory-*                          (--memory only) the memory estimate a run is checked against before
//                                     it starts (MemoryModel) next to the peak RSS of the process,
//                                     cases in ascending size so that each one's peak is the new maximum
// Usage: bench_training [--quick | --alps | --dragonfly | --ps [NODES SHARDING] | --ps-async [NODES] |
// --memory]
// (--quick: 64 and 1024 GPUs instead of 1024 and 16384; --ps: partition on 64 and 256 nodes, byteps on 64,
// range on 16 and 32, unless given; --ps-async: 8 and 12 nodes unless given)
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "sim/config/scenario.hpp"
#include "sim/train/training.hpp"

namespace {

using namespace ddlsim;

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

void print_row(const std::string& name, const TrainingResult& r, double wall) {
  const EngineStats& s = r.stats;
  std::printf(
      "%s, %lld, %llu, %llu, %.3f, %.1f, %llu, %.0f\n", name.c_str(), static_cast<long long>(r.gpus),
      static_cast<unsigned long long>(s.messages), static_cast<unsigned long long>(s.flows), wall,
      peak_rss_mb(), static_cast<unsigned long long>(s.region_solves),
      s.region_solves > 0 ? static_cast<double>(s.region_flows) / static_cast<double>(s.region_solves) : 0.0);
}

// `algorithm`: the DDP strategy's options after `algorithm: ` (e.g. "hierarchical, inter_node: rhd").
void run_case(const std::string& name, const std::string& file, int64_t nodes, const std::string& algorithm,
              const std::vector<std::string>& extra) {
  std::vector<std::string> sets = {"workload.steps=1", "workload.warmup_steps=1",
                                   "strategies=[{name: ddp, algorithm: " + algorithm + "}]"};
  sets.insert(sets.end(), extra.begin(), extra.end());
  Scenario sc = load_scenario(file, sets);
  auto t0 = std::chrono::steady_clock::now();
  std::vector<TrainingResult> r = run_training(sc, {nodes}, TrainingOptions{});
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  print_row(name, r[0], wall);
  std::printf("  %s: step %.4f s, efficiency %.3f\n", name.c_str(), r[0].step_time_s, r[0].efficiency);
  std::fflush(stdout);
}

// PS colocated on `nodes` nodes, one server per node, warm-up + one step; sync unless `mode` says.
void ps_case(const std::string& file, int64_t nodes, const std::string& sharding,
             const std::string& mode = "") {
  std::vector<std::string> sets = {"workload.steps=1", "workload.warmup_steps=1",
                                   "strategies=[{name: ps, servers: " + std::to_string(nodes) +
                                       ", placement: colocated, sharding: " + sharding +
                                       (mode.empty() ? "" : ", mode: " + mode) + "}]"};
  Scenario sc = load_scenario(file, sets);
  auto t0 = std::chrono::steady_clock::now();
  std::vector<TrainingResult> r = run_training(sc, {nodes}, TrainingOptions{});
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string name =
      "ps-colocated-" + sharding + "-" + (mode.empty() ? "" : mode + "-") + std::to_string(nodes);
  print_row(name, r[0], wall);
  std::printf("  %s: step %.4f s\n", name.c_str(), r[0].step_time_s);
  std::fflush(stdout);
}

}  // namespace

// The memory estimate of a run and the process's peak RSS after it (one strategy, one count).
void memory_case(const std::string& name, const std::string& file, int64_t nodes,
                 const std::vector<std::string>& sets) {
  Scenario sc = load_scenario(file, sets);
  MemoryEstimate e = MemoryModel(sc, sc.strategies[0]).at(nodes);
  auto t0 = std::chrono::steady_clock::now();
  TrainingOptions opts;
  opts.jobs = 1;
  run_training(sc, {nodes}, opts);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s, tasks %.3g, estimate %.0f MB, peak rss %.0f MB, wall %.2f s\n", name.c_str(), e.tasks,
              e.bytes / 1e6, peak_rss_mb(), wall);
  std::fflush(stdout);
}

int main(int argc, char** argv) {
  bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  std::string juwels = std::string(DDLSIM_SOURCE_DIR) + "/scenarios/aach2023/resnet50-dali-cpu.yaml";
  std::printf("case, gpus, messages, flows, wall_s, rss_MB, solves, flows_per_solve\n");
  if (argc > 1 && std::strcmp(argv[1], "--ps") == 0) {
    if (argc > 2) {
      ps_case(juwels, std::stoll(argv[2]), argc > 3 ? argv[3] : "range");
      return 0;
    }
    for (int64_t nodes : {64, 256}) ps_case(juwels, nodes, "partition");
    ps_case(juwels, 64, "byteps");
    for (int64_t nodes : {16, 32}) ps_case(juwels, nodes, "range");
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--ps-async") == 0) {
    const std::string guide = std::string(DDLSIM_SOURCE_DIR) + "/scenarios/horovod-guide-128gpu.yaml";
    std::vector<int64_t> counts = {8, 12};
    if (argc > 2) counts = {std::stoll(argv[2])};
    for (int64_t nodes : counts)
      for (const char* mode : {"sync", "async"}) ps_case(guide, nodes, "range", mode);
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--memory") == 0) {
    memory_case("memory-juwels-256-ddp-13-steps", juwels, 64, {"strategies=[ddp]"});
    memory_case("memory-fattree-16384-hierarchical-2-steps", juwels, 4096,
                {"strategies=[{name: ddp, algorithm: hierarchical}]", "workload.steps=1",
                 "workload.warmup_steps=1", "cluster.max_nodes=4096", "workload.loader=synthetic",
                 "cluster.network={kind: fat-tree, levels: 3, hosts_per_leaf: 20, leaves_per_pod: 20, "
                 "link: {bandwidth: 200Gb/s, latency: 130ns}}"});
    memory_case("memory-juwels-256-ddp-2001-steps", juwels, 64, {"strategies=[ddp]", "workload.steps=2000"});
    memory_case("memory-juwels-64-ps-colocated-201-steps", juwels, 16,
                {"strategies=[{name: ps, servers: 16, placement: colocated}]", "workload.steps=200"});
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--dragonfly") == 0) {
    const std::string tree = "hierarchical, inter_node: auto";
    run_case("dragonfly-16384-juwels", juwels, 4096, tree, {"cluster.max_nodes=4096"});
    run_case("dragonfly-16384-alps", juwels, 4096, tree,
             {"cluster.max_nodes=4096", "cluster.topology=alps-gh200", "workload.precision=bf16"});
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--alps") == 0) {
    std::vector<std::string> alps = {"cluster.topology=alps-gh200", "cluster.max_nodes=4096",
                                     "cluster.comm={}", "workload.loader=synthetic",
                                     "workload.precision=bf16"};
    for (const char* a : {"ring", "hierarchical"})
      run_case(std::string("alps-4096-") + a, juwels, 1024, a, alps);
    return 0;
  }
  int64_t small = quick ? 16 : 256, big = quick ? 256 : 4096;
  std::string juwels_name = "juwels-" + std::to_string(small * 4) + "-";
  for (const char* a : {"hierarchical", "ring"}) run_case(juwels_name + a, juwels, small, a, {});
  run_case(juwels_name + "hierarchical-rhd", juwels, small, "hierarchical, inter_node: rhd", {});
  run_case(juwels_name + "hierarchical-double-tree", juwels, small, "hierarchical, inter_node: double-tree",
           {});
  // The same nodes on a non-blocking 3-level fat-tree (20-port leaves x 20 leaves per pod), large enough for
  // 4096.
  std::vector<std::string> fat_tree = {
      "cluster.max_nodes=4096", "workload.loader=synthetic",  // no shared file-system limit: comm decides
      "cluster.network={kind: fat-tree, levels: 3, hosts_per_leaf: 20, leaves_per_pod: 20, "
      "link: {bandwidth: 200Gb/s, latency: 130ns}}"};
  for (const char* a : {"hierarchical", "ring"})
    run_case(std::string("fattree-") + std::to_string(big * 4) + "-" + a, juwels, big, a, fat_tree);
  return 0;
}
