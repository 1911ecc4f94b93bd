#include "sim/train/training.hpp"

#include <fmt/format.h>
#include <sched.h>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "sim/io/trace.hpp"
#include "sim/net/cluster.hpp"
#include "sim/train/collective_workload.hpp"
#include "sim/train/gpu.hpp"
#include "sim/train/model.hpp"

namespace ddlsim {

namespace {

struct LoaderSpec {
  std::string kind = "synthetic";
  double threads = 0, per_thread = 0;  // samples/s per CPU thread
  double fs_bandwidth = 0;             // bytes/s shared by all workers (0: unbounded)
  double gpu_cost = 0;                 // GPU seconds per sample (DALI on the GPU)
  int prefetch = 2;
  // Per-(worker, step) spread of the file-system read alone, lognormal with mean 1 and this cv, independent
  // of the compute jitter: a batch's share of a saturated shared file system is uneven (clients' requests
  // queue at the storage servers). A batch takes max(decode, read · Y) · J.
  double fs_cv = 0;
  // J: the loader's own per-(worker, step) spread, lognormal with mean 1 and this cv, drawn apart from the
  // compute jitter (host threads do not slow down with their GPU); < 0 (not given): J is the workload jitter
  // factor of that worker and step, the one its compute gets.
  double cv = -1;
};

struct Workload {
  Model model;
  int64_t batch = 32;
  Precision precision = Precision::Fp32;
  double efficiency = 0.4;   // achieved fraction of peak FLOP/s
  double samples_per_s = 0;  // measured single-GPU throughput; overrides efficiency
  double backward_factor = 2;
  double overlap_slowdown = 0;  // compute slowdown while collective kernels are resident on the GPU
  double gradient_bytes = 4;    // bytes per gradient value on the wire
  double epochs = 1;
  double dataset_samples = 0;
  LoaderSpec loader;
  std::string jitter = "none";
  double jitter_cv = 0;
  int steps = 4, warmup = 1;
  int checkpoint_every = 0;
  double checkpoint_bandwidth = 0;
};

LoaderSpec parse_loader(const YamlNode& n) {
  LoaderSpec l;
  if (n.is_scalar()) {
    l.kind = n.as_string();
  } else {
    n.expect_keys({"kind", "threads", "per_thread", "filesystem", "filesystem_cv", "cv", "gpu_cost",
                   "prefetch", "source"});
    l.kind = n["kind"].as_string();
  }
  // Defaults per kind; every number can be overridden in the scenario (and should cite its source there).
  if (l.kind == "native") {
    l.threads = 8, l.per_thread = 100;  // torchvision JPEG decode + augment, ~100 images/s per core
  } else if (l.kind == "dali-cpu") {
    l.threads = 8, l.per_thread = 250;  // DALI CPU pipeline, faster decode
  } else if (l.kind == "dali-gpu") {
    l.threads = 4, l.per_thread = 2000, l.gpu_cost = 0.1e-3;  // decode on the GPU (nvJPEG)
  } else if (l.kind != "synthetic") {
    (n.is_scalar() ? n : n["kind"])
        .fail(fmt::format("unknown loader \"{}\" (synthetic, native, dali-cpu, dali-gpu)", l.kind));
  }
  if (n.is_scalar()) return l;
  if (auto v = n.get("threads")) l.threads = v->as_double();
  if (auto v = n.get("per_thread")) l.per_thread = v->as_double();
  if (auto v = n.get("filesystem")) l.fs_bandwidth = v->as_rate().value;
  if (auto v = n.get("gpu_cost")) {
    if (l.kind != "dali-gpu") v->fail("gpu_cost applies to the dali-gpu loader only");
    l.gpu_cost = v->as_time().seconds();
  }
  if (auto v = n.get("prefetch")) l.prefetch = static_cast<int>(v->as_int());
  if (auto v = n.get("cv")) {
    l.cv = v->as_fraction();
    if (l.cv < 0) v->fail("cv must be >= 0");
  }
  if (auto v = n.get("filesystem_cv")) {
    l.fs_cv = v->as_fraction();
    if (l.fs_cv < 0) v->fail("filesystem_cv must be >= 0");
    if (l.fs_bandwidth <= 0) v->fail("filesystem_cv needs a filesystem bandwidth");
  }
  if (l.kind != "synthetic" && (l.threads <= 0 || l.per_thread <= 0))
    n.fail("threads and per_thread must be positive");
  if (l.prefetch < 1) n["prefetch"].fail("prefetch must be at least 1");
  return l;
}

Workload parse_workload(const Scenario& sc) {
  const YamlNode& w = sc.workload;
  w.expect_keys({"model", "batch_per_gpu", "precision", "dataset_samples", "epochs", "loader", "compute",
                 "jitter", "steps", "warmup_steps", "checkpoint", "gradient_bytes"});
  Workload wl;
  wl.model = load_model(w["model"]);
  wl.batch = w.get_int("batch_per_gpu", 32);
  if (wl.batch < 1) w["batch_per_gpu"].fail("batch_per_gpu must be positive");
  if (auto p = w.get("precision")) wl.precision = parse_precision(*p);
  if (wl.precision == Precision::Fp16 || wl.precision == Precision::Bf16) wl.gradient_bytes = 2;
  if (auto g = w.get("gradient_bytes")) wl.gradient_bytes = g->as_bytes().value;
  wl.dataset_samples = w.has("dataset_samples") ? static_cast<double>(w["dataset_samples"].as_int())
                                                : wl.model.dataset_samples;
  wl.epochs = w.get_double("epochs", 1);
  if (wl.epochs <= 0) w["epochs"].fail("epochs must be positive");
  if (auto l = w.get("loader")) wl.loader = parse_loader(*l);
  if (auto c = w.get("compute")) {
    c->expect_keys({"efficiency", "samples_per_s", "backward_factor", "overlap_slowdown", "source"});
    if (auto e = c->get("efficiency")) {
      wl.efficiency = e->as_fraction();
      if (wl.efficiency <= 0 || wl.efficiency > 1) e->fail("efficiency must be in (0, 1]");
    }
    if (auto s = c->get("samples_per_s")) {
      wl.samples_per_s = s->as_double();
      if (wl.samples_per_s <= 0) s->fail("samples_per_s must be positive");
    }
    wl.backward_factor = c->get_double("backward_factor", 2);
    if (wl.backward_factor < 0) (*c)["backward_factor"].fail("backward_factor must be >= 0");
    if (auto o = c->get("overlap_slowdown")) {
      wl.overlap_slowdown = o->as_fraction();
      if (wl.overlap_slowdown < 0 || wl.overlap_slowdown >= 1) o->fail("overlap_slowdown must be in [0, 1)");
    }
  }
  if (auto j = w.get("jitter")) {
    j->expect_keys({"distribution", "cv"});
    wl.jitter = j->get_string("distribution", "lognormal");
    if (wl.jitter != "lognormal" && wl.jitter != "normal" && wl.jitter != "none")
      (*j)["distribution"].fail("distribution must be lognormal, normal or none");
    wl.jitter_cv = (*j)["cv"].as_fraction();
    if (wl.jitter_cv < 0) (*j)["cv"].fail("cv must be >= 0");
  }
  wl.steps = static_cast<int>(w.get_int("steps", sc.root.get_int("steps", 4)));
  wl.warmup = static_cast<int>(w.get_int("warmup_steps", sc.root.get_int("warmup_steps", 1)));
  for (auto [value, key] : {std::pair{wl.steps, "steps"}, std::pair{wl.warmup, "warmup_steps"}})
    if (value < 1) (w.has(key) ? w[key] : sc.root[key]).fail(fmt::format("{} must be at least 1", key));
  if (auto c = w.get("checkpoint")) {
    c->expect_keys({"every", "bandwidth"});
    wl.checkpoint_every = static_cast<int>((*c)["every"].as_int());
    if (wl.checkpoint_every < 1) (*c)["every"].fail("every must be at least 1 (steps between checkpoints)");
    wl.checkpoint_bandwidth = (*c)["bandwidth"].as_rate().value;
  }
  return wl;
}

// Deterministic per (seed, worker, step, stream) standard normal by Box-Muller; stream 0 is the workload
// jitter, 1 the loader's, 2 the file system's (independent draws).
double normal01(uint64_t seed, uint64_t worker, uint64_t step, uint64_t stream = 0) {
  std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ULL ^ (worker << 20) ^ step ^ (stream << 56));
  double u1 = (static_cast<double>(rng() >> 11) + 0.5) / 9007199254740992.0;
  double u2 = (static_cast<double>(rng() >> 11) + 0.5) / 9007199254740992.0;
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
}

// Lognormal with mean 1 and coefficient of variation cv, from a standard normal z.
double lognormal_factor(double cv, double z) {
  if (cv <= 0) return 1;
  double sigma = std::sqrt(std::log(1 + cv * cv));
  return std::exp(sigma * z - sigma * sigma / 2);
}

double jitter_factor(const Workload& wl, uint64_t seed, uint64_t worker, uint64_t step) {
  if (wl.jitter == "none" || wl.jitter_cv <= 0) return 1;
  double z = normal01(seed, worker, step);
  if (wl.jitter == "normal") return std::max(0.1, 1 + wl.jitter_cv * z);
  return lognormal_factor(wl.jitter_cv, z);
}

struct Bucket {
  size_t first_layer, last_layer;  // backward covers layers last..first (reverse order); [first, last]
  double bytes;
};

// Layers in reverse order, cut whenever a bucket reaches `cap` bytes (the first one at `first_cap`).
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

struct Strategy {
  std::string kind;  // allreduce | zero | ps
  Algorithm algorithm = Algorithm::Ring;
  Algorithm inter_node = Algorithm::Ring;  // hierarchical: the allreduce between nodes
  double bucket = 0, first_bucket = 0;     // bytes; 0: one bucket after backward
  double bucket_elements = 0;              // ZeRO's default cap counts gradient elements (replaces bucket)
  bool overlap = true;
  double cycle_time = 0;  // Horovod
  bool negotiation = false;
  int zero_stage = 0;
  ServerPlacement ps;  // ps: where the servers run
  std::string mode = "sync";
  int staleness = 0;
  double chunk = 8e6;
  bool shard_by_layer = false;
};

Strategy parse_strategy(const StrategySpec& s) {
  Strategy st;
  const YamlNode& n = s.node;
  auto opt = [&](const char* key) { return n.is_scalar() ? std::optional<YamlNode>() : n.get(key); };
  const std::string& name = s.name;
  std::vector<std::string> common = {"name", "label"};
  auto keys = [&](std::initializer_list<const char*> extra) {
    if (n.is_scalar()) return;
    std::vector<std::string> k = common;
    k.insert(k.end(), extra.begin(), extra.end());
    n.expect_keys(k);
  };
  st.kind = "allreduce";
  if (name == "ddp") {
    keys({"bucket_size", "first_bucket", "algorithm", "inter_node"});
    st.bucket = 25 * 1048576.0,
    st.first_bucket = 1048576.0;  // PyTorch DDP bucket_cap_mb=25, first bucket 1 MB
  } else if (name == "horovod") {
    keys({"fusion_threshold", "cycle_time", "hierarchical", "algorithm", "inter_node"});
    st.bucket = st.first_bucket = 64 * 1048576.0;  // HOROVOD_FUSION_THRESHOLD default 64 MiB
    st.cycle_time = 5e-3;                          // HOROVOD_CYCLE_TIME default 5 ms
    st.negotiation = true;
    if (auto h = opt("hierarchical"); h && h->as_bool()) st.algorithm = Algorithm::Hierarchical;
  } else if (name == "zero") {
    keys({"stage", "bucket_size"});
    st.kind = "zero";
    st.zero_stage = 2;
    st.bucket_elements = 5e8;  // DeepSpeed reduce_bucket_size default: 5e8 elements, bytes by precision
  } else if (name == "ps") {
    keys({"servers", "placement", "mode", "staleness", "chunk_size", "sharding", "link"});
    st.kind = "ps";
  } else if (allreduce_algorithm(name, st.algorithm)) {
    keys({"bucket_size", "overlap", "inter_node"});
    st.overlap = false;
  } else {
    (n.is_scalar() ? n : n["name"])
        .fail(fmt::format("unknown training strategy \"{}\" (ddp, horovod, zero, ps, ring, rhd, tree, "
                          "double-tree, direct, hierarchical)",
                          name));
  }
  if (auto a = opt("algorithm")) {
    std::string v = a->as_string();
    if (st.algorithm == Algorithm::Hierarchical && v != "hierarchical")
      a->fail("hierarchical: true already asks for the hierarchical algorithm");
    if (!allreduce_algorithm(v, st.algorithm))
      a->fail("algorithm must be ring, rhd, tree, double-tree, direct or hierarchical");
  }
  if (auto i = opt("inter_node")) {
    st.inter_node = parse_inter_node(*i);
    if (st.algorithm != Algorithm::Hierarchical)
      i->fail("inter_node applies to the hierarchical algorithm only");
  }
  if (auto b = opt("bucket_size")) {
    st.bucket = st.first_bucket = b->as_bytes().value;
    st.bucket_elements = 0;  // a given size is in bytes, for ZeRO too
  }
  if (auto b = opt("first_bucket")) st.first_bucket = b->as_bytes().value;
  if (auto b = opt("fusion_threshold")) st.bucket = st.first_bucket = b->as_bytes().value;
  if (auto c = opt("cycle_time")) st.cycle_time = c->as_time().seconds();
  if (auto o = opt("overlap")) st.overlap = o->as_bool();
  if (auto z = opt("stage")) {
    st.zero_stage = static_cast<int>(z->as_int());
    if (st.zero_stage != 1 && st.zero_stage != 2)
      z->fail("ZeRO stage must be 1 or 2 (stage 3 shards parameters too)");
  }
  if (st.kind == "ps") st.ps = parse_server_placement(n);
  if (auto m = opt("mode")) {
    st.mode = m->as_string();
    if (st.mode != "sync" && st.mode != "async" && st.mode != "ssp")
      m->fail("mode must be sync, async or ssp");
  }
  if (auto s = opt("staleness")) st.staleness = static_cast<int>(s->as_int());
  if (auto c = opt("chunk_size")) st.chunk = c->as_bytes().value;
  if (auto sh = opt("sharding")) {
    std::string v = sh->as_string();
    if (v != "layer" && v != "range") sh->fail("sharding must be layer or range");
    st.shard_by_layer = v == "layer";
  }
  if (st.kind == "ps" && st.mode == "ssp" && st.staleness < 0)
    opt("staleness")->fail("staleness must be >= 0");
  if (auto s = opt("staleness"); s && st.mode != "ssp") s->fail("staleness applies to mode: ssp only");
  return st;
}

struct Interval {
  Time a, b;
};

double union_length(std::vector<Interval> v, Time lo, Time hi) {
  for (Interval& i : v) i.a = std::max(i.a, lo), i.b = std::min(i.b, hi);
  std::sort(v.begin(), v.end(), [](const Interval& x, const Interval& y) { return x.a < y.a; });
  double total = 0;
  Time cur_a = lo, cur_b = lo;
  bool open = false;
  for (const Interval& i : v) {
    if (i.b <= i.a) continue;
    if (!open || i.a > cur_b) {
      if (open) total += (cur_b - cur_a).seconds();
      cur_a = i.a, cur_b = i.b, open = true;
    } else {
      cur_b = std::max(cur_b, i.b);
    }
  }
  if (open) total += (cur_b - cur_a).seconds();
  return total;
}

struct Built {
  TaskGraph graph;
  std::vector<std::vector<TaskId>> step_end;  // [worker][step]
  TaskId broadcast = 0;
  double broadcast_bytes = 0;
  uint32_t preprocessing_label = 0;  // GPU-side data work (DALI on the GPU)
};

class Builder {
 public:
  Builder(const Workload& wl, const Strategy& st, const Cluster& c, uint64_t seed)
      : wl_(wl),
        st_(st),
        c_(c),
        seed_(seed),
        p_(static_cast<uint32_t>(c.gpus.size())),
        params_(static_cast<double>(total_params(wl.model.layers))) {}

