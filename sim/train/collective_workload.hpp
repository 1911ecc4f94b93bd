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
  // What ran: the algorithm as resolved on the cluster (a hierarchical one with the algorithm between its
  // nodes, e.g. "hierarchical/double-tree"; `auto` as NCCL's tuner chose, possibly "nvls") and the collective
  // library's protocol ("-" with the comm model alone).
  std::string algorithm, protocol;
  EngineStats stats;
  std::vector<LinkLoad> links;  // the `top_links` most-loaded links
};

// nccl-tests bus-bandwidth factor for a collective kind on p ranks.
double bus_factor(CollectiveKind collective, int64_t p);

// Reads a strategy of a collective workload: its name must run the collective (allreduce: an allreduce
// algorithm's name (allreduce_algorithm) or ps; reduce-scatter/all-gather: ring; broadcast: tree), with
// inter_node for hierarchical, channels for ring and servers/placement/link for ps.
Strategy configure_collective_strategy(CollectiveKind collective, const std::string& name,
                                       const std::string& label, const OptionReader& options);

// Builds the cluster, the graph (one isolated collective) and runs it. Throws InputError (at the strategy)
// when the plan does not fit the cluster, or when its messages in flight would not fit in `max_memory`
// bytes (0: the memory available on this machine; < 0: no check).
CollectiveResult run_collective_workload(const ClusterConfig& cluster, const CollectiveWorkload& workload,
                                         const Strategy& strategy, int64_t nodes, EngineOptions options = {},
                                         size_t top_links = 0, double max_memory = 0);

// Memory a collective run needs, estimated from its plan before it runs: the cluster and routes per GPU,
// and the messages the busiest round puts in flight (counted on up to 64 members spread over the plan, in
// its first, middle and last round, and scaled to all members).
struct CollectiveMemory {
  double messages = 0;  // in flight at once
  double bytes = 0;
};
CollectiveMemory collective_memory(const CollectivePlan& plan, uint32_t gpus);

// The same for a scenario with a collective workload.
CollectiveResult run_collective_workload(const Scenario& scenario, const Strategy& strategy, int64_t nodes,
                                         EngineOptions options = {});

}  // namespace ddlsim
