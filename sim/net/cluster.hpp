#pragma once
// A cluster built from its YAML description: the topology graph (node interiors + fabric), the GPU endpoints
// in rank order (node-major, so a node's ranks are adjacent in rings), CPUs for parameter servers, the GPU
// model and the communication software model.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/net/comm_model.hpp"
#include "sim/net/fabric.hpp"
#include "sim/net/gpu.hpp"
#include "sim/net/topology.hpp"

namespace ddlsim {

enum class GpuLinkKind : uint8_t { NvlinkMesh, NvSwitch, InfinityFabric, Pcie };

// A GPU pair of a point-to-point mesh and the links that join it (each of gpu_link's rate).
struct GpuPair {
  uint32_t a = 0, b = 0, links = 1;
};

// A node's interior: GPUs, NICs (GPU i uses NIC i * nics / gpus), the GPU-to-GPU link and PCIe.
struct NodeInterior {
  int gpus = 1, nics = 1;
  GpuLinkKind gpu_link_kind = GpuLinkKind::Pcie;
  LinkSpec gpu_link;  // unused for pcie
  LinkSpec pcie;
  bool nvls = false;  // nvswitch only: the switch reduces and multicasts (NVLink SHARP, NVSwitch gen 3+)
  // nvlink-mesh and infinity-fabric: the pairs joined and by how many links; empty: every pair by one.
  std::vector<GpuPair> pairs;
  // The orders in which the collective library's rings visit the node's GPUs (each a permutation of
  // 0..gpus-1), one per ring it builds over the node's links; empty: the simulator's own (see
  // CollectiveShape::rings).
  std::vector<std::vector<uint32_t>> rings;
};

// The vendor of a node's host CPU (`host_cpu`). NCCL's tuner bounds the LL protocol's bandwidth across nodes
// by it (tuning.cc, llMaxBws: AMD hosts have a row of their own; Intel and Arm share the other).
enum class HostCpu { Intel, Amd, Arm };

// The cluster section of a scenario (its keys over its topology file's), as the configuration layer parsed
// it.
struct ClusterConfig {
  std::string name = "inline";
  std::vector<int64_t> node_counts;  // `nodes`: a number or a list (a sweep); empty for a topology alone
  Where nodes_where;
  int64_t max_nodes = 0;  // the system's size (0: not given)
  int gpus_per_node = 1;
  int host_cores = 0;  // CPU cores of a host (a worker node, a dedicated server host); 0: unlimited
  HostCpu host_cpu = HostCpu::Intel;
  GpuSpec gpu;
  CommModel comm;
  std::optional<NodeInterior> node;  // none: every GPU is its own host on the fabric
  FabricConfig network;
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
  std::vector<VertexId> nvswitches;  // one per node whose GPUs meet at an NVSwitch
  bool nvls = false;                 // those switches reduce in flight (NVLink SHARP)
  bool sharp = false;                // the fabric's switches reduce in flight (InfiniBand SHARP)
  // NodeInterior::rings (null when the topology gives none): a ring's channels take these orders.
  std::shared_ptr<const std::vector<std::vector<uint32_t>>> rings;
  int host_cores = 0;                 // cores per host; 0: unlimited
  HostCpu host_cpu = HostCpu::Intel;  // the hosts' CPU vendor (NCCL's tuner reads it)
  CommModel comm;
};

struct ServerHosts {
  uint32_t count = 0;
  std::optional<LinkSpec> link;  // default: the workers' host link
};

// Throws InputError naming the key for anything the node count contradicts, including a fabric that cannot
// connect every endpoint.
Cluster build_cluster(const ClusterConfig& config, int64_t nodes, const ServerHosts& servers = {});

// What one inter-node message of `bytes` costs on this cluster: its overhead α (s), the rate one flow
// reaches (bytes/s): the route bottleneck from the first GPU of node 0 to that of node 1 times the
// efficiency, under the per-flow bound, and the route's wire latency (s). Zeros with fewer than two nodes.
struct MessageCost {
  double alpha = 0, rate = 0, latency = 0;
};
MessageCost inter_node_cost(const Cluster& c, double bytes);
// The same inside a node (GPU 0 to GPU 1 of node 0); {0, 0} with one GPU per node.
MessageCost intra_node_cost(const Cluster& c, double bytes);

// One note per message-size range of comm.intra / comm.inter whose bandwidth bound exceeds what one flow
// reaches on the cluster's route (its bottleneck link x the range's efficiency): the simulation runs such
// flows at that route rate, so a rate fitted where the library beat one flow (in-switch reduction, several
// channels) does not replay as given. Empty when every bound fits.
std::vector<std::string> unreachable_bandwidths(const Cluster& c);

}  // namespace ddlsim