  Built build() {
    Built out;
    TaskGraph& g = out.graph;
    g.collective_compute_slowdown = wl_.overlap_slowdown;
    out.broadcast_bytes = params_ * 4;
    // One-off: rank 0 broadcasts the initial weights (Horovod's broadcast_parameters, DDP's constructor).
    CollectiveTask bc;
    bc.plan = make_plan({Algorithm::Broadcast, p_, 1, 0, params_ * 4});
    bc.members = c_.gpus;
    bc.isolated = true;
    out.broadcast = g.add_collective(std::move(bc), -1, g.label("broadcast weights"));
    gpu_.resize(p_);
    loader_.resize(p_);
    for (uint32_t w = 0; w < p_; ++w) gpu_[w] = g.add_resource(), loader_[w] = g.add_resource();
    layer_time_ = layer_times();
    const LoaderSpec& ls = wl_.loader;
    // A batch: CPU decode at threads · per_thread, read from the file system at this worker's share of its
    // bandwidth; the two overlap (threads decode while others read), so the slower bounds the batch.
    const bool loads = ls.kind != "synthetic";
    const double decode = loads ? wl_.batch / (ls.threads * ls.per_thread) : 0;
    const double read = loads && ls.fs_bandwidth > 0 && wl_.model.bytes_per_sample > 0
                            ? wl_.batch * wl_.model.bytes_per_sample * p_ / ls.fs_bandwidth
                            : 0;
    out.step_end.assign(p_, {});
    std::vector<TaskId> prev_end(p_, out.broadcast);
    std::vector<std::vector<TaskId>> forwards(p_);
    std::vector<TaskId> prev_collective;
    uint32_t l_load = g.label("load batch"), l_fwd = g.label("forward"), l_bwd = g.label("backward"),
             l_upd = g.label("optimizer update"), l_pre = g.label("gpu preprocessing");
    int steps = wl_.warmup + wl_.steps;
    std::vector<Bucket> buckets = sync_buckets();
    ps_barrier_.assign(steps, UINT32_MAX);
    for (int k = 0; k < steps; ++k) {
      std::vector<std::vector<TaskId>> seg(p_);
      for (uint32_t w = 0; w < p_; ++w) {
        double j = jitter_factor(wl_, seed_, w, static_cast<uint64_t>(k));
        double y = lognormal_factor(ls.fs_cv, normal01(seed_, w, static_cast<uint64_t>(k), 2));
        double jl = ls.cv < 0 ? j : lognormal_factor(ls.cv, normal01(seed_, w, static_cast<uint64_t>(k), 1));
        TaskId load = loads ? g.add_delay(Time::from_seconds(std::max(decode, read * y) * jl), Category::Io,
                                          static_cast<int32_t>(w), k, l_load, loader_[w])
                            : g.add_delay(Time(), Category::Io, static_cast<int32_t>(w), k, l_load);
        if (k >= wl_.loader.prefetch) g.depend(forwards[w][k - wl_.loader.prefetch], load);
        TaskId first = load;
        if (wl_.loader.gpu_cost > 0) {
          // GPU-side preprocessing (DALI on the GPU) runs on a stream of its own, interleaved with the
          // training kernels: one task per sample, so a training kernel that becomes ready waits for at most
          // one sample's work (first come, first served on the GPU), not for the whole batch.
          for (int64_t i = 0; i < wl_.batch; ++i) {
            TaskId pre = g.add_compute(gpu_[w], Time::from_seconds(wl_.loader.gpu_cost),
                                       static_cast<int32_t>(w), k, l_pre);
            g.depend(first, pre);
            first = pre;
          }
        }
        TaskId fwd =
            g.add_compute(gpu_[w], Time::from_seconds(forward_time() * j), static_cast<int32_t>(w), k, l_fwd);
        g.depend(first, fwd);
        g.depend(prev_end[w], fwd);
        if (st_.kind == "ps" && st_.mode == "ssp" && k - st_.staleness - 1 >= 0)
          g.depend(ps_barrier_[k - st_.staleness - 1], fwd);
        forwards[w].push_back(fwd);
        TaskId prev = fwd;
        for (const Bucket& b : buckets) {
          double t = 0;
          for (size_t i = b.first_layer; i <= b.last_layer; ++i) t += layer_time_[i].second;
          TaskId s = g.add_compute(gpu_[w], Time::from_seconds(t * j), static_cast<int32_t>(w), k, l_bwd);
          g.depend(prev, s);
          seg[w].push_back(s);
          prev = s;
        }
      }
      if (st_.kind == "ps") {
        build_ps_step(g, k, buckets, seg, prev_end);
      } else {
        build_allreduce_step(g, k, buckets, seg, prev_collective, prev_end, l_upd);
      }
      for (uint32_t w = 0; w < p_; ++w) out.step_end[w].push_back(prev_end[w]);
    }
    out.preprocessing_label = l_pre;
    return out;
  }

