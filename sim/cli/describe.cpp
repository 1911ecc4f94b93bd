#include <fmt/format.h>
#include <fmt/ranges.h>
#include <iostream>
#include <map>

#include "sim/cli/commands.hpp"
#include "sim/config/cluster.hpp"
#include "sim/config/scenario.hpp"
#include "sim/net/cluster.hpp"
#include "sim/train/nccl_tuner.hpp"
#include "sim/train/strategies/strategy.hpp"
#include "sim/train/training.hpp"

namespace ddlsim::cli {

namespace {

// What a parameter-server strategy does at `nodes` nodes, in one line.
std::string ps_summary(const std::string& label, const PsOptions& ps, int64_t nodes) {
  static constexpr const char* kSharding[] = {"range (every chunk over all servers)",
                                              "partition (whole chunks, round robin)",
                                              "round-robin by variable",
                                              "greedy by variable",
                                              "mxnet keys",
                                              "byteps (partitions by key hash)"};
  static constexpr const char* kMode[] = {"sync", "async", "ssp"};
  const uint32_t k = ps.placement.count(static_cast<size_t>(nodes));
  std::string mode = kMode[static_cast<int>(ps.mode)];
  if (ps.mode == PsMode::Ssp) mode += fmt::format(" (staleness {})", ps.staleness);
  if (ps.global_barrier) mode += " with a global barrier";
  return fmt::format("  {}: {} server{} {}, sharding {}, {}, local aggregation {}, transport {}\n", label, k,
                     k == 1 ? "" : "s",
                     ps.placement.dedicated ? "on dedicated hosts" : "colocated with workers",
                     kSharding[static_cast<int>(ps.sharding)], mode,
                     !ps.local_aggregation  ? "none (every GPU pushes)"
                     : ps.aggregate_on_host ? "in host memory (cpu)"
                                            : "on each node's first GPU (gpu)",
                     ps.transport);
}

}  // namespace

int describe_command(const std::vector<std::string>& args) {
  CommandSpec spec(
      "describe", "SCENARIO.yaml|TOPOLOGY.yaml [--nodes N] [--set KEY=VALUE ...]",
      "Builds the cluster and prints its devices, links by class, the comm model (per-message overhead,\n"
      "per-flow bound and efficiency by message size; reduction rates) and sample routes.");
  spec.positional = "scenario or topology file";
  spec.options.add_options()("nodes", po::value<int64_t>()->value_name("N"),
                             "nodes to build (default: the first of cluster.nodes, else 2)");
  spec.options.add_options()("set", po::value<std::vector<std::string>>()->value_name("KEY=VALUE"),
                             "override a key of the file, e.g. --set cluster.nodes=8 (repeatable)");
  spec.common = false;  // prints text, no --format
  std::optional<Args> parsed = parse_command(args, spec);
  if (!parsed) return 0;
  const Args& a = *parsed;
  std::vector<std::string> overrides =
      a.get<std::vector<std::string>>("set").value_or(std::vector<std::string>{});
  YamlNode doc = YamlNode::load_file(a.positional[0]);
  for (const std::string& s : overrides) doc.apply_override(s);
  // A topology file is a cluster without a `topology:` key: parsed as it is, so --set reaches it.
  YamlNode cluster_node = doc.has("cluster") ? doc["cluster"] : doc;
  ClusterConfig cluster = parse_cluster(cluster_node, false);
  int64_t nodes =
      count_option(a, "nodes", 1).value_or(cluster.node_counts.empty() ? 2 : cluster.node_counts.front());
  check_node_counts(cluster, {nodes}, command_line("--nodes"));
  Cluster c = build_cluster(cluster, nodes);
  std::map<std::string, std::pair<int, double>> by_class;
  for (const DirectedLink& l : c.topo.links()) {
    auto& e = by_class[link_class_name(l.cls)];
    ++e.first;
    e.second = l.spec.capacity.value;
  }
  const std::string part = cluster.node && cluster.gpus_per_node < cluster.node->gpus
                               ? fmt::format(" (the first of each node's {})", cluster.node->gpus)
                               : "";
  std::cout << fmt::format("cluster {}: {} node{} x {} {}{} = {} GPUs, {} vertices, {} directed links\n",
                           c.name, c.nodes, c.nodes == 1 ? "" : "s", c.gpus_per_node, c.gpu.name, part,
                           c.gpus.size(), c.topo.vertex_count(), c.topo.links().size());
  for (const auto& [cls, e] : by_class)
    std::cout << fmt::format("  {:<7} {:>7} links (e.g. {})\n", cls, e.first, format_rate(Rate{e.second}));
  if (c.topo.adaptive_routing())
    std::cout
        << "  routing adaptive: a collective's messages leave the links they would oversubscribe for detours "
           "up to two local hops longer that have room\n";
  // The software side of a message (CommModel), by message-size range; "-" where nothing bounds it. The
  // intra-node class applies only where GPUs share a node (a cluster without `node` has one GPU per host).
  bool shared_nodes = false;
  for (size_t i = 1; i < c.gpus.size() && !shared_nodes; ++i)
    shared_nodes = c.topo.vertex(c.gpus[i]).node == c.topo.vertex(c.gpus[i - 1]).node;
  for (const auto& [name, cls] : {std::pair<const char*, const CommClass*>{"intra", &c.comm.intra},
                                  std::pair<const char*, const CommClass*>{"inter", &c.comm.inter}}) {
    if (cls == &c.comm.intra && !shared_nodes) {
      std::cout << "  comm intra   (unused: every GPU is a host of its own)\n";
      continue;
    }
    std::vector<double> bounds;
    for (const CommRange& r : cls->ranges) bounds.push_back(r.max_bytes);
    for (size_t i = 0; i < cls->ranges.size(); ++i) {
      const CommRange& r = cls->ranges[i];
      std::cout << fmt::format("  comm {} {:<12} alpha {}, flow bound {}, efficiency {:g}\n", name,
                               format_size_range(bounds, i), format_time(r.alpha),
                               r.bandwidth > 0 ? format_rate(Rate{r.bandwidth}) : std::string("-"),
                               r.efficiency);
    }
  }
  for (const std::string& note : unreachable_bandwidths(c)) std::cout << "  note: " << note << "\n";
  if (c.comm.goodput_inter < 1)
    std::cout << fmt::format(
        "  fabric links carry {:g} of their line rate (goodput_inter; rates above include it)\n",
        c.comm.goodput_inter);
  if (c.sharp)
    std::cout << "  fabric switches sum in flight (sharp: InfiniBand SHARP; the collnet algorithm)\n";
  if (c.comm.pipeline_chunk_bytes() > 0)
    std::cout << fmt::format(
        "  hierarchical allreduces with a ring or a double tree between nodes pipeline chunks of {} per "
        "channel (pipeline_chunk)\n",
        format_bytes(Bytes{c.comm.pipeline_chunk_bytes()}));
  if (c.nvls)
    std::cout << fmt::format(
        "  NVLS chunks of {} (nvls_chunk), NVLSTree's at most {} (nvls_tree_max_chunk)\n",
        format_bytes(Bytes{c.comm.nvls_chunk}),
        c.comm.nvls_tree_max_chunk > 0 ? format_bytes(Bytes{c.comm.nvls_tree_max_chunk})
                                       : std::string("that below 4 nodes and 64 KiB from 4, as NCCL"));
  if (c.comm.incast.on()) {
    std::string curve;
    for (const auto& [n, g] : c.comm.incast.points)
      curve += fmt::format("{}{:g}: {:g}", curve.empty() ? "" : ", ", n, g);
    std::cout << fmt::format("  TCP incast on switch ports into hosts: goodput by senders {{{}}}\n", curve);
  }
  std::vector<double> bounds;
  for (const ReduceRange& r : c.comm.reduce) bounds.push_back(r.max_bytes);
  for (size_t i = 0; i < c.comm.reduce.size(); ++i) {
    const ReduceRange& r = c.comm.reduce[i];
    std::cout << fmt::format("  reduce {:<12} gpu {}, cpu {}\n", format_size_range(bounds, i),
                             r.gamma_gpu > 0 ? format_rate(Rate{1 / r.gamma_gpu}) : std::string("free"),
                             r.gamma_cpu > 0 ? format_rate(Rate{1 / r.gamma_cpu}) : std::string("free"));
  }
  if (c.rings) {
    std::cout << fmt::format(
        "  rings: {} channel(s) by default, in the collective library's orders (node.rings):",
        c.rings->size());
    for (const std::vector<uint32_t>& order : *c.rings)
      std::cout << fmt::format(" [{}]", fmt::join(order, " "));
    std::cout << "\n";
  } else if (c.gpus_per_node > 1) {
    std::cout << fmt::format(
        "  ring across nodes: {} channel(s) by default (one per NIC the GPUs of a node use)\n",
        ring_channels(c, 0));
  }
  if (c.comm.nccl_protocols && c.gpus.size() > 1) {
    // NCCL's tuner for a ring allreduce over every GPU, by size: its estimate per protocol, the one it picks;
    // across nodes also what a hierarchical allreduce with inter_node auto runs (algorithm and protocol).
    const bool nodes = c.gpus_per_node > 0 && c.gpus.size() > static_cast<size_t>(c.gpus_per_node) &&
                       c.gpus.size() % static_cast<size_t>(c.gpus_per_node) == 0;
    std::string enabled;  // NCCL_PROTO's protocols, when the cluster gives them
    if (c.comm.nccl_proto)
      for (size_t p = 0; p < kNcclProtocolNames.size(); ++p)
        if ((*c.comm.nccl_proto)[p])
          enabled += (enabled.empty() ? "; nccl_proto " : ",") + std::string(kNcclProtocolNames[p]);
    std::cout << fmt::format(
        "  NCCL protocols (ring allreduce over {} GPUs; NCCL's own estimate, us{}{}{}{}{}):\n", c.gpus.size(),
        nodes ? (c.host_cpu == HostCpu::Amd ? "; AMD hosts" : "; Intel or Arm hosts") : "", enabled,
        c.comm.nccl_net_latency > Time() ? "; network device latency " + format_time(c.comm.nccl_net_latency)
                                         : std::string(),
        nodes ? "; hierarchical with inter_node auto" : "", c.nvls && !nodes ? "; NVLS (NVLink SHARP)" : "");
    for (double bytes = 8; bytes <= 8.0 * (1ull << 30); bytes *= 8) {
      CollectiveShape shape;
      shape.ranks = static_cast<uint32_t>(c.gpus.size());
      shape.ranks_per_node = static_cast<uint32_t>(c.gpus_per_node);
      shape.bytes = bytes;
      shape.channels = ring_channels(c, 0);
      std::vector<std::string> cells;
      for (const NcclEstimate& e : nccl_estimates(shape, c))
        cells.push_back(e.seconds < 0 ? fmt::format("{} off", e.protocol)
                                      : fmt::format("{} {:.1f}", e.protocol, e.seconds * 1e6));
      std::string hierarchical;
      // One node whose NVSwitch reduces: NCCL's NVLS estimate, and NVLS where the tuner prefers it.
      if (const NcclEstimate nvls = nccl_nvls_estimate(shape, c); nvls.seconds >= 0) {
        CollectiveShape h = shape;
        h.algorithm = Algorithm::Hierarchical;
        h.inter_node = Algorithm::Auto;
        std::unique_ptr<CollectivePlan> plan = cluster_plan(h, c, 0);
        hierarchical = fmt::format("; NVLS {:.1f}; NCCL runs {} {}", nvls.seconds * 1e6,
                                   h.algorithm == Algorithm::Nvls ? "nvls" : "ring", plan->protocol().name);
      }
      if (nodes) {
        // Across nodes whose NVSwitches reduce, also NCCL's NVLSTree estimate; where the fabric's switches
        // do, its CollNet one.
        CollectiveShape h = shape;
        h.algorithm = Algorithm::Hierarchical;
        h.inter_node = nccl_inter_node(h, c);
        if (h.inter_node == Algorithm::NvlsTree || h.inter_node == Algorithm::CollNet)
          h.algorithm = h.inter_node;
        std::string others;
        if (const NcclEstimate e = nccl_nvls_tree_estimate(shape, c); e.seconds >= 0)
          others += fmt::format("NVLS tree {:.1f}; ", e.seconds * 1e6);
        if (const NcclEstimate e = nccl_collnet_estimate(shape, c); e.seconds >= 0)
          others += fmt::format("CollNet {:.1f}; ", e.seconds * 1e6);
        hierarchical = fmt::format("; {}hierarchical: {} {}", others, algorithm_name(h.inter_node),
                                   nccl_protocol(h, c).name);
      }
      std::cout << fmt::format("    {:>10}  {:<8} ({}){}\n", format_bytes(Bytes{bytes}),
                               nccl_protocol(shape, c).name, fmt::join(cells, ", "), hierarchical);
    }
  }
  std::vector<std::string> transports;
  for (const auto& [name, t] : c.comm.transports)
    transports.push_back(
        t.free() ? name + " (free)"
                 : fmt::format("{} ({} + {} per core{}{})", name, format_time(t.overhead),
                               t.cpu_rate > 0 ? format_rate(Rate{t.cpu_rate}) : "-",
                               t.connection_rate > 0
                                   ? fmt::format(", {} per connection", format_rate(Rate{t.connection_rate}))
                                   : "",
                               t.process_rate > 0 ? fmt::format(", {} per sending process",
                                                                format_rate(Rate{t.process_rate}))
                                                  : ""));
  std::cout << fmt::format("  host transports (PS): {}\n", fmt::join(transports, ", "));
  Router router(c.topo);
  auto show = [&](VertexId s, VertexId d) {
    const auto& r = router.route(s, d);
    std::string path = c.topo.vertex(s).name;
    for (LinkId l : r) path += " > " + c.topo.vertex(c.topo.links()[l].to).name;
    std::cout << fmt::format("  route {} hops: {}\n", r.size(), path);
  };
  if (c.gpus.size() > 1) show(c.gpus[0], c.gpus[1]);
  if (c.gpus.size() > static_cast<size_t>(c.gpus_per_node)) show(c.gpus[0], c.gpus.back());
  // A training scenario: what each strategy's run would take at these nodes (the estimate a run is checked
  // against before it starts).
  if (doc.has("workload") && doc.has("strategies") && !doc.has("jobs")) {
    Scenario sc = parse_scenario(doc);  // (the file as read above, overrides applied)
    if (!sc.collective)
      for (const Strategy& st : sc.strategies) {
        if (const auto* ar = std::get_if<AllreduceOptions>(&st.options)) {
          const auto [algorithm, inter_node] = allreduce_run(*ar, c);
          std::string between;
          if (algorithm == Algorithm::Hierarchical)
            between = inter_node == Algorithm::Auto
                          ? ", between nodes chosen per size (auto)"
                          : std::string(", between nodes ") + algorithm_name(inter_node);
          std::cout << fmt::format("  {} allreduces with {}{}{}\n", st.label, algorithm_name(algorithm),
                                   between,
                                   ar->library_choice && algorithm == Algorithm::Hierarchical
                                       ? " (no algorithm given: NCCL's choice under its protocols)"
                                       : "");
        }
        if (const auto* ps = std::get_if<PsOptions>(&st.options))
          std::cout << ps_summary(st.label, *ps, nodes);
        MemoryEstimate e = MemoryModel(sc, st).at(nodes);
        std::cout << fmt::format(
            "  run of {} at {} nodes: about {:.3g} tasks over {} steps, up to {:.3g} flows at once, {:.3g} "
            "GB\n",
            st.label, nodes, e.tasks, sc.training.warmup + sc.training.steps, e.flows, e.bytes / 1e9);
      }
  }
  return 0;
}

}  // namespace ddlsim::cli
