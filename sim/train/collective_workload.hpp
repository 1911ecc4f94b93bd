#pragma once
// One collective (allreduce, reduce-scatter, all-gather, broadcast) run by each strategy: the calibration and
// microbenchmark workload, reported with nccl-tests' algbw and busbw.
#include <string>

#include "sim/io/scenario.hpp"
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

// A strategy's `inter_node` key (the allreduce a hierarchical plan runs between nodes): ring, rhd or tree.
Algorithm parse_inter_node(const YamlNode& value);

}  // namespace ddlsim
