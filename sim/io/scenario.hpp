#pragma once
// A scenario file: the cluster, the workload (a training run or one collective) and the strategies to
// compare.
#include <string>
#include <vector>

#include "sim/io/yaml.hpp"
#include "sim/net/cluster.hpp"

namespace ddlsim {

struct StrategySpec {
  std::string name;   // ring, rhd, tree, direct, hierarchical, ps, ddp, horovod, zero, ...
  std::string label;  // name unless the scenario gives `label`
  YamlNode node;      // the strategy's map, for its options
};

struct Scenario {
  std::string file;
  std::string name;
  YamlNode root;
  ClusterSpec cluster;
  YamlNode workload;
  bool collective = false;      // workload is one collective rather than training
  std::string collective_kind;  // allreduce, reduce-scatter, all-gather, broadcast
  double bytes = 0;
  std::vector<StrategySpec> strategies;
  int64_t reference_gpus = 0;  // 0: the smallest GPU count simulated
  uint64_t seed = 1;
};

// Loads and validates; `overrides` are dotted.key=value assignments applied before validation.
Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides);

}  // namespace ddlsim
