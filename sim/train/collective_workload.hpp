#pragma once
// One collective (allreduce, reduce-scatter, all-gather, broadcast) run by each strategy: the calibration and
// microbenchmark workload, reported with nccl-tests' algbw and busbw.
#include <string>

#include "sim/net/cluster.hpp"
#include "sim/train/collective.hpp"
#include "sim/train/engine.hpp"
#include "sim/train/scenario.hpp"

namespace ddlsim {

struct CollectiveResult {
  std::string strategy;
  int64_t gpus = 0, nodes = 0;
  double bytes = 0;
  double time_s = 0;
  double algbw = 0;  // bytes / time
  double busbw = 0;  // algbw * nccl-tests bus factor (2(p-1)/p for allreduce)
  EngineStats stats;
  std::vector<LinkLoad> links;  // the `top_links` most-loaded links
};

// nccl-tests bus-bandwidth factor for a collective kind on p ranks.
double bus_factor(CollectiveKind collective, int64_t p);

// Reads a strategy of a collective workload: its name must run the collective (allreduce: ring, rhd, tree,
// double-tree, direct, hierarchical, ps; reduce-scatter/all-gather: ring; broadcast: tree), with
// inter_node for hierarchical and servers/placement/link for ps.
Strategy configure_collective_strategy(CollectiveKind collective, const std::string& name,
                                       const std::string& label, const OptionReader& options);

// Builds the cluster, the graph (one isolated collective) and runs it. Throws InputError (at the strategy)
// when the plan does not fit the cluster.
CollectiveResult run_collective_workload(const ClusterConfig& cluster, const CollectiveWorkload& workload,
                                         const Strategy& strategy, int64_t nodes, EngineOptions options = {},
                                         size_t top_links = 0);

// The same for a scenario with a collective workload.
CollectiveResult run_collective_workload(const Scenario& scenario, const Strategy& strategy, int64_t nodes,
                                         EngineOptions options = {});

}  // namespace ddlsim
