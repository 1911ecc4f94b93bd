// Engine benchmarks: plain timers printing one CSV line per case (figures, never assertions).
//   ring-1024-fast / ring-1024-flow   ring allreduce of 100 MB over 1024 ranks on a star, max-plus fast path
//   vs
//                                     the flow model message by message (ddlsim run --no-fast)
//   ring-16384-fast                   the same over 16384 ranks (fast path only)
//   flownet-random-L-K                raw FlowNetwork: random flows on L random links, K of them active at
//   once
//                                     (closed loop); messages = flow events (one start or one completion)
//   ps-incast-1024x8-flow             PS allreduce, 1024 workers pushing to and pulling from 8 dedicated
//   servers
//   alps-ring-{256,1024}-fast / -flow ring allreduce of 100 MB over 64 and 256 nodes x 4 GH200 of
//   topologies/alps-gh200
//                                     (Slingshot dragonfly, adaptive routing, NVLink inside nodes; no link
//                                     oversubscribed, so the fast path takes it) vs the flow model: the same
//                                     simulated time
//   dragonfly-ring-256-fast / -flow   ring allreduce of 100 MB over 256 hosts of a dragonfly (8 groups x 4
//                                     routers x 8 hosts, 25 GB/s host links, 50 GB/s local, 12.5 GB/s
//                                     global): ring messages share local links within their capacity (fast
//                                     path by capacity)
//   ps-incast-...-fattree / 512x32    the same on a 2:1 fat-tree (16 hosts per leaf), and 512 x 32 servers
//   ps-train-resnet50-...             one ResNet-50 training step with PS on JUWELS Booster: 64 nodes (256
//                                     GPUs) with 4 dedicated servers, 16 nodes with one colocated per node;
//                                     messages = flows
// rss_MB is the process's peak resident set so far (getrusage), so cases run from small to large.
// Usage: bench_engine [--quick] [TEXT]   (--quick shrinks every case, for smoke tests; TEXT runs only the
// cases whose name contains it)
#include <sys/resource.h>
#include <unistd.h>

#include <fmt/format.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "sim/config/scenario.hpp"
#include "sim/net/flow_network.hpp"
#include "sim/train/collective_workload.hpp"
#include "sim/train/training.hpp"

