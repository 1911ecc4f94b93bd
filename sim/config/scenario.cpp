#include "sim/config/scenario.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <cmath>

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
  const std::optional<CollectiveKind> k = named(name, kinds);
  if (!k) {
    std::vector<std::string> names;
    for (const auto& e : kinds) names.push_back(e.first);
    std::string hint = did_you_mean(name, names);
    kind.fail(fmt::format("unknown collective \"{}\" (allreduce, reduce-scatter, all-gather, broadcast){}",
                          name, hint.empty() ? "" : fmt::format("; did you mean \"{}\"?", hint)));
  }
  return {*k, w["bytes"].as_bytes().value};
}

// A PS strategy's transport must be one the cluster's comm model names.
void check_transport(const Strategy& st, const ClusterConfig& cluster) {
  const PsOptions* ps = std::get_if<PsOptions>(&st.options);
  if (!ps || cluster.comm.transports.count(ps->transport)) return;
  std::vector<std::string> names;
  for (const auto& [name, t] : cluster.comm.transports) names.push_back(name);
  std::string hint = did_you_mean(ps->transport, names);
  ps->transport_where.fail(
      fmt::format("unknown transport \"{}\" ({}{}; add one under cluster.comm.transports)", ps->transport,
                  hint.empty() ? "" : fmt::format("did you mean \"{}\"? ", hint), fmt::join(names, ", ")));
}

// BytePS numbers partition i of a tensor (d << 16) + i, so a layer has at most 65536 partitions
// (byteps/common/operations.cc, InitTensor); more would also build a graph of that many messages per worker.
void check_partitions(const Strategy& st, const Workload& wl) {
  const PsOptions* ps = std::get_if<PsOptions>(&st.options);
  if (!ps || ps->sharding != PsSharding::Byteps) return;
  for (const LayerSpec& l : wl.model.layers) {
    const double parts = std::ceil(static_cast<double>(l.params) * wl.gradient_bytes / ps->chunk);
    if (parts > 65536)
      ps->chunk_where.fail(
          fmt::format("layer \"{}\" of {} would be cut into {:.0f} partitions of {:.0f} B; BytePS keys hold "
                      "at most 65536 per tensor: give a larger chunk_size",
                      l.name, wl.model.name, parts, ps->chunk));
  }
}

BackgroundSpec parse_background(const YamlNode& n) {
  n.expect_keys({"pattern", "load", "message", "duration"});
  BackgroundSpec b;
  std::string pattern = n.get_string("pattern", "uniform");
  if (pattern == "all-to-all")
    b.all_to_all = true;
  else if (pattern != "uniform")
    n["pattern"].fail(fmt::format("unknown pattern \"{}\" (uniform or all-to-all)", pattern));
  YamlNode load = n["load"];
  b.load = load.as_fraction();
  if (!(b.load > 0 && b.load <= 1))
    load.fail("load must be in (0, 1]: a fraction of each node's injection rate");
  b.message = n.has("message") ? n["message"].as_bytes().value : 4e6;
  if (b.message < 1) n["message"].fail("message must be at least 1 B");
  YamlNode duration = n["duration"];
  b.duration = duration.as_time();
  if (b.duration <= Time() || b.duration > Time::from_seconds(3600))
    duration.fail("duration must be positive and at most 1 h");
  return b;
}

JobPlacement parse_placement(const YamlNode& n, JobSpec& job) {
  if (n.is_sequence()) {
    job.node_list = n.as_int_list();
    if (job.node_list.empty()) n.fail("a placement list names at least one node");
    return JobPlacement::Explicit;
  }
  static const std::pair<const char*, JobPlacement> kinds[] = {{"contiguous", JobPlacement::Contiguous},
                                                               {"spread", JobPlacement::Spread},
                                                               {"random", JobPlacement::Random}};
  std::string v = n.as_string();
  for (const auto& [name, p] : kinds)
    if (v == name) return p;
  std::string hint = did_you_mean(v, {"contiguous", "spread", "random"});
  n.fail(fmt::format("unknown placement \"{}\" (contiguous, spread, random or a list of node indices){}", v,
                     hint.empty() ? "" : fmt::format("; did you mean \"{}\"?", hint)));
}

