#include "sim/config/scenario.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>

#include "sim/config/cluster.hpp"
#include "sim/config/yaml_options.hpp"
#include "sim/train/collective_workload.hpp"

namespace ddlsim {

namespace {

CollectiveWorkload parse_collective(const YamlNode& w) {
  static const std::pair<const char*, CollectiveKind> kinds[] = {
      {"allreduce", CollectiveKind::Allreduce},
      {"reduce-scatter", CollectiveKind::ReduceScatter},
      {"all-gather", CollectiveKind::AllGather},
      {"broadcast", CollectiveKind::Broadcast}};
  w.expect_keys({"collective", "bytes"});
  YamlNode kind = w["collective"];
  std::string name = kind.as_string();
  auto k = std::find_if(std::begin(kinds), std::end(kinds), [&](const auto& e) { return name == e.first; });
  if (k == std::end(kinds)) {
    std::vector<std::string> names;
    for (const auto& e : kinds) names.push_back(e.first);
    std::string hint = did_you_mean(name, names);
    kind.fail(fmt::format("unknown collective \"{}\" (allreduce, reduce-scatter, all-gather, broadcast){}",
                          name, hint.empty() ? "" : fmt::format("; did you mean \"{}\"?", hint)));
  }
  return {k->second, w["bytes"].as_bytes().value};
}

}  // namespace

Scenario parse_scenario(const YamlNode& root) {
  if (!root.is_map()) root.fail("a scenario must be a map with name, cluster, workload and strategies");
  root.expect_keys({"name", "description", "cluster", "workload", "strategies", "reference_gpus", "seed",
                    "steps", "warmup_steps"});
  Scenario s;
  s.file = root.file();
  s.name = root.get_string("name", root.file());
  s.cluster = parse_cluster(root["cluster"], true);
  YamlNode workload = root["workload"];
  if (workload.has("collective"))
    s.collective = parse_collective(workload);
  else
    s.training = parse_workload(workload, root);
  if (!s.collective) check_training_time(s.training, s.cluster, workload);
  YamlNode strategies = root["strategies"];
  for (const YamlNode& st : strategies.elements()) {
    std::string name = st.is_scalar() ? st.as_string() : st["name"].as_string();
    std::string label = st.is_scalar() ? "" : st.get_string("label", "");
    YamlOptions options(st);
    s.strategies.push_back(s.collective
                               ? configure_collective_strategy(s.collective->kind, name, label, options)
                               : configure_strategy(name, label, options));
  }
  if (s.strategies.empty()) strategies.fail("list at least one strategy");
  for (const Strategy& st : s.strategies) {
    const PsOptions* ps = std::get_if<PsOptions>(&st.options);
    if (!ps || s.cluster.comm.transports.count(ps->transport)) continue;
    std::vector<std::string> names;
    for (const auto& [name, t] : s.cluster.comm.transports) names.push_back(name);
    ps->transport_where.fail(
        fmt::format("unknown transport \"{}\" ({}; add one under cluster.comm.transports)", ps->transport,
                    fmt::join(names, ", ")));
  }
  s.reference_gpus = root.get_int("reference_gpus", 0);
  if (s.reference_gpus < 0) root["reference_gpus"].fail("must be >= 0 (0: the smallest configuration)");
  s.reference_where = root.has("reference_gpus") ? root["reference_gpus"].where() : root.where();
  int64_t seed = root.get_int("seed", 1);
  if (seed < 0) root["seed"].fail("seed must be >= 0");
  s.seed = static_cast<uint64_t>(seed);
  return s;
}

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  YamlNode root = YamlNode::load_file(path);
  for (const std::string& o : overrides) root.apply_override(o);
  return parse_scenario(root);
}

}  // namespace ddlsim
