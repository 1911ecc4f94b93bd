// Parameter servers: workers push gradient chunks to k server shards (by byte range, whole chunks or whole
// layers round robin, greedy by size or as MXNet's kvstore places its keys), servers sum them (sync) or apply
// each push (async, bounded-staleness ssp), workers pull the updated shards. Servers run on dedicated hosts
// or on the workers' nodes.
#include <algorithm>
#include <string>
#include <unordered_map>

#include "sim/train/strategies/strategy.hpp"

namespace ddlsim {

namespace {

class PsStep : public StepBuilder {
 public:
  explicit PsStep(const PsOptions& o) : o_(o) {}

  // Byte ranges and partitions: chunk_size slices; by variable (MXNet's keys, BytePS's partitions): each
  // layer's gradients are pushed when its backward ends, whole to one server, in a slice to every server, or
  // cut into BytePS's partitions.
  std::vector<Bucket> buckets(const Workload& wl) const override {
    return o_.sharding == PsSharding::Range || o_.sharding == PsSharding::Partition
               ? make_buckets(wl, o_.chunk, o_.chunk)
               : make_buckets(wl, 0, 0);
  }

  TaskId forward_gate(int step) const override {
    int gate = step - o_.staleness - 1;
    return o_.mode == PsMode::Ssp && gate >= 0 ? barrier_[static_cast<size_t>(gate)] : kNoTask;
  }

  bool collective_kernels() const override { return false; }
  // Workers read each variable from its server when the forward reaches it (TensorFlow's recv ops of PS
  // variables, MXNet's and BytePS's per-layer pulls), so pulls overlap the forward pass.
  bool pulls_gate_forward() const override { return true; }