// The jobs of one machine: each names a training workload, one strategy, its node count and placement, and
// a start offset. Nodes are checked against the machine here: counts, explicit indices and overlaps.
std::vector<JobSpec> parse_jobs(const YamlNode& list, const YamlNode& root, const ClusterConfig& cluster) {
  const int64_t machine = cluster.node_counts[0];
  std::vector<JobSpec> jobs;
  std::vector<std::string> owner(static_cast<size_t>(machine));
  int64_t total = 0;
  std::optional<size_t> rest;  // the background job without nodes, if any
  for (const YamlNode& j : list.elements()) {
    JobSpec job;
    job.name = j["name"].as_string();
    for (const JobSpec& other : jobs)
      if (other.name == job.name) j["name"].fail(fmt::format("two jobs are named \"{}\"", job.name));
    if (auto bg = j.get("background")) {
      j.expect_keys({"name", "background", "nodes", "placement", "start"});
      job.background = parse_background(*bg);
    } else {
      j.expect_keys({"name", "workload", "strategy", "nodes", "placement", "start"});
      YamlNode workload = j["workload"];
      if (workload.has("collective")) workload["collective"].fail("a job runs a training workload");
      job.training = parse_workload(workload, root, cluster);
      YamlNode st = j["strategy"];
      std::string name = st.is_scalar() ? st.as_string() : st["name"].as_string();
      job.strategy =
          configure_strategy(name, st.is_scalar() ? "" : st.get_string("label", ""), YamlOptions(st));
    }
    job.where = j.has("placement") ? j["placement"].where() : j.where();
    if (auto p = j.get("placement")) job.placement = parse_placement(*p, job);
    if (auto n = j.get("nodes")) {
      job.nodes = n->as_int();
      if (job.nodes < 1 || job.nodes > machine)
        n->fail(fmt::format("nodes must be between 1 and the machine's {} (cluster.nodes)", machine));
      if (job.placement == JobPlacement::Explicit && static_cast<size_t>(job.nodes) != job.node_list.size())
        n->fail(fmt::format("nodes ({}) and the placement's list ({} nodes) differ", job.nodes,
                            job.node_list.size()));
    } else if (job.placement == JobPlacement::Explicit) {
      job.nodes = static_cast<int64_t>(job.node_list.size());
    } else if (job.background && !rest) {
      rest = jobs.size();  // background on every node the other jobs leave: counted below
    } else {
      j.fail(job.background
                 ? "missing required key \"nodes\" (only one background job may take the nodes left)"
                 : "missing required key \"nodes\"");
    }
    for (int64_t k : job.node_list) {
      if (k < 0 || k >= machine)
        job.where.fail(fmt::format("node {} is not on the machine (nodes 0..{})", k, machine - 1));
      std::string& o = owner[static_cast<size_t>(k)];
      if (!o.empty())
        job.where.fail(fmt::format("node {} is {}'s too", k, o == job.name ? "listed twice in this job" : o));
      o = job.name;
    }
    total += job.nodes;
    if (total > machine)
      (j.has("nodes") ? j["nodes"] : j)
          .fail(fmt::format("the jobs need {} nodes so far, the machine has {} (cluster.nodes)", total,
                            machine));
    if (auto s = j.get("start")) job.start = s->as_time();
    jobs.push_back(std::move(job));
  }
  if (jobs.empty()) list.fail("list at least one job");
  if (rest) {
    JobSpec& bg = jobs[*rest];
    bg.nodes = machine - total;
    bg.fill_rest = true;
    if (bg.nodes < 2)
      bg.where.fail(fmt::format("the other jobs leave {} node(s) for background traffic \"{}\": it needs 2",
                                bg.nodes, bg.name));
  }
  return jobs;
}

}  // namespace

Scenario parse_scenario(const YamlNode& root) {
  if (!root.is_map()) root.fail("a scenario must be a map with name, cluster, workload and strategies");
  if (root.has("jobs")) {
    root.expect_keys({"name", "description", "cluster", "jobs", "seed", "steps", "warmup_steps"});
    Scenario s;
    s.file = root.file();
    s.name = root.get_string("name", root.file());
    s.cluster = parse_cluster(root["cluster"], true);
    if (s.cluster.node_counts.size() != 1)
      s.cluster.nodes_where.fail("a scenario with jobs runs on one machine: give cluster.nodes as one count");
    int64_t seed = root.get_int("seed", 1);
    if (seed < 0) root["seed"].fail("seed must be >= 0");
    s.seed = static_cast<uint64_t>(seed);
    s.jobs = parse_jobs(root["jobs"], root, s.cluster);
    s.jobs_where = root["jobs"].where();
    for (const JobSpec& j : s.jobs)
      if (!j.background) {
        check_transport(j.strategy, s.cluster);
        check_partitions(j.strategy, j.training);
      }
    if (std::all_of(s.jobs.begin(), s.jobs.end(), [](const JobSpec& j) { return j.background.has_value(); }))
      root["jobs"].fail("list at least one training job beside the background traffic");
    return s;
  }
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
    s.training = parse_workload(workload, root, s.cluster);
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
    check_transport(st, s.cluster);
    if (!s.collective) check_partitions(st, s.training);
  }
  s.reference_gpus = root.get_int("reference_gpus", 0);
  if (s.reference_gpus < 0) root["reference_gpus"].fail("must be >= 0 (0: the smallest configuration)");
  const int64_t system_gpus =
      (s.cluster.max_nodes > 0 ? s.cluster.max_nodes : 1'000'000) * s.cluster.gpus_per_node;
  if (s.reference_gpus > system_gpus)
    root["reference_gpus"].fail(fmt::format("reference_gpus {} is more than the system's {} GPUs{}",
                                            s.reference_gpus, system_gpus,
                                            s.cluster.max_nodes > 0 ? "" : " (1,000,000 nodes)"));
  s.reference_where = root.has("reference_gpus") ? root["reference_gpus"].where() : root.where();
  int64_t seed = root.get_int("seed", 1);
  if (seed < 0) root["seed"].fail("seed must be >= 0");
  s.seed = static_cast<uint64_t>(seed);
  return s;
}

void require_no_jobs(const Scenario& s, const std::string& command) {
  if (!s.jobs.empty())
    s.jobs_where.fail(
        fmt::format("ddlsim {} takes a scenario without jobs; run this one with ddlsim run", command));
}

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  YamlNode root = YamlNode::load_file(path);
  for (const std::string& o : overrides) root.apply_override(o);
  return parse_scenario(root);
}

}  // namespace ddlsim
