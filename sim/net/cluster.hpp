#pragma once
// A cluster built from its YAML description: the topology graph (node interiors + fabric), the GPU endpoints
// in rank order (node-major, so a node's ranks are adjacent in rings), CPUs for parameter servers, the GPU
// model and the communication software model.
#include <optional>
#include <string>
#include <vector>

#include "sim/io/yaml.hpp"
#include "sim/net/comm_model.hpp"
#include "sim/net/topology.hpp"
#include "sim/train/gpu.hpp"

namespace ddlsim {

// The cluster section of a scenario, possibly backed by a topology file whose keys it overrides.
class ClusterSpec {
 public:
  // `cluster` is the scenario's cluster map; a `topology:` key names topologies/<name>.yaml or a path.
  explicit ClusterSpec(const YamlNode& cluster);
  // A key of the scenario's map, else of its topology's.
  std::optional<YamlNode> get(const std::string& key) const;
  std::optional<YamlNode> topology_get(const std::string& key) const;  // the topology's alone
  YamlNode require(const std::string& key) const;
  std::string name() const;
  std::vector<int64_t> node_counts() const;  // `nodes`: a number or a list (a sweep)
  int gpus_per_node() const;
  const YamlNode& scenario_node() const { return cluster_; }

 private:
  YamlNode cluster_;
  std::optional<YamlNode> topology_;
};

struct Cluster {
  std::string name;
  Topology topo;
  int nodes = 0;
  int gpus_per_node = 1;
  GpuSpec gpu;
  std::vector<VertexId> gpus;     // rank order
  std::vector<VertexId> cpus;     // one per worker node; the node's first GPU when the node has no interior
  std::vector<VertexId> servers;  // dedicated parameter-server hosts
  CommModel comm;
};

struct ServerHosts {
  uint32_t count = 0;
  std::optional<LinkSpec> link;  // default: the workers' host link
};

// Throws InputError naming the key for anything wrong, including a fabric that cannot connect every endpoint.
Cluster build_cluster(const ClusterSpec& spec, int64_t nodes, const ServerHosts& servers = {});

// What one inter-node message of `bytes` costs on this cluster: its overhead α (s) and the rate one flow
// reaches (bytes/s): the route bottleneck from the first GPU of node 0 to that of node 1 times the
// efficiency, under the per-flow bound. {0, 0} with fewer than two nodes.
struct MessageCost {
  double alpha = 0, rate = 0;
};
MessageCost inter_node_cost(const Cluster& c, double bytes);

// Reads a comm: map (alpha, efficiency, reduce bandwidths, a calibration file) into a CommModel, on top of
// `base` (a topology's comm under a scenario's).
CommModel parse_comm_model(const YamlNode& comm, const CommModel& base = {});
// One class's range list (`intra:` or `inter:`): sorted, every range but the last with max_bytes.
CommClass parse_comm_ranges(const YamlNode& list);
// `reduce:` list: [{max_bytes, bandwidth_gpu, bandwidth_cpu}, ...], by operand size, the last unbounded.
std::vector<ReduceRange> parse_reduce_ranges(const YamlNode& list);

}  // namespace ddlsim
