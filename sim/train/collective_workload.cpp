#include "sim/train/collective_workload.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "sim/train/nccl_tuner.hpp"
#include "sim/train/training.hpp"

namespace ddlsim {

const char* collective_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::Allreduce:
      return "allreduce";
    case CollectiveKind::ReduceScatter:
      return "reduce-scatter";
    case CollectiveKind::AllGather:
      return "all-gather";
    case CollectiveKind::Broadcast:
      return "broadcast";
  }
  return "?";
}

double bus_factor(CollectiveKind collective, int64_t p) {
  if (p <= 1) return 0;
  double pd = static_cast<double>(p);
  if (collective == CollectiveKind::Allreduce) return 2 * (pd - 1) / pd;
  if (collective == CollectiveKind::ReduceScatter || collective == CollectiveKind::AllGather)
    return (pd - 1) / pd;
  return 1;  // broadcast
}

Strategy configure_collective_strategy(CollectiveKind collective, const std::string& n,
                                       const std::string& label, const OptionReader& o) {
  Strategy s;
  s.name = n;
  s.label = label.empty() ? n : label;
  s.where = o.where("");
  AllreduceOptions a;
  bool fits = false;
  if (collective == CollectiveKind::Allreduce) {
    if (n == "ps") {
      if (!o.name_only()) o.expect_keys({"name", "label", "servers", "placement", "link"});
      PsOptions ps;
      ps.placement = parse_server_placement(o);
      s.options = ps;
      return s;
    }
    fits = allreduce_algorithm(n, a.algorithm);
  } else if (collective == CollectiveKind::ReduceScatter && n == "ring") {
    a.algorithm = Algorithm::ReduceScatter, fits = true;
  } else if (collective == CollectiveKind::AllGather && n == "ring") {
    a.algorithm = Algorithm::AllGather, fits = true;
  } else if (collective == CollectiveKind::Broadcast && n == "tree") {
    a.algorithm = Algorithm::Broadcast, fits = true;
  }
  if (!fits)
    o.fail(
        o.name_only() ? "" : "name",
        fmt::format(
            "strategy \"{}\" cannot run {} (allreduce: ring, rhd, recursive-doubling, mpich, openmpi, tree, "
            "double-tree, direct, hierarchical, nvls, nvls-tree, collnet, ps; reduce-scatter/all-gather: "
            "ring; broadcast: tree)",
            n, collective_name(collective)));
  if (!o.name_only()) {
    if (a.algorithm == Algorithm::Hierarchical)
      o.expect_keys({"name", "label", "inter_node"});
    else if (a.algorithm == Algorithm::Ring)
      o.expect_keys({"name", "label", "channels"});
    else
      o.expect_keys({"name", "label"});
    if (o.has("inter_node")) a.inter_node = parse_inter_node(o, "inter_node");
    if (o.has("channels")) {
      int64_t v = o.integer("channels");
      if (v < 1 || v > 64) o.fail("channels", "channels must be between 1 and 64");
      a.channels = static_cast<uint32_t>(v);
    }
  }
  s.options = a;
  return s;
}

CollectiveMemory collective_memory(const CollectivePlan& plan, uint32_t gpus) {
  // Measured peak RSS (ddlsim run of one allreduce on a star): a ring of 10^6 ranks 1.34 GB (1.33 kB per
  // GPU: cluster, routes, members' state); direct allreduce of 1000 / 3000 ranks (10^6 / 9·10^6 messages at
  // once) 0.53 / 5.5 GB: about 600 B per message in flight (flow, route, events, the member's records).
  constexpr double kBase = 20e6, kPerGpu = 1.4e3, kPerMessage = 600;
  const uint32_t p = plan.members();
  const uint32_t sample = std::min<uint32_t>(p, 64);
  std::vector<Send> out;
  double busiest = 0;
  for (uint32_t s : {0u, plan.rounds() / 2, plan.rounds() > 0 ? plan.rounds() - 1 : 0u}) {
    if (s >= plan.rounds()) continue;
    double count = 0;
    for (uint32_t i = 0; i < sample; ++i) {
      out.clear();
      plan.sends(static_cast<uint32_t>(static_cast<uint64_t>(i) * p / sample), s, out);
      count += static_cast<double>(out.size());
    }
    busiest = std::max(busiest, count * p / std::max<uint32_t>(sample, 1));
  }
  return {busiest, kBase + kPerGpu * gpus + kPerMessage * busiest};
}