 private:
  // Forward and backward seconds per layer for one batch.
  std::vector<std::pair<double, double>> layer_times() const {
    std::vector<std::pair<double, double>> t;
    double total_flops = total_forward_flops(wl_.model.layers);
    double bf = wl_.backward_factor;
    for (const LayerSpec& l : wl_.model.layers) {
      double fwd;
      if (wl_.samples_per_s > 0) {
        // Scaled to a measured single-GPU throughput: one sample's forward+backward takes 1/samples_per_s.
        double share = total_flops > 0 ? l.forward_flops / total_flops : 1.0 / wl_.model.layers.size();
        fwd = wl_.batch / wl_.samples_per_s * share / (1 + bf);
      } else {
        fwd = l.forward_flops * wl_.batch / (c_.gpu.peak(wl_.precision) * wl_.efficiency);
      }
      t.push_back({fwd, fwd * bf});
    }
    return t;
  }
  double forward_time() const {
    double s = 0;
    for (const auto& lt : layer_time_) s += lt.first;
    return s;
  }
  std::vector<Bucket> sync_buckets() const {
    if (st_.kind == "ps") return make_buckets(wl_, st_.chunk, st_.chunk);
    double cap = st_.bucket_elements > 0 ? st_.bucket_elements * wl_.gradient_bytes : st_.bucket;
    if (st_.kind == "zero" && st_.zero_stage == 1) cap = 0;
    if (cap <= 0 || !st_.overlap) cap = 1e300;
    bool own_first = st_.kind != "zero" && st_.overlap && st_.first_bucket > 0;  // DDP's small first bucket
    return make_buckets(wl_, cap, own_first ? st_.first_bucket : cap);
  }
  std::shared_ptr<const CollectivePlan> plan(Algorithm a, double bytes) {
    auto key = std::make_pair(static_cast<int>(a), bytes);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    CollectiveShape shape{a, p_, static_cast<uint32_t>(c_.gpus_per_node), 0, bytes, st_.inter_node};
    price_inter_node(shape, c_);
    std::shared_ptr<const CollectivePlan> p = make_plan(shape);
    plans_[key] = p;
    return p;
  }
  TaskId collective(TaskGraph& g, Algorithm a, double bytes, int k, const char* label,
                    std::vector<TaskId> launch) {
    CollectiveTask t;
    t.plan = plan(a, bytes);
    t.members = c_.gpus;
    t.isolated = true;
    t.launch = std::move(launch);
    return g.add_collective(std::move(t), k, g.label(label));
  }
  double update_time(double fraction) const {
    // SGD with momentum streams weights, gradients and momentum: ~4 reads/writes of 4 bytes per parameter.
    return c_.gpu.memory_bandwidth > 0 ? params_ * fraction * 16 / c_.gpu.memory_bandwidth : 0;
  }

