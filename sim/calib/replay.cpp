#include "sim/calib/replay.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>

#include "sim/calib/calibration.hpp"
#include "sim/io/scenario.hpp"
#include "sim/train/collective_workload.hpp"

namespace ddlsim {

namespace {

struct Plan {
  bool ok = false;
  std::string collective = "allreduce";
  std::string strategy;  // YAML of the strategy entry
  std::string label;
  int64_t nodes = 0;
  double largest_message = 0;  // bytes
  std::string note;
};

Plan plan_for(const Measurement& m) {
  Plan p;
  int64_t ranks = m.ranks;
  if (m.kind == MeasurementKind::Step) {
    p.note = "training step: compare with ddlsim validate";
    return p;
  }
  if (m.kind == MeasurementKind::Bandwidth) {
    p.note = "streamed messages (osu_bw): no such workload in the simulator";
    return p;
  }
  if (m.kind == MeasurementKind::PingPong) {
    p.ok = true;
    p.collective = "broadcast";
    p.strategy = "{name: tree}";
    p.label = "one message";
    p.nodes = 2;
    p.largest_message = m.bytes;
    return p;
  }
  if (ranks < 2) {
    p.note = "one rank: nothing to communicate";
    return p;
  }
  const std::string& a = m.algorithm;
  p.ok = true;
  p.nodes = ranks;
  double n = m.bytes;
  p.largest_message = n / static_cast<double>(ranks);
  if (a == "ring" || a == "mpi_allreduce" || a == "nccl" || a == "osu_allreduce") {
    p.strategy = "{name: ring}";
    p.label = "ring";
    if (a != "ring") p.note = "library allreduce simulated as ring";
  } else if (a == "rhd") {
    p.strategy = "{name: rhd}";
    p.label = "rhd";
    p.largest_message = n / 2;
  } else if (a == "direct") {
    p.strategy = "{name: direct}";
    p.label = "direct";
    p.largest_message = n;
  } else if (a == "ps") {
    p.strategy = fmt::format("{{name: ps, servers: {}, placement: dedicated}}", m.servers);
    p.label = fmt::format("ps k={}", m.servers);
    p.nodes = ranks - m.servers;
    p.largest_message = n / static_cast<double>(m.servers);
  } else if (a == "ps-colocated") {
    p.strategy = fmt::format("{{name: ps, servers: {}, placement: colocated}}", ranks);
    p.label = fmt::format("ps colocated k={}", ranks);
  } else {
    p.ok = false;
    p.note = fmt::format("no strategy for \"{}\"", a);
  }
  return p;
}

// The replay's cluster: every rank its own node on a star, with the fitted class's message-size ranges as the
// inter-node comm model and the fitted reduce ranges, so every message and operand pays its own range. A
// rank's link runs at the fitted rate of the case's largest message: one message alone is bound by its
// range's rate anyway, but messages a rank sends or receives at the same time (p-k pushes into one server,
// direct's p-1 sends) share it, as they share the rank's copy engine (a core, a NIC).
std::string scenario_text(const Measurement& m, const FitResult& fit, const Plan& p, const FittedClass& cls) {
  std::vector<std::string> ranges, reduce;
  for (const FittedRange& r : cls.ranges) ranges.push_back(range_yaml(r));
  for (const ReduceRange& r : fit.model.reduce) reduce.push_back(reduce_range_yaml(r));
  double link = 1 / cls.lookup(p.largest_message).beta;
  return fmt::format(
      "name: calibrate-replay\n"
      "cluster:\n"
      "  nodes: {}\n"
      "  gpus_per_node: 1\n"
      "  gpu: a100-40gb\n"
      "  network: {{kind: star, link: {{bandwidth: {}, latency: 0us}}}}\n"
      "  comm: {{inter: [{}], reduce: [{}]}}\n"
      "workload: {{collective: {}, bytes: {:.17g}B}}\n"
      "strategies:\n"
      "  - {}\n",
      p.nodes, yaml_rate(link), fmt::join(ranges, ", "), fmt::join(reduce, ", "), p.collective, m.bytes,
      p.strategy);
}

}  // namespace

std::string replay_scenario_yaml(const Measurement& m, const FitResult& fit) {
  Plan p = plan_for(m);
  if (!p.ok) return "";
  const FittedClass& cls = fit.link[cost_terms(m).link];
  if (!cls.measured) return "";
  return scenario_text(m, fit, p, cls);
}

ReplayResult replay_measurement(const Measurement& m, const FitResult& fit) {
  ReplayResult out;
  Plan p = plan_for(m);
  out.strategy = p.label;
  out.note = p.note;
  if (!p.ok) return out;
  int link = cost_terms(m).link;
  const FittedClass& cls = fit.link[link];
  if (!cls.measured) {
    out.note = fmt::format("no {}-node measurements in the fit", link_class_name(link));
    return out;
  }
  YamlNode root = YamlNode::load_string(scenario_text(m, fit, p, cls), "<calibrate replay>");
  YamlNode strategy = root["strategies"].elements().at(0);
  std::string name = strategy["name"].as_string();
  Scenario sc{.file = "<calibrate replay>",
              .name = "calibrate-replay",
              .root = root,
              .cluster = ClusterSpec(root["cluster"]),
              .workload = root["workload"],
              .collective = true,
              .collective_kind = p.collective,
              .bytes = m.bytes,
              .strategies = {StrategySpec{name, name, strategy}}};
  CollectiveResult res = run_collective_workload(sc, sc.strategies[0], p.nodes);
  out.replayed = true;
  out.predicted_s = res.time_s;
  return out;
}

}  // namespace ddlsim
