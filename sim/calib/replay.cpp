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
  std::vector<double> messages;  // message sizes the simulated plan sends
  std::string note;
};

Plan plan_for(const Measurement& m) {
  Plan p;
  int64_t ranks = m.ranks;
  double n = m.bytes;
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
    p.messages = {n};
    return p;
  }
  if (ranks < 2) {
    p.note = "one rank: nothing to communicate";
    return p;
  }
  const std::string& a = m.algorithm;
  p.ok = true;
  p.nodes = ranks;
  if (a == "ring" || a == "mpi_allreduce" || a == "nccl" || a == "osu_allreduce") {
    p.strategy = "{name: ring}";
    p.label = "ring";
    p.messages = {n / static_cast<double>(ranks)};
    if (a != "ring") p.note = "library allreduce simulated as ring";
  } else if (a == "rhd") {
    p.strategy = "{name: rhd}";
    p.label = "rhd";
    for (double c = n / 2; c >= n / static_cast<double>(ranks) * 0.999; c /= 2) p.messages.push_back(c);
  } else if (a == "direct") {
    p.strategy = "{name: direct}";
    p.label = "direct";
    p.messages = {n};
  } else if (a == "ps") {
    p.strategy = fmt::format("{{name: ps, servers: {}, placement: dedicated}}", m.servers);
    p.label = fmt::format("ps k={}", m.servers);
    p.nodes = ranks - m.servers;
    p.messages = {n / static_cast<double>(m.servers)};
  } else if (a == "ps-colocated") {
    p.strategy = fmt::format("{{name: ps, servers: {}, placement: colocated}}", ranks);
    p.label = fmt::format("ps colocated k={}", ranks);
    p.messages = {n / static_cast<double>(ranks)};
  } else {
    p.ok = false;
    p.note = fmt::format("no strategy for \"{}\"", a);
  }
  return p;
}

// parse_comm_model reads one range per class, so the scenario carries the range this case's messages use.
// Ring, ps, direct and ping-pong send one message size, so this is exact; rhd's halving sizes can straddle
// the breakpoint, and then the largest message's range stands for all (noted).
const FittedRange* range_for(const Plan& p, const FittedClass& cls, std::string& note) {
  if (p.messages.empty()) return nullptr;
  double largest = *std::max_element(p.messages.begin(), p.messages.end());
  const FittedRange& r = cls.lookup(largest);
  for (double s : p.messages)
    if (&cls.lookup(s) != &r) {
      if (!note.empty()) note += "; ";
      note += "messages straddle the breakpoint: largest message's range used";
      break;
    }
  return &r;
}

std::string scenario_text(const Measurement& m, const FitResult& fit, const Plan& p, const FittedRange& r) {
  double bw = 1 / r.beta;
  double link = std::max(1e12, 10 * bw);  // never the bottleneck
  std::string comm = fmt::format("alpha_inter: {}, bandwidth_inter: {}", yaml_time(r.alpha), yaml_rate(bw));
  if (fit.gamma > 0)
    comm += fmt::format(", reduce_bandwidth_gpu: {0}, reduce_bandwidth_cpu: {0}", yaml_rate(1 / fit.gamma));
  return fmt::format(
      "name: calibrate-replay\n"
      "cluster:\n"
      "  nodes: {}\n"
      "  gpus_per_node: 1\n"
      "  gpu: a100-40gb\n"
      "  network: {{kind: star, link: {{bandwidth: {}, latency: 0us}}}}\n"
      "  comm: {{{}}}\n"
      "workload: {{collective: {}, bytes: {:.17g}B}}\n"
      "strategies:\n"
      "  - {}\n",
      p.nodes, yaml_rate(link), comm, p.collective, m.bytes, p.strategy);
}

}  // namespace

std::string replay_scenario_yaml(const Measurement& m, const FitResult& fit) {
  Plan p = plan_for(m);
  if (!p.ok) return "";
  const FittedClass& cls = fit.link[cost_terms(m).link];
  if (!cls.measured) return "";
  std::string note;
  return scenario_text(m, fit, p, *range_for(p, cls, note));
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
  const FittedRange* r = range_for(p, cls, out.note);
  YamlNode root = YamlNode::load_string(scenario_text(m, fit, p, *r), "<calibrate replay>");
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