  void build_allreduce_step(TaskGraph& g, int k, const std::vector<Bucket>& buckets,
                            const std::vector<std::vector<TaskId>>& seg, std::vector<TaskId>& prev_collective,
                            std::vector<TaskId>& prev_end, uint32_t l_upd) {
    bool zero = st_.kind == "zero";
    Algorithm a = zero ? Algorithm::ReduceScatter : st_.algorithm;
    TaskId last = UINT32_MAX;
    for (size_t b = 0; b < buckets.size(); ++b) {
      TaskId gate = UINT32_MAX;
      if (st_.negotiation) {
        // Horovod: the background thread wakes every cycle (half a cycle on average) and rank 0 negotiates
        // which tensors are ready on all ranks: a gather and a broadcast of small messages, ~2 log2(p)
        // latencies.
        double lat = c_.comm.inter.lookup(64).alpha.seconds() + 2e-6;
        double negotiation = 2 * std::ceil(std::log2(std::max<uint32_t>(p_, 2))) * lat;
        gate = g.add_delay(Time::from_seconds(st_.cycle_time / 2 + negotiation), Category::Communication, -1,
                           k, g.label("horovod negotiation"));
      }
      std::vector<TaskId> launch(p_, gate);
      if (gate == UINT32_MAX)
        for (uint32_t w = 0; w < p_; ++w) launch[w] = seg[w][b];
      TaskId coll =
          collective(g, a, buckets[b].bytes, k, zero ? "reduce-scatter" : "allreduce", std::move(launch));
      for (uint32_t w = 0; w < p_; ++w) g.depend(seg[w][b], gate != UINT32_MAX ? gate : coll);
      if (gate != UINT32_MAX) g.depend(gate, coll);
      if (!prev_collective.empty()) g.depend(prev_collective.back(), gate != UINT32_MAX ? gate : coll);
      prev_collective.assign(1, coll);
      last = coll;
    }
    if (zero) {
      // Each rank updates its 1/p shard, then the parameters are all-gathered.
      std::vector<TaskId> upd(p_);
      for (uint32_t w = 0; w < p_; ++w) {
        upd[w] = g.add_compute(gpu_[w], Time::from_seconds(update_time(1.0 / p_)), static_cast<int32_t>(w), k,
                               l_upd);
        g.depend(last, upd[w]);
      }
      TaskId ag =
          collective(g, Algorithm::AllGather, params_ * wl_.gradient_bytes, k, "all-gather params", upd);
      for (uint32_t w = 0; w < p_; ++w) g.depend(upd[w], ag);
      prev_collective.assign(1, ag);
      for (uint32_t w = 0; w < p_; ++w) prev_end[w] = ag;
      return;
    }
    for (uint32_t w = 0; w < p_; ++w) {
      TaskId upd =
          g.add_compute(gpu_[w], Time::from_seconds(update_time(1.0)), static_cast<int32_t>(w), k, l_upd);
      g.depend(last, upd);
      prev_end[w] = upd;
    }
  }