  void build_step(StepContext& ctx) override {
    TaskGraph& g = ctx.graph;
    const Cluster& c = ctx.cluster;
    const uint32_t p = ctx.workers;
    if (K_ == 0) K_ = o_.placement.count(c.cpus.size());
    const uint32_t K = K_;
    const int k = ctx.step;
    const bool sync = o_.mode == PsMode::Sync;
    const HostTransport& transport = host_transport(c, p);
    const bool layerwise = !ctx.pulled.empty();
    if (accumulator_.empty()) add_resources(g, c, transport);
    uint32_t l_push = g.label("push"), l_agg = g.label("aggregate"), l_pull = g.label("pull"),
             l_upd = g.label("server update");
    uint32_t l_send = transport.spends_cpu() ? g.label("host send") : 0,
             l_recv = transport.spends_cpu() ? g.label("host receive") : 0;
    // The host CPU work of one message at one end (`at`: the server's host, or none at a worker), after
    // `after`; the task itself, or `after` when the transport spends no host CPU.
    auto host_work = [&](TaskId after, double bytes, uint32_t cpu, uint32_t w, uint32_t label,
                         VertexId at = kNoVertex) {
      if (!transport.spends_cpu()) return after;
      TaskId t = g.add_delay(Time::from_seconds(transport.cpu_seconds(bytes)), Category::Communication,
                             static_cast<int32_t>(w), k, label, cpu, at);
      g.depend(after, t);
      return t;
    };
    // A message's turns in the transport's serial stages (push: worker w to server j; pull: j to w), after
    // `after`: its connection's, then its sending process's (the worker's for a push, the server's for a
    // pull; a colocated server is a process of its own). The last of them, or `after` when there are none.
    uint32_t l_conn = transport.connection_rate > 0 ? g.label("connection") : 0,
             l_proc = transport.process_rate > 0 ? g.label("sending process") : 0;
    auto serial = [&](TaskId after, double bytes, uint32_t w, uint32_t j, bool pull, VertexId at) {
      auto pass = [&](uint64_t key, double rate, uint32_t label, VertexId where) {
        if (rate <= 0) return;
        auto [it, fresh] = stage_.try_emplace(key, 0u);
        if (fresh) it->second = g.add_resource();
        TaskId t = g.add_delay(Time::from_seconds(bytes / rate), Category::Communication,
                               static_cast<int32_t>(w), k, label, it->second, where);
        g.depend(after, t);
        after = t;
      };
      pass(((static_cast<uint64_t>(w) * K + j) * 2 + pull) * 2, transport.connection_rate, l_conn, at);
      pass((pull ? static_cast<uint64_t>(p) + j : w) * 2 + 1, transport.process_rate, l_proc,
           pull ? at : kNoVertex);
      return after;
    };
    std::vector<std::vector<TaskId>> pulls(p);
    TaskId barrier = g.add_delay(Time(), Category::Other, -1, k, g.label("ssp clock"));
    // Who pushes: every worker, or with local aggregation each node's first GPU (the leader), after the
    // node's other GPUs sent it their chunk over the node's links and it summed them on the GPU; on the host
    // (aggregate_on_host), the node's CPU, after every GPU of the node copied its chunk into host memory and
    // the CPU summed them. The pulls come back to the leader or to host memory, and from there to the GPUs.
    const uint32_t G = o_.local_aggregation ? static_cast<uint32_t>(c.gpus_per_node) : 1;
    const bool on_host = G > 1 && o_.aggregate_on_host;
    auto node_host = [&](uint32_t w) { return c.cpus[w / static_cast<uint32_t>(c.gpus_per_node)]; };
    uint32_t l_local = G > 1 ? g.label("local aggregate") : 0,
             l_fanout = G > 1 ? g.label("local broadcast") : 0;
    // One shard's pulls by every pusher, after `updated` (sync: the shard's update or the step's token) or,
    // async, after the worker's own push was applied; the leader then hands the shard to its node's GPUs.
    struct Shard {
      size_t ch;
      uint32_t j;
      double bytes;
      VertexId server;
      TaskId upd;
      std::vector<TaskId> aggs;  // async/ssp: per worker, its push applied
    };
    std::vector<Shard> held;  // sync with global_barrier: the shards whose pulls wait for the token
    auto pull_shard = [&](const Shard& sh, TaskId updated) {
      for (uint32_t w = 0; w < p; w += G) {
        TaskId sent =
            serial(host_work(sync ? updated : sh.aggs[w], sh.bytes, server_cpu_[sh.j], w, l_send, sh.server),
                   sh.bytes, w, sh.j, true, sh.server);
        const VertexId at = on_host ? node_host(w) : c.gpus[w];
        TaskId pull = g.add_transfer(sh.server, at, sh.bytes, static_cast<int32_t>(w), k, l_pull);
        g.depend(sent, pull);
        TaskId pulled = host_work(pull, sh.bytes, worker_cpu(c, w), w, l_recv);
        if (!on_host) {
          pulls[w].push_back(pulled);
          if (layerwise) ctx.pulled[w][sh.ch].push_back(pulled);
        }
        // The leader, or host memory, hands the shard on.
        for (uint32_t i = on_host ? w : w + 1; i < std::min(p, w + G); ++i) {
          TaskId t = g.add_transfer(at, c.gpus[i], sh.bytes, static_cast<int32_t>(i), k, l_fanout);
          g.depend(pulled, t);
          pulls[i].push_back(t);
          if (layerwise) ctx.pulled[i][sh.ch].push_back(t);
        }
      }
    };
    std::vector<TaskId> ready(p, kNoTask);
    for (size_t ch = 0; ch < ctx.buckets.size(); ++ch) {
      for (uint32_t w = 0; w < p; w += G) {
        ready[w] = ctx.backward[w][ch];
        if (G == 1) continue;
        const double chunk = ctx.buckets[ch].bytes;
        const Time summing = Time::from_seconds(c.comm.reduce_seconds(chunk * (G - 1), chunk, on_host));
        // On the host the sums of one node run one at a time at its memory's rate, the rate its colocated
        // servers' accumulator has (the same resource).
        TaskId sum = on_host ? g.add_delay(summing, Category::Communication, static_cast<int32_t>(w), k,
                                           l_local, host_sum_[w / static_cast<uint32_t>(c.gpus_per_node)])
                             : g.add_compute(ctx.gpu[w], summing, static_cast<int32_t>(w), k, l_local);
        if (!on_host) g.depend(ctx.backward[w][ch], sum);
        for (uint32_t i = on_host ? w : w + 1; i < std::min(p, w + G); ++i) {
          TaskId t = g.add_transfer(c.gpus[i], on_host ? node_host(w) : c.gpus[w], chunk,
                                    static_cast<int32_t>(i), k, l_local);
          g.depend(ctx.backward[i][ch], t);
          g.depend(t, sum);
        }
        ready[w] = sum;
      }
      // The bucket's messages: (server, bytes).
      const double bucket_bytes = ctx.buckets[ch].bytes;
      std::vector<std::pair<uint32_t, double>> targets;
      if (o_.sharding == PsSharding::Range) {
        for (uint32_t j = 0; j < K; ++j) targets.emplace_back(j, bucket_bytes / K);
      } else if (o_.sharding == PsSharding::Partition) {
        targets.emplace_back(static_cast<uint32_t>(ch % K), bucket_bytes);
      } else if (bucket_bytes <= 0) {
        continue;  // a layer without parameters of its own
      } else if (o_.sharding == PsSharding::Byteps) {
        // BytePS (byteps/common/operations.cc, InitTensor and PartitionTensor): a tensor is cut into
        // partitions of BYTEPS_PARTITION_BYTES, the last one the rest, and partition i of the tensor declared
        // d-th is key (d << 16) + i, on the server its key's hash gives (global.cc, EncodeDefaultKey).
        const uint64_t key = layer_key(ctx.workload, ctx.buckets[ch].first_layer) << 16;
        for (uint64_t i = 0; static_cast<double>(i) * o_.chunk < bucket_bytes; ++i)
          targets.emplace_back(byteps_server(key + i, K, o_.key_hash),
                               std::min(o_.chunk, bucket_bytes - static_cast<double>(i) * o_.chunk));
      } else {
        const uint32_t j = variable_server(ctx.workload, ctx.buckets[ch].first_layer);
        if (j == kAllServers)
          for (uint32_t s = 0; s < K; ++s) targets.emplace_back(s, bucket_bytes / K);
        else
          targets.emplace_back(j, bucket_bytes);
      }
      for (const auto& [j, piece] : targets) {
        Shard sh{ch,      j, piece, o_.placement.dedicated ? c.servers[j] : c.cpus[j % c.cpus.size()],
                 kNoTask, {}};
        uint32_t acc = accumulator_[host_of_server_[j]];
        if (!sync) sh.aggs.assign(p, kNoTask);
        std::vector<TaskId> aggs;
        for (uint32_t w = 0; w < p; w += G) {
          TaskId sent = serial(host_work(ready[w], sh.bytes, worker_cpu(c, w), w, l_send), sh.bytes, w, j,
                               false, sh.server);
          TaskId push = g.add_transfer(on_host ? node_host(w) : c.gpus[w], sh.server, sh.bytes,
                                       static_cast<int32_t>(w), k, l_push);
          g.depend(sent, push);
          TaskId received = host_work(push, sh.bytes, server_cpu_[j], w, l_recv, sh.server);
          // sync: the push is summed into the shard's accumulator (12 bytes of traffic per parameter);
          // async/ssp: it is applied to the weights at once, an SGD-momentum update (16 bytes, see below).
          // Servers on one host share its accumulator (its memory bandwidth).
          double cost = (sync ? 1.0 : 4.0 / 3.0) * c.comm.reduce_seconds(sh.bytes, sh.bytes, true);
          TaskId agg = g.add_delay(Time::from_seconds(cost), Category::Communication, static_cast<int32_t>(w),
                                   k, sync ? l_agg : l_upd, acc, sh.server);
          g.depend(received, agg);
          g.depend(agg, barrier);
          if (sync)
            aggs.push_back(agg);
          else
            sh.aggs[w] = agg;
        }
        if (sync) {
          // SGD with momentum on the server's CPU: like the GPU update, 16 bytes of memory traffic per
          // 4-byte parameter, where a sum moves 12 (two operands read, one written): 4/3 of summing the shard
          // at the CPU's reduction rate (free when the cluster gives none).
          sh.upd =
              g.add_delay(Time::from_seconds(4.0 / 3.0 * c.comm.reduce_seconds(sh.bytes, sh.bytes, true)),
                          Category::Communication, -1, k, l_upd, acc, sh.server);
          for (TaskId a : aggs) g.depend(a, sh.upd);
        }
        if (o_.global_barrier)
          held.push_back(std::move(sh));
        else
          pull_shard(sh, sh.upd);
      }
    }
    // TensorFlow's SyncReplicasOptimizer: the chief hands out a step's tokens once every shard is updated,
    // and only then does any worker read a variable for the next step.
    if (o_.global_barrier) {
      TaskId token = g.add_delay(Time(), Category::Other, -1, k, g.label("sync token"));
      for (const Shard& sh : held) g.depend(sh.upd, token);
      for (const Shard& sh : held) pull_shard(sh, token);
    }
    barrier_.push_back(barrier);
    for (uint32_t w = 0; w < p; ++w) {
      TaskId done = g.add_delay(Time(), Category::Other, static_cast<int32_t>(w), k, g.label("step done"));
      for (TaskId t : pulls[w]) g.depend(t, done);
      ctx.step_end[w] = done;
    }
  }

