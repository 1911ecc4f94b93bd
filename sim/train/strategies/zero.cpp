// ZeRO (DeepSpeed) stages 1 and 2: gradients are reduce-scattered bucket by bucket (stage 2, overlapped with
// backward) or once after backward (stage 1); each rank updates its 1/p shard, then parameters are
// all-gathered.
#include "sim/train/strategies/strategy.hpp"

namespace ddlsim {

namespace {

class ZeroStep : public StepBuilder {
 public:
  explicit ZeroStep(const ZeroOptions& o) : o_(o) {}

  std::vector<Bucket> buckets(const Workload& wl) const override {
    double cap = o_.bucket_elements > 0 ? o_.bucket_elements * wl.gradient_bytes : o_.bucket;
    if (o_.stage == 1 || cap <= 0) cap = 1e300;
    return make_buckets(wl, cap, cap);
  }

  void build_step(StepContext& ctx) override {
    TaskGraph& g = ctx.graph;
    const uint32_t p = ctx.workers;
    const int k = ctx.step;
    TaskId last = ctx.bucket_collectives(Algorithm::ReduceScatter, "reduce-scatter", prev_);
    // Each rank updates its 1/p shard, then the parameters are all-gathered.
    uint32_t l_upd = g.label("optimizer update");
    std::vector<TaskId> upd(p);
    for (uint32_t w = 0; w < p; ++w) {
      upd[w] = g.add_compute(ctx.gpu[w], Time::from_seconds(ctx.update_time(1.0 / p)),
                             static_cast<int32_t>(w), k, l_upd);
      g.depend(last, upd[w]);
    }
    TaskId ag = ctx.collective(Algorithm::AllGather, ctx.params * ctx.workload.gradient_bytes,
                               "all-gather params", upd);
    for (uint32_t w = 0; w < p; ++w) g.depend(upd[w], ag);
    prev_ = ag;
    for (uint32_t w = 0; w < p; ++w) ctx.step_end[w] = ag;
  }

 private:
  ZeroOptions o_;
  TaskId prev_ = kNoTask;  // the last collective so far: collectives run in order
};

}  // namespace

void configure_zero(Strategy& s, const OptionReader& o) {
  ZeroOptions z;
  if (!o.name_only() && o.has("bucket_size")) {
    z.bucket = positive_bytes(o, "bucket_size");
    z.bucket_elements = 0;  // a given size is in bytes
  }
  if (!o.name_only() && o.has("stage")) {
    int64_t stage = o.integer("stage");
    z.stage = stage == 1 || stage == 2 ? static_cast<int>(stage) : 0;
    if (z.stage != 1 && z.stage != 2)
      o.fail("stage", "ZeRO stage must be 1 or 2 (stage 3 shards parameters too)");
  }
  s.options = z;
}

std::unique_ptr<StepBuilder> zero_builder(const Strategy& s) {
  return std::make_unique<ZeroStep>(std::get<ZeroOptions>(s.options));
}

}  // namespace ddlsim