  VertexId server(uint32_t j) const { return st_.ps.dedicated ? c_.servers[j] : c_.cpus[j % c_.cpus.size()]; }

  void build_ps_step(TaskGraph& g, int k, const std::vector<Bucket>& chunks,
                     const std::vector<std::vector<TaskId>>& seg, std::vector<TaskId>& prev_end) {
    uint32_t K = st_.ps.servers;
    if (server_cpu_.empty())
      for (uint32_t j = 0; j < K; ++j) server_cpu_.push_back(g.add_resource());
    uint32_t l_push = g.label("push"), l_agg = g.label("aggregate"), l_pull = g.label("pull"),
             l_upd = g.label("server update");
    std::vector<std::vector<TaskId>> pulls(p_);
    TaskId barrier = g.add_delay(Time(), Category::Other, -1, k, g.label("ssp clock"));
    for (size_t c = 0; c < chunks.size(); ++c) {
      std::vector<uint32_t> targets;
      if (st_.shard_by_layer)
        targets.push_back(static_cast<uint32_t>(c % K));
      else
        for (uint32_t j = 0; j < K; ++j) targets.push_back(j);
      double bytes = chunks[c].bytes / targets.size();
      for (uint32_t j : targets) {
        std::vector<TaskId> aggs(p_);
        for (uint32_t w = 0; w < p_; ++w) {
          TaskId push = g.add_transfer(c_.gpus[w], server(j), bytes, static_cast<int32_t>(w), k, l_push);
          g.depend(seg[w][c], push);
          // sync: the push is summed into the shard's accumulator (12 bytes of traffic per parameter);
          // async/ssp: it is applied to the weights at once, an SGD-momentum update (16 bytes, see below).
          double cost = (st_.mode == "sync" ? 1.0 : 4.0 / 3.0) * c_.comm.reduce_seconds(bytes, bytes, true);
          aggs[w] = g.add_delay(Time::from_seconds(cost), Category::Communication, static_cast<int32_t>(w), k,
                                st_.mode == "sync" ? l_agg : l_upd, server_cpu_[j]);
          g.depend(push, aggs[w]);
          g.depend(aggs[w], barrier);
        }
        TaskId upd = UINT32_MAX;
        if (st_.mode == "sync") {
          // SGD with momentum on the server's CPU: like the GPU update, 16 bytes of memory traffic per
          // 4-byte parameter, where a sum moves 12 (two operands read, one written): 4/3 of summing the shard
          // at the CPU's reduction rate (free when the cluster gives none).
          upd = g.add_delay(Time::from_seconds(4.0 / 3.0 * c_.comm.reduce_seconds(bytes, bytes, true)),
                            Category::Communication, -1, k, l_upd, server_cpu_[j]);
          for (uint32_t w = 0; w < p_; ++w) g.depend(aggs[w], upd);
        }
        for (uint32_t w = 0; w < p_; ++w) {
          TaskId pull = g.add_transfer(server(j), c_.gpus[w], bytes, static_cast<int32_t>(w), k, l_pull);
          g.depend(upd != UINT32_MAX ? upd : aggs[w], pull);
          pulls[w].push_back(pull);
        }
      }
    }
    ps_barrier_[k] = barrier;
    for (uint32_t w = 0; w < p_; ++w) {
      TaskId done = g.add_delay(Time(), Category::Other, static_cast<int32_t>(w), k, g.label("step done"));
      for (TaskId t : pulls[w]) g.depend(t, done);
      prev_end[w] = done;
    }
  }

