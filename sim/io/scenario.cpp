#include "sim/io/scenario.hpp"

#include <fmt/format.h>
#include <algorithm>

namespace ddlsim {

namespace {
const std::vector<std::string> kCollectives = {"allreduce", "reduce-scatter", "all-gather", "broadcast"};
}

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  YamlNode root = YamlNode::load_file(path);
  for (const std::string& o : overrides) root.apply_override(o);
  if (!root.is_map()) root.fail("a scenario must be a map with name, cluster, workload and strategies");
  root.expect_keys({"name", "description", "cluster", "workload", "strategies", "reference_gpus", "seed",
                    "steps", "warmup_steps"});
  Scenario s{path,
             root.get_string("name", path),
             root,
             ClusterSpec(root["cluster"]),
             root["workload"],
             false,
             "",
             0,
             {},
             0,
             1};
  s.cluster.node_counts();  // validates early
  if (s.workload.has("collective")) {
    s.collective = true;
    s.workload.expect_keys({"collective", "bytes"});
    YamlNode kind = s.workload["collective"];
    s.collective_kind = kind.as_string();
    if (std::find(kCollectives.begin(), kCollectives.end(), s.collective_kind) == kCollectives.end()) {
      std::string hint = did_you_mean(s.collective_kind, kCollectives);
      kind.fail(fmt::format("unknown collective \"{}\" (allreduce, reduce-scatter, all-gather, broadcast){}",
                            s.collective_kind,
                            hint.empty() ? "" : fmt::format("; did you mean \"{}\"?", hint)));
    }
    s.bytes = s.workload["bytes"].as_bytes().value;
  }
  YamlNode strategies = root["strategies"];
  for (const YamlNode& st : strategies.elements()) {
    StrategySpec spec{"", "", st};
    if (st.is_scalar()) {
      spec.name = st.as_string();
    } else {
      spec.name = st["name"].as_string();
      spec.label = st.get_string("label", "");
    }
    if (spec.label.empty()) spec.label = spec.name;
    s.strategies.push_back(spec);
  }
  if (s.strategies.empty()) strategies.fail("list at least one strategy");
  s.reference_gpus = root.get_int("reference_gpus", 0);
  if (s.reference_gpus < 0) root["reference_gpus"].fail("must be >= 0 (0: the smallest configuration)");
  int64_t seed = root.get_int("seed", 1);
  if (seed < 0) root["seed"].fail("seed must be >= 0");
  s.seed = static_cast<uint64_t>(seed);
  return s;
}

}  // namespace ddlsim
