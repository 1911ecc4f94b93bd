#pragma once
// One collective (allreduce, reduce-scatter, all-gather, broadcast) run by each strategy: the calibration and
// microbenchmark workload, reported with nccl-tests' algbw and busbw.
#include <string>

#include "sim/io/scenario.hpp"
#include "sim/net/cluster.hpp"
#include "sim/train/collective.hpp"
#include "sim/train/engine.hpp"

namespace ddlsim {

struct CollectiveResult {
  std::string strategy;
  int64_t gpus = 0, nodes = 0;
  double bytes = 0;
  double time_s = 0;
  double algbw = 0;  // bytes / time
  double busbw = 0;  // algbw * nccl-tests bus factor (2(p-1)/p for allreduce)
  EngineStats stats;
};

// nccl-tests bus-bandwidth factor for a collective kind on p ranks.
double bus_factor(const std::string& collective, int64_t p);

// Builds the cluster, the graph (one isolated collective) and runs it. Throws InputError for bad strategy
// options.
CollectiveResult run_collective_workload(const Scenario& scenario, const StrategySpec& strategy,
                                         int64_t nodes, EngineOptions options = {});

// Strategy name to algorithm for a collective kind; fails at the strategy's node when they do not fit.
Algorithm collective_algorithm(const std::string& collective, const StrategySpec& strategy);

// A strategy's `inter_node` key (the allreduce a hierarchical plan runs between nodes): ring, rhd, tree,
// double-tree or auto.
Algorithm parse_inter_node(const YamlNode& value);

// Where a parameter-server strategy's servers run: its `servers`, `placement` and `link` keys (defaults for a
// strategy given by name alone). `link` with colocated servers is an error: they use their node's NIC.
struct ServerPlacement {
  uint32_t servers = 1;
  bool dedicated = true;
  std::optional<LinkSpec> link;
  ServerHosts hosts() const { return dedicated ? ServerHosts{servers, link} : ServerHosts{}; }
};
ServerPlacement parse_server_placement(const YamlNode& strategy);

// A hierarchical shape with inter_node auto chooses its plan between nodes from an α-β estimate: gives it the
// cluster's inter-node message overhead and flow rate for its message size (n / p). No-op otherwise.
void price_inter_node(CollectiveShape& shape, const Cluster& cluster);

}  // namespace ddlsim