  const Workload& wl_;
  const Strategy& st_;
  const Cluster& c_;
  uint64_t seed_;
  uint32_t p_;
  double params_;  // parameters of the model
  std::vector<uint32_t> gpu_, loader_, server_cpu_;
  std::vector<std::pair<double, double>> layer_time_;
  std::map<std::pair<int, double>, std::shared_ptr<const CollectivePlan>> plans_;
  std::vector<TaskId> ps_barrier_;
};

// One simulation (`gpu_limit` > 0: on only the first gpu_limit GPUs, a reference smaller than one node).
// Everything that reads the scenario's YAML runs under `yaml` (yaml-cpp nodes are not safe to read from two
// threads at once); the engine and the metrics run without it.
TrainingResult simulate(const Scenario& sc, const Workload& wl, const StrategySpec& spec, int64_t nodes,
                        const TrainingOptions& opts, bool write_trace, std::mutex& yaml,
                        int64_t gpu_limit = 0) {
  std::unique_lock<std::mutex> setup(yaml);
  Strategy st = parse_strategy(spec);
  Cluster cluster = build_cluster(sc.cluster, nodes, st.kind == "ps" ? st.ps.hosts() : ServerHosts{});
  if (gpu_limit > 0 && static_cast<size_t>(gpu_limit) < cluster.gpus.size()) {
    cluster.gpus.resize(static_cast<size_t>(gpu_limit));
    cluster.gpus_per_node = std::min<int>(cluster.gpus_per_node, static_cast<int>(gpu_limit));
  }
  Builder builder(wl, st, cluster, sc.seed);
  Built built = builder.build();
  built.graph.finalize();
  setup.unlock();
  Engine engine(cluster.topo, cluster.comm, built.graph, opts.engine);
  engine.run();
  const auto& rec = engine.records();
  uint32_t p = static_cast<uint32_t>(cluster.gpus.size());
  TrainingResult r;
  r.strategy = spec.label;
  r.strategy_name = spec.name;
  r.model = wl.model.name;
  r.loader = wl.loader.kind;
  r.gpus = p;
  r.nodes = nodes;
  int w0 = wl.warmup - 1, w1 = wl.warmup + wl.steps - 1;
  double sum = 0;
  for (uint32_t w = 0; w < p; ++w)
    sum += (rec[built.step_end[w][w1]].end - rec[built.step_end[w][w0]].end).seconds() / wl.steps;
  r.step_time_s = sum / p;
  r.global_batch = static_cast<double>(wl.batch) * p;
  r.throughput = r.global_batch / r.step_time_s;
  double steps_per_epoch = std::ceil(wl.dataset_samples / r.global_batch);
  double broadcast = (rec[built.broadcast].end - rec[built.broadcast].start).seconds();
  double checkpoints = 0;
  if (wl.checkpoint_every > 0)
    checkpoints = std::floor(steps_per_epoch * wl.epochs / wl.checkpoint_every) * built.broadcast_bytes /
                  wl.checkpoint_bandwidth;
  r.time_to_train_s = steps_per_epoch * wl.epochs * r.step_time_s + broadcast + checkpoints;
  // Shares over worker 0's measured window.
  Time lo = rec[built.step_end[0][w0]].end, hi = rec[built.step_end[0][w1]].end;
  std::vector<Interval> compute, comm, io, gpu_data;
  const TaskGraph& g = built.graph;
  for (TaskId t = 0; t < g.size(); ++t) {
    const Task& task = g.task(t);
    if (task.step < 0 || rec[t].end <= lo || rec[t].start >= hi) continue;
    Interval iv{rec[t].start, rec[t].end};
    if (task.kind == TaskKind::Collective) {
      comm.push_back(iv);
    } else if (task.worker == 0 || task.worker < 0) {
      if (task.category == Category::Compute && task.label == built.preprocessing_label)
        gpu_data.push_back(iv);
      else if (task.category == Category::Compute)
        compute.push_back(iv);
      else if (task.category == Category::Communication)
        comm.push_back(iv);
      else if (task.category == Category::Io)
        io.push_back(iv);
    }
  }
  double window = (hi - lo).seconds();
  double c = union_length(compute, lo, hi);
  std::vector<Interval> cc = compute;
  cc.insert(cc.end(), comm.begin(), comm.end());
  double c_comm = union_length(cc, lo, hi);
  std::vector<Interval> all = cc;
  all.insert(all.end(), io.begin(), io.end());
  all.insert(all.end(), gpu_data.begin(), gpu_data.end());
  double c_all = union_length(all, lo, hi);
  if (window > 0) {
    r.share_compute = c / window;
    r.share_communication = (c_comm - c) / window;
    r.share_io = (c_all - c_comm) / window;
    r.share_idle = 1 - c_all / window;
    r.busy_allreduce = st.kind == "ps" ? union_length(comm, lo, hi) / window : 0;
    r.busy_data = union_length(gpu_data, lo, hi) / window;
    r.busy_compute = c / window;
  }
  // Collective kernel busy share, averaged over workers (each over its own measured window): one worker's
  // view depends on whether it happens to be early (waits inside the kernel) or the straggler.
  if (st.kind != "ps") {
    // A collective kernel is busy on a worker from its local launch to the end, waiting for late peers
    // included, as profilers count NCCL kernel time.
    double sum = 0;
    std::vector<Interval> busy;
    std::vector<TaskId> collectives;
    for (TaskId t = 0; t < g.size(); ++t)
      if (g.task(t).kind == TaskKind::Collective && g.task(t).step >= 0) collectives.push_back(t);
    for (uint32_t w = 0; w < p; ++w) {
      Time wlo = rec[built.step_end[w][w0]].end, whi = rec[built.step_end[w][w1]].end;
      busy.clear();
      for (TaskId t : collectives) {
        const std::vector<TaskId>& launch = g.collectives()[g.task(t).collective].launch;
        if (launch.size() <= w || rec[t].end <= wlo || rec[launch[w]].end >= whi) continue;
        busy.push_back({std::min(rec[launch[w]].end, rec[t].start), rec[t].end});
      }
      if (whi > wlo) sum += union_length(busy, wlo, whi) / (whi - wlo).seconds();
    }
    r.busy_allreduce = sum / p;
  }
  r.stats = engine.stats();
  if (write_trace) write_perfetto_trace(opts.trace_file, built.graph, rec, 64);
  return r;
}

}  // namespace

