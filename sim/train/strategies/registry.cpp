// The registry of training strategies: name, accepted options, configure, step builder. Add a strategy with
// one line here (and its file in this folder).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

#include "sim/train/nccl_tuner.hpp"
#include "sim/train/strategies/strategy.hpp"

namespace ddlsim {

const std::vector<StrategyEntry>& strategy_registry() {
  static const std::vector<std::string> flat = {"bucket_size", "overlap", "inter_node", "channels"};
  static const std::vector<StrategyEntry> entries = {
      {"ddp",
       {"bucket_size", "first_bucket", "algorithm", "inter_node", "channels"},
       configure_ddp,
       allreduce_builder},
      {"horovod",
       {"fusion_threshold", "cycle_time", "hierarchical", "algorithm", "inter_node", "channels"},
       configure_horovod,
       allreduce_builder},
      {"zero", {"stage", "bucket_size"}, configure_zero, zero_builder},
      {"ps",
       {"servers", "placement", "mode", "staleness", "chunk_size", "sharding", "link", "transport",
        "server_cores", "local_aggregation", "global_barrier", "bigarray_bound", "key_hash"},
       configure_ps,
       ps_builder},
      {"ring", flat, configure_flat_allreduce, allreduce_builder},
      {"rhd", flat, configure_flat_allreduce, allreduce_builder},
      {"halving-doubling", flat, configure_flat_allreduce, allreduce_builder},
      {"recursive-doubling", flat, configure_flat_allreduce, allreduce_builder},
      {"mpich", flat, configure_flat_allreduce, allreduce_builder},
      {"openmpi", flat, configure_flat_allreduce, allreduce_builder},
      {"tree", flat, configure_flat_allreduce, allreduce_builder},
      {"double-tree", flat, configure_flat_allreduce, allreduce_builder},
      {"direct", flat, configure_flat_allreduce, allreduce_builder},
      {"hierarchical", flat, configure_flat_allreduce, allreduce_builder},
      {"nvls", flat, configure_flat_allreduce, allreduce_builder},
      {"nvls-tree", flat, configure_flat_allreduce, allreduce_builder},
      {"collnet", flat, configure_flat_allreduce, allreduce_builder},
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
  if (allreduce_algorithm(v, a) && a != Algorithm::Direct && a != Algorithm::Hierarchical &&
      a != Algorithm::Nvls && a != Algorithm::NvlsTree && a != Algorithm::CollNet)
    return a;
  o.fail(key, "inter_node must be ring, rhd, tree, double-tree or auto");
}

ServerPlacement parse_server_placement(const OptionReader& o) {
  ServerPlacement sp;
  if (o.name_only()) return sp;
  if (o.has("servers")) {
    if (o.text("servers") == "per-node") {
      sp.per_node = true;
    } else {
      int64_t v = o.integer("servers");
      if (v < 1 || v > 65536) o.fail("servers", "servers must be between 1 and 65536, or per-node");
      sp.servers = static_cast<uint32_t>(v);
    }
  }
  if (o.has("placement")) {
    std::string v = o.text("placement");
    if (v != "dedicated" && v != "colocated") o.fail("placement", "placement must be dedicated or colocated");
    sp.dedicated = v == "dedicated";
  }
  if (sp.per_node && sp.dedicated)
    o.fail("servers", "servers: per-node puts one server on every node: it needs placement: colocated");
  if (o.has("link")) {
    if (!sp.dedicated)
      o.fail("link", "link is the cable of a dedicated server; a colocated server uses its node's NIC");
    std::unique_ptr<OptionReader> l = o.child("link");
    l->expect_keys({"bandwidth", "latency"});
    sp.link = LinkSpec{l->rate("bandwidth"), l->has("latency") ? latency_option(*l, "latency") : Time()};
  }
  return sp;
}

std::unique_ptr<CollectivePlan> cluster_plan(CollectiveShape& shape, const Cluster& cluster,
                                             uint32_t channels) {
  // NCCL runs CollNet between nodes only: on one node a collnet run (a scenario's reference, say) takes what
  // NCCL's tuner picks there.
  if (shape.algorithm == Algorithm::CollNet && shape.ranks <= static_cast<uint32_t>(cluster.gpus_per_node)) {
    shape.algorithm = Algorithm::Hierarchical;
    shape.inter_node = Algorithm::Auto;
  }
  if (shape.algorithm == Algorithm::Ring || shape.algorithm == Algorithm::Hierarchical) {
    shape.channels = ring_channels(cluster, channels);
    shape.rings = cluster.rings;
  }
  if (shape.algorithm == Algorithm::Hierarchical && shape.inter_node == Algorithm::Auto) {
    // With NCCL's protocols, NCCL's tuner picks ring, tree, NVLS (one node) or NVLSTree (across nodes);
    // otherwise the α-β estimate of ring and tree.
    shape.inter_node = nccl_inter_node(shape, cluster);
    if (shape.inter_node == Algorithm::Nvls || shape.inter_node == Algorithm::NvlsTree ||
        shape.inter_node == Algorithm::CollNet) {
      shape.algorithm = shape.inter_node;
      shape.inter_node = Algorithm::Ring;
    }
    if (shape.inter_node == Algorithm::Auto) {
      MessageCost cost = inter_node_cost(cluster, shape.bytes / shape.ranks);
      shape.alpha = cost.alpha + cost.latency;  // a message pays its route's latency and α
      shape.rate = cost.rate;
      shape.inter_node = resolve_inter_node(shape);
    }
  }
  // comm.pipeline_chunk: the hierarchical allreduce's phases pipelined in chunks of that many bytes per
  // channel (make_plan pipelines it where pipelined_hierarchical says).
  if (const double chunk = cluster.comm.pipeline_chunk_bytes();
      chunk > 0 && shape.algorithm == Algorithm::Hierarchical) {
    double chunks = std::ceil(shape.bytes / (std::max<uint32_t>(1, shape.channels) * chunk));
    shape.chunks = static_cast<uint32_t>(std::clamp(chunks, 1.0, static_cast<double>(kMaxPipelineChunks)));
  }
  // NCCL disables NVLSTree on one node, where it runs NVLS (tuning.cc): so does a run asked for nvls-tree,
  // such as its reference on one node.
  if (shape.algorithm == Algorithm::NvlsTree && shape.ranks <= static_cast<uint32_t>(cluster.gpus_per_node))
    shape.algorithm = Algorithm::Nvls;
  if (shape.algorithm == Algorithm::Nvls || shape.algorithm == Algorithm::NvlsTree) {
    shape.channels = nvls_channels(cluster);  // make_plan refuses the wrong node count
    shape.nvls_chunk = cluster.comm.nvls_chunk;
    shape.nvls_tree_max_chunk = cluster.comm.nvls_tree_max_chunk;
    if (shape.channels == 0)
      throw std::invalid_argument(fmt::format(
          "{} needs GPUs that meet at an NVSwitch which reduces (gpu_link: {{kind: nvswitch, nvls: true}}) "
          "and a Hopper or later GPU",
          algorithm_name(shape.algorithm)));
  }
  if (shape.algorithm == Algorithm::CollNet) {
    if (!cluster.sharp)
      throw std::invalid_argument(
          "collnet needs fabric switches that reduce (network: {sharp: true}, InfiniBand SHARP)");
    shape.channels = ring_channels(cluster, 0);
    shape.trees = switch_trees(cluster, shape.ranks);
  }
  std::unique_ptr<CollectivePlan> plan = make_plan(shape);
  plan->set_protocol(nccl_protocol(shape, cluster));
  return plan;
}

std::shared_ptr<const std::vector<SwitchTree>> switch_trees(const Cluster& cluster, uint32_t ranks) {
  const uint32_t g = static_cast<uint32_t>(cluster.gpus_per_node), nodes = ranks / std::max<uint32_t>(1, g);
  auto trees = std::make_shared<std::vector<SwitchTree>>();
  if (nodes < 2) return trees;
  Router router(cluster.topo);
  const Topology& topo = cluster.topo;
  auto is_switch = [&](VertexId v) { return topo.vertex(v).kind == VertexKind::Switch; };
  for (uint32_t l = 0; l < g; ++l) {
    auto head = [&](uint32_t node) { return cluster.gpus[static_cast<size_t>(node) * g + l]; };
    // The root: the switch at the top of the route between the first and the last node's heads (the one
    // farthest from both ends), as a subnet manager roots a SHARP tree at the top of the fabric.
    const std::vector<LinkId>& across = router.route(head(0), head(nodes - 1));
    VertexId root = kNoVertex;
    size_t best = 0;
    for (size_t k = 0; k < across.size(); ++k) {
      const VertexId v = topo.links()[across[k]].to;
      const size_t from_ends = std::min(k + 1, across.size() - k - 1);
      if (is_switch(v) && (root == kNoVertex || from_ends > best)) root = v, best = from_ends;
    }
    // Each head's route to the root, switch by switch, until it meets a switch already in the tree.
    SwitchTree t;
    t.parent.assign(nodes, SwitchTree::kRoot);
    std::unordered_map<VertexId, uint32_t> index;
    auto member = [&](VertexId v, bool& known) {
      auto [it, fresh] = index.try_emplace(v, nodes + static_cast<uint32_t>(t.switches.size()));
      known = !fresh;
      if (fresh) {
        t.switches.push_back(v);
        t.parent.push_back(SwitchTree::kRoot);
      }
      return it->second;
    };
    bool known = false;
    member(root, known);
    for (uint32_t i = 0; i < nodes; ++i) {
      uint32_t child = i;
      for (LinkId k : router.route(head(i), root)) {
        const VertexId v = topo.links()[k].to;
        if (!is_switch(v)) continue;
        const uint32_t m = member(v, known);
        t.parent[child] = m;
        if (known) break;
        child = m;
      }
    }
    trees->push_back(std::move(t));
  }
  return trees;
}

std::vector<VertexId> plan_members(const CollectiveShape& resolved, const Cluster& cluster) {
  std::vector<VertexId> members = cluster.gpus;
  if (resolved.algorithm == Algorithm::Nvls) members.push_back(cluster.nvswitches.at(0));
  if (resolved.algorithm == Algorithm::NvlsTree)
    members.insert(members.end(), cluster.nvswitches.begin(), cluster.nvswitches.end());
  if (resolved.algorithm == Algorithm::CollNet && resolved.trees)
    for (const SwitchTree& t : *resolved.trees)
      members.insert(members.end(), t.switches.begin(), t.switches.end());
  return members;
}

uint32_t ring_channels(const Cluster& cluster, uint32_t requested) {
  if (requested > 0) return requested;
  if (cluster.rings) return static_cast<uint32_t>(cluster.rings->size());
  std::vector<VertexId> nics;
  for (size_t i = 0; i < cluster.gpus.size() && i < static_cast<size_t>(cluster.gpus_per_node); ++i) {
    VertexId nic = cluster.topo.vertex(cluster.gpus[i]).nic;
    if (std::find(nics.begin(), nics.end(), nic) == nics.end()) nics.push_back(nic);
  }
  return std::max<uint32_t>(1, static_cast<uint32_t>(nics.size()));
}

bool fast_path_safe(const CollectivePlan& plan, const Cluster& cluster) {
  double link_rate = std::numeric_limits<double>::infinity(), latency = 0, alpha = 0, gamma = 0;
  for (const DirectedLink& l : cluster.topo.links()) {
    link_rate = std::min(link_rate, l.spec.capacity.value);
    latency = std::max(latency, l.spec.latency.seconds());
  }
  double rate = link_rate;
  for (const CommClass* c : {&cluster.comm.intra, &cluster.comm.inter})
    for (const CommRange& r : c->ranges) {
      alpha = std::max(alpha, r.alpha.seconds());
      rate = std::min(rate, link_rate * r.efficiency);
      if (r.bandwidth > 0) rate = std::min(rate, r.bandwidth);
    }
  for (const ReduceRange& r : cluster.comm.reduce) gamma = std::max({gamma, r.gamma_gpu, r.gamma_cpu});
  // (Host transports do not apply: they price a parameter server strategy's pushes and pulls, never a plan's
  // messages.)
  // A collective library's protocol: its step latency, its base once (bounded per round), its wire bytes.
  if (const MessageProtocol& pr = plan.protocol(); pr.on()) {
    alpha += std::max(pr.alpha_intra, pr.alpha_inter).seconds() + pr.base.seconds();
    rate /= std::max(pr.wire, pr.wire_inter);
    if (pr.rate_cap > 0) rate = std::min(rate, pr.rate_cap);
  }
  // A route crosses a few links inside each node and a few fabric switches: 32 links bound any of them.
  const double per_round_fixed = alpha + 32 * latency;
  const double limit = kMaxSimulatedSeconds / 4;
  // First a bound in O(1): no member sends or reduces more than `members` buffers in a round.
  const double members = plan.members(), most_bytes = plan.bytes() * members;
  if (plan.rounds() * (per_round_fixed + most_bytes / rate + most_bytes * gamma) < limit) return true;
  std::map<uint32_t, double> class_seconds;
  std::vector<Send> sends;
  double total = 0;
  for (uint32_t s = 0; s < plan.rounds(); ++s) {
    auto [it, fresh] = class_seconds.try_emplace(plan.round_class(s), 0.0);
    if (fresh) {
      double most = 0;
      for (uint32_t r = 0; r < plan.members(); ++r) {
        sends.clear();
        plan.sends(r, s, sends);
        double bytes = 0;
        for (const Send& snd : sends) bytes += snd.bytes;
        most = std::max(most, bytes / rate + plan.reduce_bytes(r, s) * gamma);
      }
      it->second = per_round_fixed + most;
    }
    total += it->second;
    if (!(total < limit)) return false;
  }
  return true;
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
                               Algorithm inter_node, uint32_t channels) {
  auto key = std::make_pair(static_cast<int>(a), bytes);
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    CollectiveShape shape{a, workers, static_cast<uint32_t>(cluster.gpus_per_node), 0, bytes, inter_node};
    std::shared_ptr<const CollectivePlan> plan = cluster_plan(shape, cluster, channels);
    bool safe = fast_path_safe(*plan, cluster);
    it = plans_.emplace(key, CachedPlan{std::move(plan), plan_members(shape, cluster), safe}).first;
  }
  CollectiveTask t;
  t.plan = it->second.plan;
  t.members = it->second.members;
  t.isolated = it->second.safe;
  t.launch = std::move(launch);
  return graph.add_collective(std::move(t), step, graph.label(label));
}

TaskId StepContext::bucket_collectives(Algorithm a, const char* label, TaskId& prev, Algorithm inter_node,
                                       const std::function<TaskId(size_t)>& gate, uint32_t channels) {
  TaskId last = kNoTask;
  for (size_t b = 0; b < buckets.size(); ++b) {
    TaskId g = gate ? gate(b) : kNoTask;
    std::vector<TaskId> launch(workers, g);
    if (g == kNoTask)
      for (uint32_t w = 0; w < workers; ++w) launch[w] = backward[w][b];
    TaskId coll = collective(a, buckets[b].bytes, label, std::move(launch), inter_node, channels);
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
