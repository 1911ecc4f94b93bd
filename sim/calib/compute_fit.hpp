#pragma once
// Fits a training scenario's compute efficiency (workload.compute.efficiency: the fraction of the GPU's peak
// FLOP/s its layers reach) to measured step times, by running the scenario at every measured GPU count.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/calib/readers.hpp"
#include "sim/train/scenario.hpp"

namespace ddlsim {

struct StepFitPoint {
  const Measurement* measurement = nullptr;
  int64_t gpus = 0;
  double measured_s = 0;  // step time (from a throughput: gpus * batch / throughput)
  double simulated_s = 0;
  double rel_error = 0;  // (simulated - measured) / measured
};

struct ComputeFit {
  double efficiency = 0;
  std::string strategy;  // the scenario strategy's label it was fitted with
  // The step times barely move with the efficiency (loader- or communication-bound at every measured count):
  // the value is then not determined by these data.
  bool insensitive = false;
  std::vector<StepFitPoint> points;
  double residual_median = 0, residual_max = 0;
};

// Least squares on relative errors, sum(((T_sim(e) - T)/T)^2), minimised over log(e) in [1e-3, 1] by
// Brent's method (T_sim falls monotonically with e, flattening where compute stops being the
// bottleneck). `strategy`: a strategy label of the scenario (empty: its first). Throws InputError naming the
// row for a GPU count the cluster cannot hold, and when the scenario is not a training workload.
ComputeFit fit_compute_efficiency(const Scenario& scenario, const std::string& strategy,
                                  const std::vector<const Measurement*>& steps);

}  // namespace ddlsim
