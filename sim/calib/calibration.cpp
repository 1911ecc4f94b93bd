#include "sim/calib/calibration.hpp"

#include <cmath>
#include <fmt/format.h>

namespace ddlsim {

std::string yaml_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (b != std::floor(b)) return fmt::format("{:.17g}B", b);
  int u = 0;
  double v = b;
  while (u < 4 && v >= 1024 && std::fmod(v, 1024) == 0) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:.17g}{}", v, units[u]);
}

// Picosecond resolution, the simulator's own.
std::string yaml_time(double s) { return fmt::format("{:.6f}us", s * 1e6); }

std::string yaml_rate(double r) { return fmt::format("{:.9g}GB/s", r / 1e9); }

std::string calibration_yaml(const FitResult& fit, const std::vector<std::string>& files, const std::string& date) {
  std::string out = fmt::format("# fitted by ddlsim calibrate from {} on {}\n", fmt::join(files, ", "), date);
  out +=
      "# alpha: per-message overhead (includes the measured route's wire latency); bandwidth: 1/beta, the rate of one\n"
      "# message stream; reduce_bandwidth: 1/gamma. Ranges are by message size; the last one is unbounded.\n";
  if (fit.gamma_folded)
    out += "# gamma was not separable (allreduce data only): the bandwidths are effective ones that include the\n"
           "# reduction, and no reduce_bandwidth is given.\n";
  out += "comm:\n";
  for (int link : {kIntraNode, kInterNode}) {
    const FittedClass& cls = fit.link[link];
    if (!cls.measured) continue;
    out += fmt::format("  {}:\n", link_class_name(link));
    for (const FittedRange& r : cls.ranges) {
      std::string range = std::isfinite(r.max_bytes) ? fmt::format("max_bytes: {}, ", yaml_bytes(r.max_bytes)) : "";
      out += fmt::format("    - {{{}alpha: {}, bandwidth: {}}}\n", range, yaml_time(r.alpha), yaml_rate(1 / r.beta));
    }
  }
  if (fit.gamma > 0) {
    out += fmt::format("  reduce_bandwidth_gpu: {}  # 1/gamma\n", yaml_rate(1 / fit.gamma));
    if (fit.model.gamma_cpu > 0) out += fmt::format("  reduce_bandwidth_cpu: {}\n", yaml_rate(1 / fit.model.gamma_cpu));
  }
  out += fmt::format("fit: {{residual_median: {:.4g}, residual_max: {:.4g}, points: {}, gamma: {}}}\n",
                     fit.residual_median, fit.residual_max, fit.fit_points,
                     fit.gamma_measured ? "measured" : fit.gamma_folded ? "folded" : "none");
  return out;
}

CommClass parse_comm_ranges(const YamlNode& list) {
  CommClass c;
  c.ranges.clear();
  std::vector<YamlNode> items = list.elements();
  if (items.empty()) list.fail("list at least one range");
  for (size_t i = 0; i < items.size(); ++i) {
    const YamlNode& n = items[i];
    n.expect_keys({"max_bytes", "alpha", "bandwidth", "efficiency"});
    CommRange r;
    bool last = i + 1 == items.size();
    if (auto mb = n.get("max_bytes")) {
      if (last) mb->fail("the last range must not have max_bytes: it covers every larger message");
      r.max_bytes = mb->as_bytes().value;
      if (!c.ranges.empty() && r.max_bytes <= c.ranges.back().max_bytes)
        mb->fail("ranges must be sorted by increasing max_bytes");
    } else if (!last) {
      n.fail("missing required key \"max_bytes\" (every range but the last has one)");
    }
    if (auto a = n.get("alpha")) r.alpha = a->as_time();
    if (auto b = n.get("bandwidth")) r.bandwidth = b->as_rate().value;
    if (auto e = n.get("efficiency")) {
      r.efficiency = e->as_fraction();
      if (r.efficiency <= 0 || r.efficiency > 1) e->fail("efficiency must be in (0, 1]");
    }
    c.ranges.push_back(r);
  }
  return c;
}

CommModel load_calibration(const YamlNode& node) {
  if (!node.is_map()) node.fail("expected a map with comm:");
  YamlNode comm = node;
  if (node.has("comm")) {
    node.expect_keys({"comm", "fit", "source"});
    comm = node["comm"];
  }
  comm.expect_keys({"intra", "inter", "reduce_bandwidth_gpu", "reduce_bandwidth_cpu", "multipath", "source"});
  CommModel m;
  if (auto c = comm.get("intra")) m.intra = parse_comm_ranges(*c);
  if (auto c = comm.get("inter")) m.inter = parse_comm_ranges(*c);
  if (auto g = comm.get("reduce_bandwidth_gpu")) m.gamma_gpu = 1.0 / g->as_rate().value;
  if (auto g = comm.get("reduce_bandwidth_cpu")) m.gamma_cpu = 1.0 / g->as_rate().value;
  if (auto mp = comm.get("multipath")) {
    int64_t k = mp->as_int();
    if (k < 1 || k > 64) mp->fail("multipath must be between 1 and 64");
    m.multipath = static_cast<uint32_t>(k);
  }
  return m;
}

CommModel load_calibration_file(const std::string& path) { return load_calibration(YamlNode::load_file(path)); }

}  // namespace ddlsim