namespace {

CollectiveResult run_once(const ClusterConfig& config, const CollectiveWorkload& workload, const Strategy& st,
                          int64_t nodes, EngineOptions options, size_t top, double max_memory) {
  const PsOptions* ps = std::get_if<PsOptions>(&st.options);
  const AllreduceOptions* ar = std::get_if<AllreduceOptions>(&st.options);
  Algorithm algo = ps ? Algorithm::ParameterServer : ar->algorithm;
  ServerPlacement placement{0, false, {}};  // no servers
  if (ps) placement = ps->placement;
  Cluster cluster = build_cluster(config, nodes, placement.hosts());
  uint32_t p = static_cast<uint32_t>(cluster.gpus.size());
  CollectiveShape shape;
  shape.algorithm = algo;
  shape.ranks = p;
  shape.ranks_per_node = static_cast<uint32_t>(cluster.gpus_per_node);
  shape.servers = placement.count(cluster.cpus.size());
  shape.bytes = workload.bytes;
  shape.inter_node = ar ? ar->inter_node : Algorithm::Ring;
  CollectiveTask task;
  try {
    task.plan = cluster_plan(shape, cluster, ar ? ar->channels : 0);
  } catch (const std::invalid_argument& e) {
    st.where.fail(e.what());
  }
  if (const MemoryLimit limit = memory_limit(max_memory); limit.bytes > 0) {
    CollectiveMemory m = collective_memory(*task.plan, p);
    if (m.bytes > limit.bytes)
      st.where.fail(fmt::format(
          "at {} node(s) ({} GPUs) the {} of {} puts about {:.3g} messages in flight and needs about {:.3g} "
          "GB, more than the {}: fewer nodes, another strategy, or --max-memory to override",
          nodes, p, collective_name(workload.kind), st.label, m.messages, m.bytes / 1e9, limit.text));
  }
  task.members = plan_members(shape, cluster);
  if (ps) {
    task.first_server = p;
    task.reduce_on_cpu_for_servers = true;
    for (uint32_t j = 0; j < shape.servers; ++j)
      task.members.push_back(placement.dedicated ? cluster.servers[j]
                                                 : cluster.cpus[j % cluster.cpus.size()]);
  }
  task.isolated = fast_path_safe(*task.plan, cluster);
  const std::string protocol = task.plan->protocol().on() ? task.plan->protocol().name : "-";
  TaskGraph graph;
  graph.add_collective(std::move(task), 0, graph.label(st.label));
  graph.finalize();
  Engine engine(cluster.topo, cluster.comm, graph, options);
  Time t = engine.run();
  CollectiveResult r;
  r.strategy = st.label;
  r.gpus = p;
  r.nodes = nodes;
  r.bytes = workload.bytes;
  r.time_s = t.seconds();
  r.algbw = r.time_s > 0 ? workload.bytes / r.time_s : 0;
  r.busbw = r.algbw * bus_factor(workload.kind, p);
  r.algorithm = shape.algorithm == Algorithm::Hierarchical
                    ? fmt::format("hierarchical/{}", algorithm_name(shape.inter_node))
                    : algorithm_name(shape.algorithm);
  r.protocol = protocol;
  r.stats = engine.stats();
  r.links = top_links(engine, cluster.topo, t, top);
  return r;
}

}  // namespace

CollectiveResult run_collective_workload(const ClusterConfig& config, const CollectiveWorkload& workload,
                                         const Strategy& st, int64_t nodes, EngineOptions options, size_t top,
                                         double max_memory) {
  // A message or a round that passes int64 picoseconds (bytes / bandwidth, latencies) is refused at the
  // strategy rather than wrapped to a negative or zero time.
  try {
    return run_once(config, workload, st, nodes, options, top, max_memory);
  } catch (const TimeOverflow&) {
    st.where.fail(
        fmt::format("at {} node(s) the {} of workload.bytes = {:.4g} B passes the limit of simulated time "
                    "({:.3g} s, about "
                    "53 days: 2^62 picoseconds); lower workload.bytes or raise the cluster's bandwidths",
                    nodes, collective_name(workload.kind), workload.bytes, kMaxSimulatedSeconds));
  }
}

CollectiveResult run_collective_workload(const Scenario& sc, const Strategy& st, int64_t nodes,
                                         EngineOptions options) {
  if (!sc.collective) throw std::logic_error("run_collective_workload: not a collective scenario");
  return run_collective_workload(sc.cluster, *sc.collective, st, nodes, options);
}

}  // namespace ddlsim
