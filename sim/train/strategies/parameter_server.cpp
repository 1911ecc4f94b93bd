// Parameter servers: workers push gradient chunks to k server shards (by byte range, or whole layers round
// robin), servers sum them (sync) or apply each push (async, bounded-staleness ssp), workers pull the
// updated shards. Servers run on dedicated hosts or on the workers' nodes.
#include "sim/train/strategies/strategy.hpp"

namespace ddlsim {

namespace {

class PsStep : public StepBuilder {
 public:
  explicit PsStep(const PsOptions& o) : o_(o) {}

  std::vector<Bucket> buckets(const Workload& wl) const override {
    return make_buckets(wl, o_.chunk, o_.chunk);
  }

  TaskId forward_gate(int step) const override {
    int gate = step - o_.staleness - 1;
    return o_.mode == PsMode::Ssp && gate >= 0 ? barrier_[static_cast<size_t>(gate)] : kNoTask;
  }

  bool collective_kernels() const override { return false; }

  void build_step(StepContext& ctx) override {
    TaskGraph& g = ctx.graph;
    const Cluster& c = ctx.cluster;
    const uint32_t p = ctx.workers, K = o_.placement.servers;
    const int k = ctx.step;
    const bool sync = o_.mode == PsMode::Sync;
    if (server_cpu_.empty())
      for (uint32_t j = 0; j < K; ++j) server_cpu_.push_back(g.add_resource());
    uint32_t l_push = g.label("push"), l_agg = g.label("aggregate"), l_pull = g.label("pull"),
             l_upd = g.label("server update");
    std::vector<std::vector<TaskId>> pulls(p);
    TaskId barrier = g.add_delay(Time(), Category::Other, -1, k, g.label("ssp clock"));
    for (size_t ch = 0; ch < ctx.buckets.size(); ++ch) {
      std::vector<uint32_t> targets;
      if (o_.shard_by_layer)
        targets.push_back(static_cast<uint32_t>(ch % K));
      else
        for (uint32_t j = 0; j < K; ++j) targets.push_back(j);
      double bytes = ctx.buckets[ch].bytes / static_cast<double>(targets.size());
      for (uint32_t j : targets) {
        VertexId server = o_.placement.dedicated ? c.servers[j] : c.cpus[j % c.cpus.size()];
        std::vector<TaskId> aggs(p);
        for (uint32_t w = 0; w < p; ++w) {
          TaskId push = g.add_transfer(c.gpus[w], server, bytes, static_cast<int32_t>(w), k, l_push);
          g.depend(ctx.backward[w][ch], push);
          // sync: the push is summed into the shard's accumulator (12 bytes of traffic per parameter);
          // async/ssp: it is applied to the weights at once, an SGD-momentum update (16 bytes, see below).
          double cost = (sync ? 1.0 : 4.0 / 3.0) * c.comm.reduce_seconds(bytes, bytes, true);
          aggs[w] = g.add_delay(Time::from_seconds(cost), Category::Communication, static_cast<int32_t>(w), k,
                                sync ? l_agg : l_upd, server_cpu_[j]);
          g.depend(push, aggs[w]);
          g.depend(aggs[w], barrier);
        }
        TaskId upd = kNoTask;
        if (sync) {
          // SGD with momentum on the server's CPU: like the GPU update, 16 bytes of memory traffic per
          // 4-byte parameter, where a sum moves 12 (two operands read, one written): 4/3 of summing the shard
          // at the CPU's reduction rate (free when the cluster gives none).
          upd = g.add_delay(Time::from_seconds(4.0 / 3.0 * c.comm.reduce_seconds(bytes, bytes, true)),
                            Category::Communication, -1, k, l_upd, server_cpu_[j]);
          for (uint32_t w = 0; w < p; ++w) g.depend(aggs[w], upd);
        }
        for (uint32_t w = 0; w < p; ++w) {
          TaskId pull = g.add_transfer(server, c.gpus[w], bytes, static_cast<int32_t>(w), k, l_pull);
          g.depend(upd != kNoTask ? upd : aggs[w], pull);
          pulls[w].push_back(pull);
        }
      }
    }
    barrier_.push_back(barrier);
    for (uint32_t w = 0; w < p; ++w) {
      TaskId done = g.add_delay(Time(), Category::Other, static_cast<int32_t>(w), k, g.label("step done"));
      for (TaskId t : pulls[w]) g.depend(t, done);
      ctx.step_end[w] = done;
    }
  }

 private:
  PsOptions o_;
  std::vector<uint32_t> server_cpu_;  // one exclusive CPU resource per server shard
  std::vector<TaskId> barrier_;       // per step: every push of the step applied (the SSP clock)
};

}  // namespace

void configure_ps(Strategy& s, const OptionReader& o) {
  PsOptions ps;
  ps.placement = parse_server_placement(o);
  if (!o.name_only()) {
    if (o.has("mode")) {
      std::string m = o.text("mode");
      if (m == "sync")
        ps.mode = PsMode::Sync;
      else if (m == "async")
        ps.mode = PsMode::Async;
      else if (m == "ssp")
        ps.mode = PsMode::Ssp;
      else
        o.fail("mode", "mode must be sync, async or ssp");
    }
    if (o.has("staleness")) ps.staleness = static_cast<int>(o.integer("staleness"));
    if (o.has("chunk_size")) ps.chunk = o.bytes("chunk_size").value;
    if (o.has("sharding")) {
      std::string v = o.text("sharding");
      if (v != "layer" && v != "range") o.fail("sharding", "sharding must be layer or range");
      ps.shard_by_layer = v == "layer";
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
