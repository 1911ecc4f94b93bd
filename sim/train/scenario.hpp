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

// Where a job's nodes are on the machine (node indices run group by group on dragonflies, pod by pod on
// fat-trees).
enum class JobPlacement : uint8_t {
  Contiguous,  // the first run of free nodes in index order that is long enough
  Spread,      // evenly spaced over the free nodes (across groups or pods)
  Random,      // drawn from the free nodes with the scenario's seed
  Explicit     // a list of node indices
};

// Background traffic standing in for a busy machine: every node of the job sends `message` bytes every
// message / (load x its injection rate) seconds for `duration`, one message in flight per GPU lane (where the
// network cannot carry the offered load, a lane sends when its previous message has arrived), to a
// destination drawn uniformly among the job's other nodes (uniform) or to each of them in turn (all-to-all).
// A node's injection rate is its NICs times the rate of its route to another node.
struct BackgroundSpec {
  bool all_to_all = false;
  double load = 0;  // offered, as a fraction of the injection rate
  double message = 0;
  Time duration;
};

// One job of the scenario form with `jobs:`: a training run of its own (or background traffic) on part of
// one shared machine.
struct JobSpec {
  std::string name;
  std::optional<BackgroundSpec> background;  // set: background traffic (training, strategy unused)
  Workload training;
  Strategy strategy;
  int64_t nodes = 0;
  JobPlacement placement = JobPlacement::Contiguous;
  bool fill_rest = false;  // background without `nodes`: every node the other jobs leave (placed last)
  std::vector<int64_t> node_list;  // Explicit, as given
  Time start;                      // offset of the job's first task from the run's start
  Where where;                     // the job's `placement` (or the job), for placement errors
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
  // The form with jobs: several training jobs at once on one machine of cluster.nodes nodes (training and
  // strategies are then unused).
  std::vector<JobSpec> jobs;
  Where jobs_where;  // the jobs key
};

}  // namespace ddlsim
