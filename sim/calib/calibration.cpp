#include "sim/calib/calibration.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <cmath>

#include "sim/calib/compute_fit.hpp"
#include "sim/net/cluster.hpp"

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
std::string yaml_time(double s) {
  return fmt::format("{:.6f}us", s * 1e6);
}

std::string yaml_rate(double r) {
  return fmt::format("{:.9g}GB/s", r / 1e9);
}

std::string range_yaml(const FittedRange& r) {
  std::string bound =
      std::isfinite(r.max_bytes) ? fmt::format("max_bytes: {}, ", yaml_bytes(r.max_bytes)) : "";
  return fmt::format("{{{}alpha: {}, bandwidth: {}}}", bound, yaml_time(r.alpha), yaml_rate(1 / r.beta));
}

std::string reduce_range_yaml(const ReduceRange& r) {
  std::vector<std::string> keys;
  if (std::isfinite(r.max_bytes)) keys.push_back(fmt::format("max_bytes: {}", yaml_bytes(r.max_bytes)));
  // A range whose gamma was fitted as 0 (reductions too cheap to see there) gets no bandwidth: free.
  if (r.gamma_gpu > 0) keys.push_back(fmt::format("bandwidth_gpu: {}", yaml_rate(1 / r.gamma_gpu)));
  if (r.gamma_cpu > 0) keys.push_back(fmt::format("bandwidth_cpu: {}", yaml_rate(1 / r.gamma_cpu)));
  return fmt::format("{{{}}}", fmt::join(keys, ", "));
}

std::string calibration_yaml(const FitResult& fit, const std::vector<std::string>& files,
                             const std::string& date) {
  std::string out = fmt::format("# fitted by ddlsim calibrate from {} on {}\n", fmt::join(files, ", "), date);
  out += fit.cluster.empty()
             ? std::string("# alpha: per-message overhead (includes the measured route's wire latency); ")
             : fmt::format(
                   "# fitted through the simulator on {}: use it with that topology, whose routes' wire\n"
                   "# latency the simulator adds (alpha excludes it).\n# alpha: per-message overhead; ",
                   fit.cluster);
  out +=
      "bandwidth: 1/beta, the rate of one\n"
      "# message stream; reduce_bandwidth: 1/gamma. Ranges are by message size; the last one is unbounded.\n";
  if (fit.gamma_folded)
    out +=
        "# gamma was folded into beta (see the fit notes): the bandwidths are effective ones that include\n"
        "# the reduction, and no reduce bandwidth is given.\n";
  out += "comm:\n";
  for (int link : {kIntraNode, kInterNode}) {
    const FittedClass& cls = fit.link[link];
    if (!cls.measured) continue;
    out += fmt::format("  {}:\n", link_class_name(link));
    for (const FittedRange& r : cls.ranges) out += "    - " + range_yaml(r) + "\n";
  }
  const std::vector<ReduceRange>& rr = fit.model.reduce;
  if (rr.size() == 1 && rr[0].gamma_gpu > 0) {
    out += fmt::format("  reduce_bandwidth_gpu: {}  # 1/gamma\n", yaml_rate(1 / rr[0].gamma_gpu));
    if (rr[0].gamma_cpu > 0)
      out += fmt::format("  reduce_bandwidth_cpu: {}\n", yaml_rate(1 / rr[0].gamma_cpu));
  } else if (rr.size() > 1 &&
             std::any_of(rr.begin(), rr.end(), [](const ReduceRange& r) { return r.gamma_gpu > 0; })) {
    out += "  reduce:  # 1/gamma by operand size\n";
    for (const ReduceRange& r : rr) out += "    - " + reduce_range_yaml(r) + "\n";
  }
  out += fmt::format("fit: {{residual_median: {:.4g}, residual_max: {:.4g}, points: {}, gamma: {}}}\n",
                     fit.residual_median, fit.residual_max, fit.fit_points,
                     fit.gamma_measured ? "measured"
                     : fit.gamma_folded ? "folded"
                                        : "none");
  return out;
}

std::string compute_calibration_yaml(const ComputeFit& fit, const std::string& scenario,
                                     const std::vector<std::string>& files, const std::string& date) {
  std::string out;
  if (!files.empty())
    out += fmt::format("# fitted by ddlsim calibrate from {} on {}\n", fmt::join(files, ", "), date);
  out += fmt::format(
      "# compute efficiency of {} fitted to measured step times; use it with\n"
      "# --set workload.compute.efficiency={:.6g}\n"
      "compute: {{efficiency: {:.6g}, strategy: {}, residual_median: {:.4g}, residual_max: {:.4g}, points: "
      "{}{}}}\n",
      scenario, fit.efficiency, fit.efficiency, fit.strategy, fit.residual_median, fit.residual_max,
      fit.points.size(), fit.insensitive ? ", determined: false" : "");
  return out;
}

}  // namespace ddlsim