namespace {

using namespace ddlsim;
using Clock = std::chrono::steady_clock;

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

void print_line(const std::string& name, int64_t ranks, uint64_t messages, double wall) {
  std::printf("%s, %lld, %llu, %.3f, %.4g, %.1f\n", name.c_str(), static_cast<long long>(ranks),
              static_cast<unsigned long long>(messages), wall,
              wall > 0 ? static_cast<double>(messages) / wall : 0.0, peak_rss_mb());
  std::fflush(stdout);
}

Scenario scenario_from(const std::string& text) {
  std::string path = fmt::format("/tmp/ddlsim_bench_{}.yaml", getpid());
  {
    std::ofstream out(path);
    out << text;
  }
  Scenario s = load_scenario(path, {});
  std::remove(path.c_str());
  return s;
}

const char* const kStar = "{kind: star, link: {bandwidth: 25GB/s, latency: 1us}}";
// Two levels, 16 hosts per leaf, 2:1 oversubscribed uplinks.
const char* const kFatTree =
    "{kind: fat-tree, levels: 2, hosts_per_leaf: 16, oversubscription: 2, link: {bandwidth: 25GB/s, latency: "
    "1us}}";

std::string collective_scenario(int64_t ranks, const std::string& strategy, const std::string& network) {
  return fmt::format(
      "name: bench\n"
      "cluster:\n"
      "  nodes: {}\n"
      "  gpus_per_node: 1\n"
      "  gpu: a100-40gb\n"
      "  network: {}\n"
      "workload: {{collective: allreduce, bytes: 100MB}}\n"
      "strategies:\n  - {}\n",
      ranks, network, strategy);
}

std::string alps_scenario(int64_t nodes, const std::string& strategy) {
  return fmt::format(
      "name: bench\n"
      "cluster: {{topology: {}/topologies/alps-gh200.yaml, nodes: {}}}\n"
      "workload: {{collective: allreduce, bytes: 100MB}}\n"
      "strategies:\n  - {}\n",
      DDLSIM_SOURCE_DIR, nodes, strategy);
}

std::string dragonfly_scenario(int64_t nodes, const std::string& strategy) {
  return fmt::format(
      "name: bench\n"
      "cluster:\n"
      "  nodes: {}\n"
      "  gpus_per_node: 1\n"
      "  gpu: a100-40gb\n"
      "  network: {{kind: dragonfly, groups: 8, routers_per_group: 4, hosts_per_router: 8,\n"
      "            global_links_per_router: 2, link: {{bandwidth: 25GB/s, latency: 500ns}},\n"
      "            local_link: {{bandwidth: 50GB/s, latency: 300ns}},\n"
      "            global_link: {{bandwidth: 12.5GB/s, latency: 2us}}}}\n"
      "workload: {{collective: allreduce, bytes: 100MB}}\n"
      "strategies:\n  - {}\n",
      nodes, strategy);
}

enum class Fabric { Star, FatTree, Alps, Dragonfly };

// `nodes` of the scenario (ranks on a star, fat-tree or the dragonfly; nodes of 4 GPUs on alps).
void collective_case(const std::string& name, int64_t nodes, const std::string& strategy, bool fast,
                     Fabric fabric = Fabric::Star) {
  Scenario sc =
      scenario_from(fabric == Fabric::Alps ? alps_scenario(nodes, strategy)
                    : fabric == Fabric::Dragonfly
                        ? dragonfly_scenario(nodes, strategy)
                        : collective_scenario(nodes, strategy, fabric == Fabric::FatTree ? kFatTree : kStar));
  auto t0 = Clock::now();
  CollectiveResult r = run_collective_workload(sc, sc.strategies.at(0), nodes, EngineOptions{fast});
  double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  print_line(name, r.gpus, r.stats.messages, wall);
  std::fprintf(stderr, "  %s: simulated %.9f s, %llu fast messages, %llu flows, %llu events\n", name.c_str(),
               r.time_s, static_cast<unsigned long long>(r.stats.fast_messages),
               static_cast<unsigned long long>(r.stats.flows),
               static_cast<unsigned long long>(r.stats.events));
}

// Random links (1..100 GB/s); flows over 1-4 distinct random links (30% with a per-flow cap), 1 MB .. 100 MB.
// Closed loop: `concurrent` flows start at 0 and every completion starts the next one until `flows` have run,
// so about `concurrent` flows share the links at any time. Counts flow starts + completions per wall second.
void flownet_case(size_t links, size_t flows, size_t concurrent) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(0, 1);
  std::uniform_int_distribution<size_t> pick_link(0, links - 1), pick_hops(1, 4);
  FlowNetwork net;
  for (size_t l = 0; l < links; ++l) net.add_link(Rate{std::pow(10.0, 9 + 2 * u(rng))}, Time());
  struct Spec {
    std::vector<LinkId> route;
    double bytes, cap;
  };
  std::vector<Spec> specs(flows);
  for (Spec& a : specs) {
    size_t hops = std::min(links, pick_hops(rng));
    while (a.route.size() < hops) {
      LinkId l = static_cast<LinkId>(pick_link(rng));
      bool dup = false;
      for (LinkId x : a.route) dup = dup || x == l;
      if (!dup) a.route.push_back(l);
    }
    a.bytes = std::pow(10.0, 6 + 2 * u(rng));
    a.cap = u(rng) < 0.3 ? std::pow(10.0, 9 + u(rng)) : 0;
  }
  auto t0 = Clock::now();
  uint64_t events = 0;
  size_t next = 0;
  auto start = [&](Time now) {
    const Spec& a = specs[next];
    net.add_flow(a.route, a.bytes, a.cap, next, now);
    ++next;
    ++events;
  };
  while (next < std::min(concurrent, flows)) start(Time());
  net.resolve(Time());
  while (!net.empty()) {
    Time now = net.next_completion();
    while (!net.empty() && net.next_completion() == now) {
      net.pop_completion();
      ++events;
      if (next < flows) start(now);
    }
    net.resolve(now);
  }
  double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  print_line(fmt::format("flownet-random-{}links-{}active", links, concurrent), 0, events, wall);
  std::fprintf(stderr, "  flownet: %zu flows, %llu region solves, %llu growths, %llu component fallbacks\n",
               flows, static_cast<unsigned long long>(net.region_solves()),
               static_cast<unsigned long long>(net.region_growths()),
               static_cast<unsigned long long>(net.component_fallbacks()));
}

