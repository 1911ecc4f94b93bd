#pragma once
// The calibration file `ddlsim calibrate --out` writes (sim/config/cluster reads it). Shape:
//
//   # fitted by ddlsim calibrate from <files> on <date>
//   comm:
//     intra:                                   # ranges by message size, the last one unbounded
//       - {max_bytes: 64KiB, alpha: 1.2us, bandwidth: 5.1GB/s}
//       - {alpha: 8.0us, bandwidth: 9.8GB/s}
//     inter: [...]
//     reduce_bandwidth_gpu: 12GB/s            # 1/gamma
//     reduce_bandwidth_cpu: 12GB/s
//   fit: {residual_median: 0.031, residual_max: 0.12, points: 86}
//
// Each range may also carry `efficiency` (fraction of the route bottleneck one flow gets), as in CommRange.
#include <string>
#include <vector>

#include "sim/calib/fit.hpp"
#include "sim/net/comm_model.hpp"

namespace ddlsim {

// The YAML text of a fit. `date` goes into the header comment only.
std::string calibration_yaml(const FitResult& fit, const std::vector<std::string>& files,
                             const std::string& date);

// The compute part: `compute: {efficiency: .., strategy: .., ...}` with a header comment when `files` is not
// empty (a compute-only file). Clusters ignore it; scenarios take the number with
// --set workload.compute.efficiency=X.
struct ComputeFit;
std::string compute_calibration_yaml(const ComputeFit& fit, const std::string& scenario,
                                     const std::vector<std::string>& files, const std::string& date);

// One fitted message-size range / one reduce range as the YAML flow map a cluster's comm: reads
// ({max_bytes: 2KiB, alpha: .., bandwidth: ..} / {max_bytes: .., bandwidth_gpu: .., bandwidth_cpu: ..}).
std::string range_yaml(const FittedRange& range);
std::string reduce_range_yaml(const ReduceRange& range);

// Text for YAML quantities: "64KiB", "1.234567us", "9.87654321GB/s".
std::string yaml_bytes(double bytes);
std::string yaml_time(double seconds);
std::string yaml_rate(double bytes_per_second);

}  // namespace ddlsim
