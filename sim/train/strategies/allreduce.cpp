// Allreduce strategies: PyTorch DDP (25 MB buckets, a small first one, overlapped with backward), Horovod
// (64 MiB fusion, a background cycle and negotiation), and the flat algorithms (ring, rhd,
// recursive-doubling, mpich, tree, double-tree, direct, hierarchical, nvls, nvls-tree, collnet; one allreduce
// after backward unless bucket_size and overlap ask otherwise).
#include <fmt/format.h>
#include <cmath>

#include "sim/train/strategies/strategy.hpp"

namespace ddlsim {

namespace {

// The options every allreduce strategy shares: algorithm, inter_node, bucket_size, overlap.
void configure_common(AllreduceOptions& a, const OptionReader& o) {
  if (o.name_only()) return;
  if (o.has("algorithm")) {
    std::string v = o.text("algorithm");
    if (a.algorithm == Algorithm::Hierarchical && v != "hierarchical")
      o.fail("algorithm", "hierarchical: true already asks for the hierarchical algorithm");
    if (!allreduce_algorithm(v, a.algorithm))
      o.fail("algorithm",
             "algorithm must be ring, rhd, recursive-doubling, mpich, openmpi, tree, double-tree, direct, "
             "hierarchical, nvls, nvls-tree or collnet");
  }
  if (o.has("inter_node")) {
    a.inter_node = parse_inter_node(o, "inter_node");
    if (a.algorithm != Algorithm::Hierarchical)
      o.fail("inter_node", "inter_node applies to the hierarchical algorithm only");
  }
  if (o.has("bucket_size")) a.bucket = a.first_bucket = positive_bytes(o, "bucket_size");
  if (o.has("first_bucket")) a.first_bucket = positive_bytes(o, "first_bucket");
  if (o.has("fusion_threshold")) a.bucket = a.first_bucket = positive_bytes(o, "fusion_threshold");
  if (o.has("cycle_time")) a.cycle_time = latency_option(o, "cycle_time").seconds();
  if (o.has("overlap")) a.overlap = o.boolean("overlap");
  if (o.has("channels")) {
    int64_t v = o.integer("channels");
    if (v < 1 || v > 64) o.fail("channels", "channels must be between 1 and 64");
    if (a.algorithm != Algorithm::Ring)
      o.fail("channels", "channels apply to the ring algorithm only (hierarchical runs one ring per GPU)");
    a.channels = static_cast<uint32_t>(v);
  }
}

class AllreduceStep : public StepBuilder {
 public:
  explicit AllreduceStep(const AllreduceOptions& o) : o_(o) {}

  std::vector<Bucket> buckets(const Workload& wl) const override {
    double cap = o_.bucket;
    if (cap <= 0 || !o_.overlap) cap = 1e300;
    bool own_first = o_.overlap && o_.first_bucket > 0;  // DDP's small first bucket
    return make_buckets(wl, cap, own_first ? o_.first_bucket : cap);
  }

  void build_step(StepContext& ctx) override {
    TaskGraph& g = ctx.graph;
    const uint32_t p = ctx.workers;
    const int k = ctx.step;
    std::function<TaskId(size_t)> negotiation;
    if (o_.negotiation)
      negotiation = [&](size_t) {
        // Horovod: the background thread wakes every cycle (half a cycle on average) and rank 0 negotiates
        // which tensors are ready on all ranks: a gather and a broadcast of small messages, ~2 log2(p)
        // latencies.
        double lat = ctx.cluster.comm.inter.lookup(64).alpha.seconds() + 2e-6;
        double rounds = 2 * std::ceil(std::log2(std::max<uint32_t>(p, 2)));
        return g.add_delay(Time::from_seconds(o_.cycle_time / 2 + rounds * lat), Category::Communication, -1,
                           k, g.label("horovod negotiation"));
      };
    const auto [algorithm, inter_node] = allreduce_run(o_, ctx.cluster);
    TaskId last = ctx.bucket_collectives(algorithm, "allreduce", prev_, inter_node, negotiation, o_.channels);
    uint32_t l_upd = g.label("optimizer update");
    for (uint32_t w = 0; w < p; ++w) {
      TaskId upd = g.add_compute(ctx.gpu[w], Time::from_seconds(ctx.update_time(1.0)),
                                 static_cast<int32_t>(w), k, l_upd);
      g.depend(last, upd);
      ctx.step_end[w] = upd;
    }
  }

 private:
  AllreduceOptions o_;
  TaskId prev_ = kNoTask;  // the last collective so far: collectives run in order
};

}  // namespace

void configure_ddp(Strategy& s, const OptionReader& o) {
  AllreduceOptions a;
  a.bucket = 25 * 1048576.0;
  a.first_bucket = 1048576.0;  // PyTorch DDP bucket_cap_mb=25, first bucket 1 MB
  configure_common(a, o);
  a.library_choice = !o.has("algorithm") && !o.has("channels");
  s.options = a;
}

void configure_horovod(Strategy& s, const OptionReader& o) {
  AllreduceOptions a;
  a.bucket = a.first_bucket = 64 * 1048576.0;  // HOROVOD_FUSION_THRESHOLD default 64 MiB
  a.cycle_time = 5e-3;                         // HOROVOD_CYCLE_TIME default 5 ms
  a.negotiation = true;
  if (!o.name_only() && o.has("hierarchical") && o.boolean("hierarchical"))
    a.algorithm = Algorithm::Hierarchical;
  configure_common(a, o);
  a.library_choice = !o.has("algorithm") && !o.has("channels") && a.algorithm == Algorithm::Ring;
  s.options = a;
}

void configure_flat_allreduce(Strategy& s, const OptionReader& o) {
  AllreduceOptions a;
  allreduce_algorithm(s.name, a.algorithm);
  a.overlap = false;
  configure_common(a, o);
  s.options = a;
}

std::pair<Algorithm, Algorithm> allreduce_run(const AllreduceOptions& o, const Cluster& cluster) {
  if (o.library_choice && cluster.comm.nccl_protocols) return {Algorithm::Hierarchical, Algorithm::Auto};
  return {o.algorithm, o.inter_node};
}

std::unique_ptr<StepBuilder> allreduce_builder(const Strategy& s) {
  return std::make_unique<AllreduceStep>(std::get<AllreduceOptions>(s.options));
}

}  // namespace ddlsim