 private:
  // Resources: one accumulator per host that holds servers (a dedicated server's host, or a worker node
  // with colocated servers: its servers share it, as they share its memory bandwidth); and, when the
  // transport spends host CPU, each host's cores (worker nodes; dedicated server hosts).
  void add_resources(TaskGraph& g, const Cluster& c, const HostTransport& transport) {
    const uint32_t K = K_;
    const uint32_t unlimited = 1u << 30;
    auto cores = [&](int n) { return n > 0 ? static_cast<uint32_t>(n) : unlimited; };
    std::vector<uint32_t> host_acc;
    for (uint32_t j = 0; j < K; ++j) {
      uint32_t host = o_.placement.dedicated ? j : static_cast<uint32_t>(j % c.cpus.size());
      if (host >= host_acc.size()) host_acc.resize(host + 1, UINT32_MAX);
      if (host_acc[host] == UINT32_MAX) host_acc[host] = static_cast<uint32_t>(accumulator_.size());
      host_of_server_.push_back(host_acc[host]);
      if (host_acc[host] == accumulator_.size()) accumulator_.push_back(g.add_resource());
    }
    if (o_.aggregate_on_host)  // a worker node's sums: its colocated servers' accumulator, else its own
      for (size_t n = 0; n < c.cpus.size(); ++n)
        host_sum_.push_back(!o_.placement.dedicated && n < host_acc.size() && host_acc[n] != UINT32_MAX
                                ? accumulator_[host_acc[n]]
                                : g.add_resource());
    if (!transport.spends_cpu()) {  // no host CPU work: no cores
      node_cpu_.assign(c.cpus.size(), kNoResource);
      server_cpu_.assign(K, kNoResource);
      return;
    }
    for (size_t n = 0; n < c.cpus.size(); ++n) node_cpu_.push_back(g.add_resource(cores(c.host_cores)));
    for (uint32_t j = 0; j < K; ++j)
      server_cpu_.push_back(o_.placement.dedicated
                                ? g.add_resource(cores(o_.server_cores > 0 ? o_.server_cores : c.host_cores))
                                : node_cpu_[j % c.cpus.size()]);
  }
  // The strategy's transport; none when one worker process holds the servers itself: a job that is not
  // distributed (one worker on one node, with its servers colocated) keeps its variables in process, as
  // TensorFlow does without a ps job, so pushes and pulls are copies over the node's links only.
  const HostTransport& host_transport(const Cluster& c, uint32_t workers) const {
    static const HostTransport in_process;
    const uint32_t G = o_.local_aggregation ? static_cast<uint32_t>(c.gpus_per_node) : 1;
    return !o_.placement.dedicated && workers <= G ? in_process : c.comm.transports.at(o_.transport);
  }
  // The server of layer `layer`'s variables, or kAllServers: round robin in creation (forward) order, greedy
  // by bytes, or as MXNet's kvstore places a key (kvstore_dist.h, EncodeDefaultKey: an array of at least
  // bigarray_bound elements is divided evenly over all servers, a smaller one goes whole to server
  // (key * 9973) mod k; the keys are the parameter arrays in creation order, here the layers with
  // parameters).
  static constexpr uint32_t kAllServers = UINT32_MAX;
  uint32_t variable_server(const Workload& wl, size_t layer) {
    if (variable_server_.empty()) {
      const uint32_t K = K_;
      std::vector<double> load(K, 0);
      uint32_t next = 0;
      for (size_t i = 0; i < wl.model.layers.size(); ++i) {
        const LayerSpec& l = wl.model.layers[i];
        if (l.params <= 0) {
          variable_server_.push_back(0);
          continue;
        }
        uint32_t j = next;
        if (o_.sharding == PsSharding::Mxnet)
          j = l.params >= o_.bigarray_bound ? kAllServers
                                            : static_cast<uint32_t>(layer_key(wl, i) * 9973 % K);
        else if (o_.sharding == PsSharding::Greedy)
          j = static_cast<uint32_t>(std::min_element(load.begin(), load.end()) - load.begin());
        else
          next = (next + 1) % K;
        if (j != kAllServers) load[j] += static_cast<double>(l.params) * wl.gradient_bytes;
        variable_server_.push_back(j);
      }
    }
    return variable_server_[layer];
  }
  // A layer's key: its index among the layers with parameters, in creation (forward) order, as MXNet numbers
  // its parameter arrays and BytePS its declared tensors.
  uint64_t layer_key(const Workload& wl, size_t layer) {
    if (layer_key_.empty()) {
      uint64_t key = 0;
      for (const LayerSpec& l : wl.model.layers) layer_key_.push_back(l.params > 0 ? key++ : key);
    }
    return layer_key_[layer];
  }
  // BytePS's key placement (global.cc: Hash_DJB2, Hash_SDBM, Hash_Naive; modulo the server count).
  static uint32_t byteps_server(uint64_t key, uint32_t servers, PsOptions::KeyHash how) {
    uint64_t hash = 0;
    if (how == PsOptions::KeyHash::Naive) {
      hash = ((key >> 16) + key % 65536) * 9973;
    } else if (how == PsOptions::KeyHash::Djb2) {
      hash = 5381;
      for (char c : std::to_string(key)) hash = hash * 33 + static_cast<uint64_t>(c);
    } else {
      for (char c : std::to_string(key)) hash = static_cast<uint64_t>(c) + (hash << 6) + (hash << 16) - hash;
    }
    return static_cast<uint32_t>(hash % servers);
  }
  uint32_t worker_cpu(const Cluster& c, uint32_t w) const {
    return node_cpu_[w / static_cast<uint32_t>(c.gpus_per_node)];
  }

