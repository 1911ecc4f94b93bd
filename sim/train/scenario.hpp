#pragma once
// A scenario as plain data: the cluster, the workload (a training run or one collective) and the strategies
// to compare. The configuration layer (sim/config) builds it from YAML; code may build one directly.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/net/cluster.hpp"
#include "sim/train/strategies/strategy.hpp"
#include "sim/train/workload.hpp"

namespace ddlsim {

enum class CollectiveKind : uint8_t { Allreduce, ReduceScatter, AllGather, Broadcast };
const char* collective_name(CollectiveKind k);  // allreduce, reduce-scatter, all-gather, broadcast

// One collective of `bytes` per rank (the calibration and microbenchmark workload).
struct CollectiveWorkload {
  CollectiveKind kind = CollectiveKind::Allreduce;
  double bytes = 0;
};

struct Scenario {
  std::string file;  // where it came from, for reports ("" when built in code)
  std::string name;
  ClusterConfig cluster;
  std::optional<CollectiveWorkload> collective;  // set: a collective workload; else `training`
  Workload training;
  std::vector<Strategy> strategies;
  int64_t reference_gpus = 0;  // 0: the smallest GPU count simulated
  Where reference_where;       // the reference_gpus key, for errors found when the counts are known
  uint64_t seed = 1;
};

}  // namespace ddlsim