WorkloadSummary summarize_workload(const Scenario& sc) {
  Workload wl = parse_workload(sc);
  return {wl.model.name, wl.loader.kind};
}

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

std::vector<TrainingResult> run_training(const Scenario& sc, const std::vector<int64_t>& counts,
                                         const TrainingOptions& opts) {
  Workload wl = parse_workload(sc);
  int gpn = sc.cluster.gpus_per_node();
  int64_t ref_gpus =
      sc.reference_gpus > 0 ? sc.reference_gpus : *std::min_element(counts.begin(), counts.end()) * gpn;
  if (ref_gpus > gpn && ref_gpus % gpn != 0)
    sc.root["reference_gpus"].fail(
        fmt::format("reference_gpus must be at most one node or a multiple of {} GPUs per node", gpn));
  // Every simulation is independent: list them (per strategy, each count and the reference: part of a node
  // runs on that node's first GPUs), run them on `jobs` threads, then relate each to its reference.
  struct Job {
    const StrategySpec* spec;
    int64_t nodes, gpu_limit;
    bool trace;
    TrainingResult result;
    std::exception_ptr error;
  };
  std::vector<Job> jobs;
  std::vector<size_t> first_job;
  int64_t ref_nodes = std::max<int64_t>(1, ref_gpus / gpn);
  for (const StrategySpec& spec : sc.strategies) {
    first_job.push_back(jobs.size());
    for (int64_t n : counts) jobs.push_back({&spec, n, 0, jobs.empty() && !opts.trace_file.empty(), {}, {}});
    if (ref_gpus < gpn)
      jobs.push_back({&spec, 1, ref_gpus, false, {}, {}});
    else if (std::find(counts.begin(), counts.end(), ref_nodes) == counts.end())
      jobs.push_back({&spec, ref_nodes, 0, false, {}, {}});
  }
  first_job.push_back(jobs.size());
  // The largest first, so that the last to finish is a small one.
  std::vector<size_t> order(jobs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return jobs[a].nodes > jobs[b].nodes; });
  std::mutex yaml;
  std::atomic<size_t> next{0}, finished{0};
  std::mutex progress;  // opts.progress is called one at a time
  auto worker = [&] {
    for (size_t k; (k = next++) < jobs.size();) {
      Job& j = jobs[order[k]];
      try {
        j.result = simulate(sc, wl, *j.spec, j.nodes, opts, j.trace, yaml, j.gpu_limit);
      } catch (...) {
        j.error = std::current_exception();
      }
      if (opts.progress) {
        std::lock_guard<std::mutex> lock(progress);
        opts.progress(++finished, jobs.size());
      }
    }
  };
  size_t threads =
      std::min<size_t>(jobs.size(), static_cast<size_t>(opts.jobs > 0 ? opts.jobs : usable_cpus()));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  for (const Job& j : jobs)
    if (j.error) std::rethrow_exception(j.error);
  std::vector<TrainingResult> out;
  for (size_t s = 0; s < sc.strategies.size(); ++s) {
    std::map<int64_t, TrainingResult> done;
    TrainingResult part;
    for (size_t i = first_job[s]; i < first_job[s + 1]; ++i)
      (jobs[i].gpu_limit > 0 ? part : done[jobs[i].nodes]) = jobs[i].result;
    const TrainingResult& ref = ref_gpus < gpn ? part : done[ref_nodes];
    for (int64_t n : counts) {
      TrainingResult r = done[n];
      r.speedup = r.throughput / ref.throughput;
      r.efficiency = r.speedup / (static_cast<double>(r.gpus) / static_cast<double>(ref.gpus));
      r.learning_rate_scale = r.global_batch / ref.global_batch;
      out.push_back(r);
    }
  }
  return out;
}