  PsOptions o_;
  uint32_t K_ = 0;                        // servers (at the first step: their count on this cluster)
  std::vector<uint32_t> accumulator_;     // per host holding servers
  std::vector<uint32_t> host_of_server_;  // index into accumulator_ per server
  std::vector<uint32_t> host_sum_;        // per worker node, aggregate_on_host: the resource its sums run on
  std::vector<uint32_t> node_cpu_;        // per worker node: its cores (costly transports only)
  std::vector<uint32_t> server_cpu_;      // per server: its host's cores (costly transports only)
  // Serial stages: 2·((worker, server, pull) index) for a connection's, 2·(sending process) + 1 for a
  // process's (workers 0..p-1, then the servers).
  std::unordered_map<uint64_t, uint32_t> stage_;
  std::vector<TaskId> barrier_;            // per step: every push of the step applied (the SSP clock)
  std::vector<uint32_t> variable_server_;  // per layer, for sharding by variable
  std::vector<uint64_t> layer_key_;        // per layer, for MXNet's and BytePS's keys
};

}  // namespace

void configure_ps(Strategy& s, const OptionReader& o) {
  PsOptions ps;
  ps.placement = parse_server_placement(o);
  if (!o.name_only()) {
    if (o.has("mode")) {
      static const std::pair<const char*, PsMode> modes[] = {
          {"sync", PsMode::Sync}, {"async", PsMode::Async}, {"ssp", PsMode::Ssp}};
      const std::optional<PsMode> m = named(o.text("mode"), modes);
      if (!m) o.fail("mode", "mode must be sync, async or ssp");
      ps.mode = *m;
    }
    if (o.has("staleness")) {
      int64_t v = o.integer("staleness");
      if (v > 10000) o.fail("staleness", "staleness must be at most 10000 steps");
      v = std::max<int64_t>(v, -1);  // below 0: refused below for mode ssp
      ps.staleness = static_cast<int>(v);
    }
    if (o.has("chunk_size")) ps.chunk = positive_bytes(o, "chunk_size");
    if (o.has("sharding")) {
      static const std::pair<const char*, PsSharding> shardings[] = {
          {"range", PsSharding::Range},      {"partition", PsSharding::Partition},
          {"byteps", PsSharding::Byteps},    {"round-robin", PsSharding::RoundRobin},
          {"layer", PsSharding::RoundRobin}, {"greedy", PsSharding::Greedy},
          {"mxnet", PsSharding::Mxnet}};
      const std::optional<PsSharding> v = named(o.text("sharding"), shardings);
      if (!v)
        o.fail("sharding",
               "sharding must be range, partition, byteps, round-robin (or layer), greedy or mxnet");
      ps.sharding = *v;
      ps.chunk_where = o.where(o.has("chunk_size") ? "chunk_size" : "sharding");
      // BytePS's default and recommended BYTEPS_PARTITION_BYTES (docs/env.md, byteps/common/global.cc).
      if (ps.sharding == PsSharding::Byteps && !o.has("chunk_size")) ps.chunk = 4096000;
      if (ps.sharding != PsSharding::Range && ps.sharding != PsSharding::Partition &&
          ps.sharding != PsSharding::Byteps && o.has("chunk_size"))
        o.fail("chunk_size",
               "chunk_size slices gradients for sharding: range, partition or byteps; by variable, each "
               "layer is "
               "one message");
    }
    if (o.has("bigarray_bound")) {
      int64_t v = o.integer("bigarray_bound");
      if (v < 1) o.fail("bigarray_bound", "bigarray_bound must be a positive number of parameters");
      if (ps.sharding != PsSharding::Mxnet)
        o.fail("bigarray_bound", "bigarray_bound applies to sharding: mxnet only");
      ps.bigarray_bound = v;
    }
    if (o.has("key_hash")) {
      static const std::pair<const char*, PsOptions::KeyHash> hashes[] = {
          {"djb2", PsOptions::KeyHash::Djb2},
          {"sdbm", PsOptions::KeyHash::Sdbm},
          {"naive", PsOptions::KeyHash::Naive}};
      const std::optional<PsOptions::KeyHash> h = named(o.text("key_hash"), hashes);
      if (!h) o.fail("key_hash", "key_hash must be djb2, sdbm or naive");
      if (ps.sharding != PsSharding::Byteps) o.fail("key_hash", "key_hash applies to sharding: byteps only");
      ps.key_hash = *h;
    }
    if (o.has("local_aggregation")) {
      const std::string v = o.text("local_aggregation");
      if (v == "gpu" || v == "cpu") {
        ps.local_aggregation = true;
        ps.aggregate_on_host = v == "cpu";
      } else {
        try {
          ps.local_aggregation = o.boolean("local_aggregation");  // true: on the GPU
        } catch (const InputError&) {
          o.fail("local_aggregation",
                 fmt::format("expected false, true (on the node's first GPU), gpu or cpu, got \"{}\"", v));
        }
      }
    }
    if (o.has("global_barrier")) {
      ps.global_barrier = o.boolean("global_barrier");
      if (ps.global_barrier && ps.mode != PsMode::Sync)
        o.fail("global_barrier", "global_barrier applies to mode: sync only");
    }
    if (o.has("transport")) {
      ps.transport = o.text("transport");
      ps.transport_where = o.where("transport");
    }
    if (o.has("server_cores")) {
      int64_t v = o.integer("server_cores");
      if (v < 1 || v > 4096) o.fail("server_cores", "server_cores must be between 1 and 4096");
      if (!ps.placement.dedicated)
        o.fail("server_cores",
               "server_cores are a dedicated server host's; colocated servers use host_cores");
      ps.server_cores = static_cast<int>(v);
    }
    if (ps.mode == PsMode::Ssp && ps.staleness < 0) o.fail("staleness", "staleness must be >= 0");
    if (o.has("staleness") && ps.mode != PsMode::Ssp)
      o.fail("staleness", "staleness applies to mode: ssp only");
  }
  s.options = ps;
}

std::unique_ptr<StepBuilder> ps_builder(const Strategy& s) {
  return std::make_unique<PsStep>(std::get<PsOptions>(s.options));
}

}  // namespace ddlsim
