#include "sim/calib/compute_fit.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <map>

#include <boost/math/tools/minima.hpp>
#include "sim/core/error.hpp"

#include "sim/train/training.hpp"

namespace ddlsim {

namespace {

// The strategy labelled `label` (empty: the first).
std::vector<Strategy>::const_iterator find_strategy(const Scenario& sc, const std::string& label) {
  return std::find_if(sc.strategies.begin(), sc.strategies.end(),
                      [&](const Strategy& s) { return label.empty() || s.label == label; });
}

// Simulated step time per measured GPU count at one efficiency. Whole nodes run as such; a part of a node
// (e.g. one GPU) runs as the scenario's reference on that many GPUs of one node.
std::map<int64_t, double> simulate_steps(Scenario sc, const std::string& strategy,
                                         const std::vector<int64_t>& gpus, double efficiency) {
  sc.training.efficiency = efficiency;
  sc.strategies = {*find_strategy(sc, strategy)};
  int64_t gpn = sc.cluster.gpus_per_node;
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

ComputeFit fit_compute_efficiency(const Scenario& sc, const std::string& strategy,
                                  const std::vector<const Measurement*>& steps) {
  const std::string& path = sc.file;
  if (sc.collective)
    throw InputError({path, 0, 0}, "workload",
                     "calibrating the compute efficiency needs a training scenario, not a collective");
  if (sc.training.samples_per_s > 0)
    sc.training.samples_per_s_where.fail(
        "a measured samples_per_s sets the compute time, so there is no efficiency to fit: remove it");
  auto it = find_strategy(sc, strategy);
  if (it == sc.strategies.end())
    throw InputError({"--strategy", 0, 0}, "",
                     fmt::format("no strategy labelled \"{}\" in {}", strategy, path));
  double batch = static_cast<double>(sc.training.batch);
  int64_t gpn = sc.cluster.gpus_per_node;
  ComputeFit fit;
  fit.strategy = it->label;
  std::vector<int64_t> gpus;
  for (const Measurement* m : steps) {
    if (m->ranks >= gpn && m->ranks % gpn != 0)
      throw InputError(
          {m->file, m->line, 0}, "gpus",
          fmt::format("{} GPUs is not a whole number of {}-GPU nodes of {}", m->ranks, gpn, sc.cluster.name));
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
    std::map<int64_t, double> t = simulate_steps(sc, fit.strategy, gpus, std::exp(log_e));
    double s = 0;
    for (const StepFitPoint& p : fit.points) {
      double r = (t.at(p.gpus) - p.measured_s) / p.measured_s;
      s += r * r;
    }
    return s;
  };
  // Brent's minimisation (Boost.Math) on log(e) over [ln 1e-3, 0], to 20 bits: e within a factor 1.00001.
  fit.efficiency = std::exp(boost::math::tools::brent_find_minima(cost, std::log(1e-3), 0.0, 20).first);
  std::map<int64_t, double> t = simulate_steps(sc, fit.strategy, gpus, fit.efficiency);
  // Sensitivity: a 10% change of e moving no step time by 1% leaves e undetermined.
  std::map<int64_t, double> t2 = simulate_steps(sc, fit.strategy, gpus, std::min(1.0, fit.efficiency * 1.1));
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
