#pragma once
// The cluster section of a scenario, parsed once: a topology file (topologies/<name>.yaml or a path) under
// the scenario's own keys, into a ClusterConfig; and the pieces other files reuse (comm maps, GPUs,
// precisions, links).
#include "sim/io/yaml.hpp"
#include "sim/net/cluster.hpp"

namespace ddlsim {

// `cluster` is the scenario's cluster map (or a topology file's root); `need_nodes`: `nodes` is required.
ClusterConfig parse_cluster(const YamlNode& cluster, bool need_nodes);

// Node counts from any entry point (the cluster's `nodes`, `--nodes`): 1..1,000,000 and at most the
// cluster's max_nodes; fails at `where`.
void check_node_counts(const ClusterConfig& cluster, const std::vector<int64_t>& counts, const Where& where);

// Reads a comm: map (alpha, efficiency, reduce bandwidths, a calibration file) into a CommModel, on top of
// `base` (a topology's comm under a scenario's).
CommModel parse_comm_model(const YamlNode& comm, const CommModel& base = {});
// One class's range list (`intra:` or `inter:`): sorted, every range but the last with max_bytes.
CommClass parse_comm_ranges(const YamlNode& list);
// `reduce:` list: [{max_bytes, bandwidth_gpu, bandwidth_cpu}, ...], by operand size, the last unbounded.
std::vector<ReduceRange> parse_reduce_ranges(const YamlNode& list);
// Reads a calibration document (a map with `comm:`, as `ddlsim calibrate --out` writes) or a `comm:` map
// itself. Throws InputError at the offending key.
CommModel load_calibration(const YamlNode& node);
CommModel load_calibration_file(const std::string& path);
// A name from known_gpus() or an inline map {name, peak: {fp32: .., fp16: ..}, memory: ..}.
GpuSpec parse_gpu(const YamlNode& node);
Precision parse_precision(const YamlNode& node);
LinkSpec parse_link(const YamlNode& node);  // {bandwidth, latency}
// A latency-like time (alpha, latency, overhead, gpu_cost): at most kMaxLatencySeconds (1 s), else refused
// naming the key.
Time parse_latency(const YamlNode& node);
FabricConfig parse_fabric(const YamlNode& network);

}  // namespace ddlsim