// One training step of ResNet-50 with parameter servers on JUWELS Booster (4 GPUs per node): the workers'
// pushes arrive staggered (bucket by bucket, jittered), so the server links see flows join and leave one by
// one. Messages = flows.
void ps_training_case(const std::string& name, int64_t nodes, const std::string& strategy) {
  Scenario sc = scenario_from(
      fmt::format("name: bench\n"
                  "cluster: {{topology: juwels-booster, nodes: {}}}\n"
                  "workload:\n"
                  "  model: resnet50\n"
                  "  batch_per_gpu: 64\n"
                  "  precision: tf32\n"
                  "  epochs: 90\n"
                  "  compute: {{efficiency: 0.21, overlap_slowdown: 0.4}}\n"
                  "  loader: {{kind: dali-cpu, threads: 8, per_thread: 76.5, filesystem: 53GB/s}}\n"
                  "  jitter: {{distribution: lognormal, cv: 0.02}}\n"
                  "  steps: 1\n"
                  "strategies:\n  - {}\n"
                  "reference_gpus: {}\n"
                  "seed: 1\n",
                  nodes, strategy, nodes * 4));
  TrainingOptions options;
  options.jobs = 1;
  auto t0 = Clock::now();
  std::vector<TrainingResult> r = run_training(sc, {nodes}, options);
  double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  print_line(name, r.at(0).gpus, r.at(0).stats.flows, wall);
  std::fprintf(stderr, "  %s: step %.6f s, %llu flows, %llu events\n", name.c_str(), r.at(0).step_time_s,
               static_cast<unsigned long long>(r.at(0).stats.flows),
               static_cast<unsigned long long>(r.at(0).stats.events));
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  std::string only;  // a case runs when its name contains it
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--quick")
      quick = true;
    else
      only = argv[i];
  auto want = [&](const std::string& name) { return name.find(only) != std::string::npos; };
  int64_t small = quick ? 64 : 1024, large = quick ? 1024 : 16384;
  std::printf("case, ranks, messages, wall_s, messages_per_s, rss_MB\n");
  auto collective = [&](const std::string& name, int64_t nodes, const std::string& strategy, bool fast,
                        Fabric fabric = Fabric::Star) {
    if (want(name)) collective_case(name, nodes, strategy, fast, fabric);
  };
  auto flownet = [&](size_t links, size_t flows, size_t concurrent) {
    if (want(fmt::format("flownet-random-{}links-{}active", links, concurrent)))
      flownet_case(links, flows, concurrent);
  };
  auto ps_training = [&](const std::string& name, int64_t nodes, const std::string& strategy) {
    if (want(name)) ps_training_case(name, nodes, strategy);
  };
  try {
    collective(fmt::format("ring-{}-fast", small), small, "ring", true);
    collective(fmt::format("ring-{}-flow", small), small, "ring", false);
    flownet(quick ? 256 : 1024, quick ? 20000 : 200000, 64);
    flownet(quick ? 256 : 1024, quick ? 2000 : 20000, 512);
    collective(fmt::format("ps-incast-{}x8-flow", small), small,
               "{name: ps, servers: 8, placement: dedicated}", false);
    for (int64_t alps_nodes : {quick ? 16 : 64, quick ? 32 : 256}) {
      collective(fmt::format("alps-ring-{}-fast", 4 * alps_nodes), alps_nodes, "ring", true, Fabric::Alps);
      collective(fmt::format("alps-ring-{}-flow", 4 * alps_nodes), alps_nodes, "ring", false, Fabric::Alps);
    }
    int64_t df = quick ? 64 : 256;
    collective(fmt::format("dragonfly-ring-{}-fast", df), df, "ring", true, Fabric::Dragonfly);
    collective(fmt::format("dragonfly-ring-{}-flow", df), df, "ring", false, Fabric::Dragonfly);
    int64_t wide = quick ? 128 : 512;
    collective(fmt::format("ps-incast-{}x8-fattree-flow", small), small,
               "{name: ps, servers: 8, placement: dedicated}", false, Fabric::FatTree);
    collective(fmt::format("ps-incast-{}x32-flow", wide), wide,
               "{name: ps, servers: 32, placement: dedicated}", false);
    collective(fmt::format("ps-incast-{}x32-fattree-flow", wide), wide,
               "{name: ps, servers: 32, placement: dedicated}", false, Fabric::FatTree);
    int64_t nodes = quick ? 4 : 64;
    ps_training(fmt::format("ps-train-resnet50-{}x4-dedicated", nodes), nodes,
                "{name: ps, servers: 4, placement: dedicated}");
    int64_t colocated = quick ? 4 : 16;  // (by range: an all-to-all; bench_training --ps for more)
    ps_training(fmt::format("ps-train-resnet50-{}x{}-colocated", colocated, colocated), colocated,
                fmt::format("{{name: ps, servers: {}, placement: colocated}}", colocated));
    collective(fmt::format("ring-{}-fast", large), large, "ring", true);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_engine: %s\n", e.what());
    return 1;
  }
  return 0;
}
