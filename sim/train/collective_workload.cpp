#include "sim/train/collective_workload.hpp"

#include <fmt/format.h>

namespace ddlsim {

double bus_factor(const std::string& collective, int64_t p) {
  if (p <= 1) return 0;
  double pd = static_cast<double>(p);
  if (collective == "allreduce") return 2 * (pd - 1) / pd;
  if (collective == "reduce-scatter" || collective == "all-gather") return (pd - 1) / pd;
  return 1;  // broadcast
}

Algorithm collective_algorithm(const std::string& collective, const StrategySpec& s) {
  const std::string& n = s.name;
  if (collective == "allreduce") {
    Algorithm a;
    if (allreduce_algorithm(n, a)) return a;
    if (n == "ps") return Algorithm::ParameterServer;
  } else if (collective == "reduce-scatter" && n == "ring") {
    return Algorithm::ReduceScatter;
  } else if (collective == "all-gather" && n == "ring") {
    return Algorithm::AllGather;
  } else if (collective == "broadcast" && n == "tree") {
    return Algorithm::Broadcast;
  }
  YamlNode where = s.node.is_scalar() ? s.node : s.node["name"];
  where.fail(
      fmt::format("strategy \"{}\" cannot run {} (allreduce: ring, rhd, tree, double-tree, direct, "
                  "hierarchical, ps; "
                  "reduce-scatter/all-gather: ring; broadcast: tree)",
                  n, collective));
}

Algorithm parse_inter_node(const YamlNode& v) {
  Algorithm a;
  if (v.as_string() == "auto") return Algorithm::Auto;
  if (allreduce_algorithm(v.as_string(), a) && a != Algorithm::Direct && a != Algorithm::Hierarchical)
    return a;
  v.fail("inter_node must be ring, rhd, tree, double-tree or auto");
}

ServerPlacement parse_server_placement(const YamlNode& n) {
  ServerPlacement sp;
  if (n.is_scalar()) return sp;
  if (auto k = n.get("servers")) {
    int64_t v = k->as_int();
    if (v < 1 || v > 65536) k->fail("servers must be between 1 and 65536");
    sp.servers = static_cast<uint32_t>(v);
  }
  if (auto pl = n.get("placement")) {
    std::string v = pl->as_string();
    if (v != "dedicated" && v != "colocated") pl->fail("placement must be dedicated or colocated");
    sp.dedicated = v == "dedicated";
  }
  if (auto l = n.get("link")) {
    if (!sp.dedicated)
      l->fail("link is the cable of a dedicated server; a colocated server uses its node's NIC");
    l->expect_keys({"bandwidth", "latency"});
    sp.link = LinkSpec{(*l)["bandwidth"].as_rate(), l->has("latency") ? (*l)["latency"].as_time() : Time()};
  }
  return sp;
}

void price_inter_node(CollectiveShape& shape, const Cluster& cluster) {
  if (shape.algorithm != Algorithm::Hierarchical || shape.inter_node != Algorithm::Auto) return;
  MessageCost cost = inter_node_cost(cluster, shape.bytes / shape.ranks);
  shape.alpha = cost.alpha;
  shape.rate = cost.rate;
}

CollectiveResult run_collective_workload(const Scenario& sc, const StrategySpec& st, int64_t nodes,
                                         EngineOptions options) {
  Algorithm algo = collective_algorithm(sc.collective_kind, st);
  if (!st.node.is_scalar()) {
    if (algo == Algorithm::ParameterServer)
      st.node.expect_keys({"name", "label", "servers", "placement", "link"});
    else if (algo == Algorithm::Hierarchical)
      st.node.expect_keys({"name", "label", "inter_node"});
    else
      st.node.expect_keys({"name", "label"});
  }
  Algorithm inter_node = Algorithm::Ring;
  if (auto i = st.node.is_scalar() ? std::nullopt : st.node.get("inter_node"))
    inter_node = parse_inter_node(*i);
  ServerPlacement ps{0, false, {}};  // no servers
  if (algo == Algorithm::ParameterServer) ps = parse_server_placement(st.node);
  Cluster cluster = build_cluster(sc.cluster, nodes, ps.hosts());
  uint32_t p = static_cast<uint32_t>(cluster.gpus.size());
  CollectiveShape shape{algo,       p,        static_cast<uint32_t>(cluster.gpus_per_node),
                        ps.servers, sc.bytes, inter_node};
  price_inter_node(shape, cluster);
  CollectiveTask task;
  try {
    task.plan = make_plan(shape);
  } catch (const std::invalid_argument& e) {
    st.node.fail(e.what());
  }
  task.members = cluster.gpus;
  if (algo == Algorithm::ParameterServer) {
    task.first_server = p;
    task.reduce_on_cpu_for_servers = true;
    for (uint32_t j = 0; j < ps.servers; ++j)
      task.members.push_back(ps.dedicated ? cluster.servers[j] : cluster.cpus[j % cluster.cpus.size()]);
  }
  task.isolated = true;
  TaskGraph graph;
  graph.add_collective(std::move(task), 0, graph.label(st.label));
  graph.finalize();
  Engine engine(cluster.topo, cluster.comm, graph, options);
  Time t = engine.run();
  CollectiveResult r;
  r.strategy = st.label;
  r.gpus = p;
  r.nodes = nodes;
  r.bytes = sc.bytes;
  r.time_s = t.seconds();
  r.algbw = r.time_s > 0 ? sc.bytes / r.time_s : 0;
  r.busbw = r.algbw * bus_factor(sc.collective_kind, p);
  r.stats = engine.stats();
  return r;
}

}  // namespace ddlsim
