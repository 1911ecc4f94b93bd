// The registry of training strategies: name, accepted options, configure, step builder. Add a strategy with
// one line here (and its file in this folder).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/train/strategies/strategy.hpp"

namespace ddlsim {

const std::vector<StrategyEntry>& strategy_registry() {
  static const std::vector<std::string> flat = {"bucket_size", "overlap", "inter_node"};
  static const std::vector<StrategyEntry> entries = {
      {"ddp", {"bucket_size", "first_bucket", "algorithm", "inter_node"}, configure_ddp, allreduce_builder},
      {"horovod",
       {"fusion_threshold", "cycle_time", "hierarchical", "algorithm", "inter_node"},
       configure_horovod,
       allreduce_builder},
      {"zero", {"stage", "bucket_size"}, configure_zero, zero_builder},
      {"ps",
       {"servers", "placement", "mode", "staleness", "chunk_size", "sharding", "link", "transport",
        "server_cores", "local_aggregation"},
       configure_ps,
       ps_builder},
      {"ring", flat, configure_flat_allreduce, allreduce_builder},
      {"rhd", flat, configure_flat_allreduce, allreduce_builder},
      {"halving-doubling", flat, configure_flat_allreduce, allreduce_builder},
      {"tree", flat, configure_flat_allreduce, allreduce_builder},
      {"double-tree", flat, configure_flat_allreduce, allreduce_builder},
      {"direct", flat, configure_flat_allreduce, allreduce_builder},
      {"hierarchical", flat, configure_flat_allreduce, allreduce_builder},
  };
  return entries;
}

const StrategyEntry* find_strategy_entry(const std::string& name) {
  for (const StrategyEntry& e : strategy_registry())
    if (name == e.name) return &e;
  return nullptr;
}

std::string strategy_names() {
  std::vector<std::string> names;
  for (const StrategyEntry& e : strategy_registry()) names.push_back(e.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

Strategy configure_strategy(const std::string& name, const std::string& label, const OptionReader& options) {
  const StrategyEntry* entry = find_strategy_entry(name);
  if (!entry)
    options.fail(options.name_only() ? "" : "name",
                 fmt::format("unknown training strategy \"{}\" ({})", name, strategy_names()));
  if (!options.name_only()) {
    std::vector<std::string> keys = {"name", "label"};
    keys.insert(keys.end(), entry->keys.begin(), entry->keys.end());
    options.expect_keys(keys);
  }
  Strategy s;
  s.name = name;
  s.label = label.empty() ? name : label;
  s.where = options.where("");
  entry->configure(s, options);
  return s;
}

ServerHosts Strategy::server_hosts() const {
  if (const PsOptions* ps = std::get_if<PsOptions>(&options)) return ps->placement.hosts();
  return {};
}

Algorithm parse_inter_node(const OptionReader& o, const std::string& key) {
  Algorithm a;
  std::string v = o.text(key);
  if (v == "auto") return Algorithm::Auto;
  if (allreduce_algorithm(v, a) && a != Algorithm::Direct && a != Algorithm::Hierarchical) return a;
  o.fail(key, "inter_node must be ring, rhd, tree, double-tree or auto");
}

ServerPlacement parse_server_placement(const OptionReader& o) {
  ServerPlacement sp;
  if (o.name_only()) return sp;
  if (o.has("servers")) {
    int64_t v = o.integer("servers");
    if (v < 1 || v > 65536) o.fail("servers", "servers must be between 1 and 65536");
    sp.servers = static_cast<uint32_t>(v);
  }
  if (o.has("placement")) {
    std::string v = o.text("placement");
    if (v != "dedicated" && v != "colocated") o.fail("placement", "placement must be dedicated or colocated");
    sp.dedicated = v == "dedicated";
  }
  if (o.has("link")) {
    if (!sp.dedicated)
      o.fail("link", "link is the cable of a dedicated server; a colocated server uses its node's NIC");
    std::unique_ptr<OptionReader> l = o.child("link");
    l->expect_keys({"bandwidth", "latency"});
    sp.link = LinkSpec{l->rate("bandwidth"), l->has("latency") ? l->time("latency") : Time()};
  }
  return sp;
}

void price_inter_node(CollectiveShape& shape, const Cluster& cluster) {
  if (shape.algorithm != Algorithm::Hierarchical || shape.inter_node != Algorithm::Auto) return;
  MessageCost cost = inter_node_cost(cluster, shape.bytes / shape.ranks);
  shape.alpha = cost.alpha;
  shape.rate = cost.rate;
}

std::vector<Bucket> make_buckets(const Workload& wl, double cap, double first_cap) {
  std::vector<Bucket> out;
  const auto& L = wl.model.layers;
  double acc = 0;
  size_t end = L.size();
  for (size_t i = L.size(); i-- > 0;) {
    acc += static_cast<double>(L[i].params) * wl.gradient_bytes;
    double limit = out.empty() ? first_cap : cap;
    if (acc >= limit || i == 0) {
      out.push_back({i, end - 1, acc});
      acc = 0;
      end = i;
    }
  }
  return out;
}

TaskId StepContext::collective(Algorithm a, double bytes, const char* label, std::vector<TaskId> launch,
                               Algorithm inter_node) {
  auto key = std::make_pair(static_cast<int>(a), bytes);
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    CollectiveShape shape{a, workers, static_cast<uint32_t>(cluster.gpus_per_node), 0, bytes, inter_node};
    price_inter_node(shape, cluster);
    it = plans_.emplace(key, make_plan(shape)).first;
  }
  CollectiveTask t;
  t.plan = it->second;
  t.members = cluster.gpus;
  t.isolated = true;
  t.launch = std::move(launch);
  return graph.add_collective(std::move(t), step, graph.label(label));
}

TaskId StepContext::bucket_collectives(Algorithm a, const char* label, TaskId& prev, Algorithm inter_node,
                                       const std::function<TaskId(size_t)>& gate) {
  TaskId last = kNoTask;
  for (size_t b = 0; b < buckets.size(); ++b) {
    TaskId g = gate ? gate(b) : kNoTask;
    std::vector<TaskId> launch(workers, g);
    if (g == kNoTask)
      for (uint32_t w = 0; w < workers; ++w) launch[w] = backward[w][b];
    TaskId coll = collective(a, buckets[b].bytes, label, std::move(launch), inter_node);
    TaskId first = g != kNoTask ? g : coll;  // what the bucket's backward passes and the previous one gate
    for (uint32_t w = 0; w < workers; ++w) graph.depend(backward[w][b], first);
    if (g != kNoTask) graph.depend(g, coll);
    if (prev != kNoTask) graph.depend(prev, first);
    prev = last = coll;
  }
  return last;
}

double StepContext::update_time(double fraction) const {
  // SGD with momentum streams weights, gradients and momentum: ~4 reads/writes of 4 bytes per parameter.
  return cluster.gpu.memory_bandwidth > 0 ? params * fraction * 16 / cluster.gpu.memory_bandwidth : 0;
}

}  // namespace ddlsim
