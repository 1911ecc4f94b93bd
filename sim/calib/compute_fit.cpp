#include "sim/calib/compute_fit.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <map>

#include "sim/core/error.hpp"
#include "sim/io/scenario.hpp"
#include "sim/train/training.hpp"

namespace ddlsim {

namespace {

// The strategy labelled `label` (empty: the first).
std::vector<StrategySpec>::const_iterator find_strategy(const Scenario& sc, const std::string& label) {
  return std::find_if(sc.strategies.begin(), sc.strategies.end(),
                      [&](const StrategySpec& s) { return label.empty() || s.label == label; });
}

// Simulated step time per measured GPU count at one efficiency. Whole nodes run as such; a part of a node
// (e.g. one GPU) runs as the scenario's reference on that many GPUs of one node.
std::map<int64_t, double> simulate_steps(const std::string& path, std::vector<std::string> overrides,
                                         const std::string& strategy, const std::vector<int64_t>& gpus,
                                         double efficiency) {
  overrides.push_back(fmt::format("workload.compute.efficiency={:.17g}", efficiency));
  Scenario sc = load_scenario(path, overrides);
  sc.strategies = {*find_strategy(sc, strategy)};
  int64_t gpn = sc.cluster.gpus_per_node();
  std::map<int64_t, double> out;
  std::vector<int64_t> nodes;
  for (int64_t g : gpus)
    if (g >= gpn) nodes.push_back(g / gpn);
  if (!nodes.empty())
    for (const TrainingResult& r : run_training(sc, nodes, TrainingOptions{}))
      out[r.gpus] = r.global_batch / r.throughput;
  for (int64_t g : gpus) {
    if (g >= gpn) continue;
    sc.reference_gpus = g;
    TrainingResult r = run_training(sc, {1}, TrainingOptions{}).at(0);
    double ref_throughput = r.throughput / r.speedup;  // speed-up is relative to the g-GPU reference
    out[g] = r.global_batch / static_cast<double>(r.gpus) * static_cast<double>(g) / ref_throughput;
  }
  return out;
}

}  // namespace

ComputeFit fit_compute_efficiency(const std::string& path, const std::vector<std::string>& overrides,
                                  const std::string& strategy, const std::vector<const Measurement*>& steps) {
  Scenario sc = load_scenario(path, overrides);
  if (sc.collective)
    throw InputError({path, 0, 0}, "workload",
                     "calibrating the compute efficiency needs a training scenario, not a collective");
  if (auto c = sc.workload.get("compute"); c && c->has("samples_per_s"))
    (*c)["samples_per_s"].fail(
        "a measured samples_per_s sets the compute time, so there is no efficiency to fit: remove it");
  auto it = find_strategy(sc, strategy);
  if (it == sc.strategies.end())
    throw InputError({"--strategy", 0, 0}, "",
                     fmt::format("no strategy labelled \"{}\" in {}", strategy, path));
  double batch = sc.workload["batch_per_gpu"].as_double();
  int64_t gpn = sc.cluster.gpus_per_node();
  ComputeFit fit;
  fit.strategy = it->label;
  std::vector<int64_t> gpus;
  for (const Measurement* m : steps) {
    if (m->ranks >= gpn && m->ranks % gpn != 0)
      throw InputError({m->file, m->line, 0}, "gpus",
                       fmt::format("{} GPUs is not a whole number of {}-GPU nodes of {}", m->ranks, gpn,
                                   sc.cluster.name()));
    StepFitPoint p;
    p.measurement = m;
    p.gpus = m->ranks;
    double b = m->batch_per_gpu > 0 ? static_cast<double>(m->batch_per_gpu) : batch;
    p.measured_s = m->time_s > 0 ? m->time_s : b * static_cast<double>(m->ranks) / m->throughput;
    fit.points.push_back(p);
    gpus.push_back(m->ranks);
  }
  std::sort(gpus.begin(), gpus.end());
  gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());

  auto cost = [&](double log_e) {
    std::map<int64_t, double> t = simulate_steps(path, overrides, fit.strategy, gpus, std::exp(log_e));
    double s = 0;
    for (const StepFitPoint& p : fit.points) {
      double r = (t.at(p.gpus) - p.measured_s) / p.measured_s;
      s += r * r;
    }
    return s;
  };
  // Golden-section search on log(e): 40 steps shrink [ln 1e-3, 0] to a factor 1.0000x in e.
  const double phi = (std::sqrt(5.0) - 1) / 2;
  double lo = std::log(1e-3), hi = 0;
  double x1 = hi - phi * (hi - lo), x2 = lo + phi * (hi - lo);
  double f1 = cost(x1), f2 = cost(x2);
  for (int i = 0; i < 40; ++i) {
    if (f1 <= f2) {
      hi = x2, x2 = x1, f2 = f1;
      x1 = hi - phi * (hi - lo);
      f1 = cost(x1);
    } else {
      lo = x1, x1 = x2, f1 = f2;
      x2 = lo + phi * (hi - lo);
      f2 = cost(x2);
    }
  }
  fit.efficiency = std::exp((lo + hi) / 2);
  std::map<int64_t, double> t = simulate_steps(path, overrides, fit.strategy, gpus, fit.efficiency);
  // Sensitivity: a 10% change of e moving no step time by 1% leaves e undetermined.
  std::map<int64_t, double> t2 =
      simulate_steps(path, overrides, fit.strategy, gpus, std::min(1.0, fit.efficiency * 1.1));
  fit.insensitive = true;
  std::vector<double> errors;
  for (StepFitPoint& p : fit.points) {
    p.simulated_s = t.at(p.gpus);
    p.rel_error = (p.simulated_s - p.measured_s) / p.measured_s;
    errors.push_back(std::fabs(p.rel_error));
    if (std::fabs(t2.at(p.gpus) - p.simulated_s) > 0.01 * p.simulated_s) fit.insensitive = false;
  }
  fit.residual_median = median(errors);
  fit.residual_max = *std::max_element(errors.begin(), errors.end());
  return fit;
}

}  // namespace ddlsim