Report run_training_report(const Scenario& sc, const std::vector<int64_t>& counts,
                           const TrainingOptions& opts, bool stats) {
  Report report;
  report.scenario_name = sc.name;
  report.scenario_file = sc.file;
  Workload wl = parse_workload(sc);
  report.title = fmt::format("{}: {} on {}, batch {}/GPU, {} loader", sc.name, wl.model.name,
                             sc.cluster.name(), wl.batch, wl.loader.kind);
  report.table_columns = {"strategy",
                          "gpus",
                          "step_time_s",
                          "throughput_samples_per_s",
                          "speedup",
                          "efficiency",
                          "time_to_train_s",
                          "shares.compute",
                          "shares.communication",
                          "shares.io",
                          "shares.idle"};
  for (const TrainingResult& r : run_training(sc, counts, opts)) {
    Record rec{{"strategy", r.strategy},
               {"gpus", r.gpus},
               {"nodes", r.nodes},
               {"step_time_s", r.step_time_s},
               {"throughput_samples_per_s", r.throughput},
               {"speedup", r.speedup},
               {"efficiency", r.efficiency},
               {"time_to_train_s", r.time_to_train_s},
               {"global_batch", static_cast<int64_t>(r.global_batch)},
               {"lr_scale", r.learning_rate_scale},
               {"shares.compute", r.share_compute},
               {"shares.communication", r.share_communication},
               {"shares.io", r.share_io},
               {"shares.idle", r.share_idle},
               {"kernel_shares.allreduce", r.busy_allreduce},
               {"kernel_shares.data", r.busy_data},
               {"kernel_shares.compute", r.busy_compute}};
    if (stats) {
      rec.push_back({"messages", static_cast<int64_t>(r.stats.messages)});
      rec.push_back({"fast_messages", static_cast<int64_t>(r.stats.fast_messages)});
      rec.push_back({"flows", static_cast<int64_t>(r.stats.flows)});
    }
    report.results.push_back(std::move(rec));
  }
  report.notes.push_back(
      "shares: wall-time split of a step on worker 0 (compute, exposed communication, exposed I/O, idle)");
  return report;
}

}  // namespace ddlsim
