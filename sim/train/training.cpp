#include "sim/train/training.hpp"

#include <fmt/format.h>
#include <sched.h>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <fstream>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>

#include "sim/core/interrupt.hpp"
#include "sim/core/random.hpp"
#include "sim/net/cluster.hpp"
#include "sim/train/collective_workload.hpp"
#include "sim/train/trace.hpp"

namespace ddlsim {

namespace {

// Deterministic per (seed, worker, step, stream) standard normal by Box-Muller from the first two outputs of
// std::mt19937_64 seeded from the four (mt19937_64_first_two); stream 0 is the workload jitter, 1 the
// loader's, 2 the file system's (independent draws).
double normal01(uint64_t seed, uint64_t worker, uint64_t step, uint64_t stream = 0) {
  auto [a, b] = mt19937_64_first_two(seed * 0x9e3779b97f4a7c15ULL ^ (worker << 20) ^ step ^ (stream << 56));
  double u1 = (static_cast<double>(a >> 11) + 0.5) / 9007199254740992.0;
  double u2 = (static_cast<double>(b >> 11) + 0.5) / 9007199254740992.0;
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
}

// Lognormal with mean 1 and coefficient of variation cv, from a standard normal z.
double lognormal_factor(double cv, double z) {
  if (cv <= 0) return 1;
  double sigma = std::sqrt(std::log(1 + cv * cv));
  return std::exp(sigma * z - sigma * sigma / 2);
}

double jitter_factor(const Workload& wl, uint64_t seed, uint64_t worker, uint64_t step) {
  if (wl.jitter == Jitter::None || wl.jitter_cv <= 0) return 1;
  double z = normal01(seed, worker, step);
  if (wl.jitter == Jitter::Normal) return std::max(0.1, 1 + wl.jitter_cv * z);
  return lognormal_factor(wl.jitter_cv, z);
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

// The training graph: per worker and step, load, (GPU preprocessing,) forward and backward by bucket; the
// strategy's step builder adds the synchronisation and the step's end.
class Builder {
 public:
  Builder(const Workload& wl, StepBuilder& strategy, const Cluster& c, uint64_t seed)
      : wl_(wl), strategy_(strategy), c_(c), seed_(seed), p_(static_cast<uint32_t>(c.gpus.size())) {}

  Built build() {
    Built out;
    TaskGraph& g = out.graph;
    StepContext ctx(g, wl_, c_);
    ctx.workers = p_;
    ctx.params = static_cast<double>(total_params(wl_.model.layers));
    g.collective_compute_slowdown = wl_.overlap_slowdown;
    out.broadcast_bytes = ctx.params * 4;
    // One-off: rank 0 broadcasts the initial weights (Horovod's broadcast_parameters, DDP's constructor).
    CollectiveTask bc;
    bc.plan = make_plan({Algorithm::Broadcast, p_, 1, 0, ctx.params * 4});
    bc.members = c_.gpus;
    bc.isolated = fast_path_safe(*bc.plan, c_);
    out.broadcast = g.add_collective(std::move(bc), -1, g.label("broadcast weights"));
    ctx.gpu.resize(p_);
    std::vector<uint32_t> loader(p_);
    for (uint32_t w = 0; w < p_; ++w) ctx.gpu[w] = g.add_resource(), loader[w] = g.add_resource();
    layer_time_ = layer_times();
    const LoaderSpec& ls = wl_.loader;
    // A batch: CPU decode at threads · per_thread, read from the file system at this worker's share of its
    // bandwidth; the two overlap (threads decode while others read), so the slower bounds the batch.
    const bool loads = ls.kind != LoaderKind::Synthetic;
    const double decode = loads ? wl_.batch / (ls.threads * ls.per_thread) : 0;
    const double read = loads && ls.fs_bandwidth > 0 && wl_.model.bytes_per_sample > 0
                            ? wl_.batch * wl_.model.bytes_per_sample * p_ / ls.fs_bandwidth
                            : 0;
    out.step_end.assign(p_, {});
    ctx.step_end.assign(p_, out.broadcast);
    ctx.backward.assign(p_, {});
    std::vector<std::vector<TaskId>> forwards(p_);
    uint32_t l_load = g.label("load batch"), l_fwd = g.label("forward"), l_bwd = g.label("backward");
    g.label("optimizer update");  // interned here so that trace label ids stay in this order
    out.preprocessing_label = g.label("gpu preprocessing");
    int steps = wl_.warmup + wl_.steps;
    ctx.buckets = strategy_.buckets(wl_);
    const bool layerwise = strategy_.pulls_gate_forward();
    for (int k = 0; k < steps; ++k) {
      throw_if_interrupted();
      ctx.step = k;
      for (uint32_t w = 0; w < p_; ++w) {
        if ((w & 4095) == 4095) throw_if_interrupted();  // a step of 10^6 workers takes seconds to build
        double j = jitter_factor(wl_, seed_, w, static_cast<uint64_t>(k));
        double y = lognormal_factor(ls.fs_cv, normal01(seed_, w, static_cast<uint64_t>(k), 2));
        double jl = ls.cv < 0 ? j : lognormal_factor(ls.cv, normal01(seed_, w, static_cast<uint64_t>(k), 1));
        TaskId load = loads ? g.add_delay(Time::from_seconds(std::max(decode, read * y) * jl), Category::Io,
                                          static_cast<int32_t>(w), k, l_load, loader[w])
                            : g.add_delay(Time(), Category::Io, static_cast<int32_t>(w), k, l_load);
        // The loader starts once the model is built and its weights broadcast (the training loop's data
        // iterator comes after DDP's constructor or Horovod's broadcast_parameters), then keeps `prefetch`
        // batches ahead of forward.
        g.depend(k >= ls.prefetch ? forwards[w][k - ls.prefetch] : out.broadcast, load);
        TaskId first = load;
        if (ls.gpu_cost > 0) {
          // GPU-side preprocessing (DALI on the GPU) runs on a stream of its own, interleaved with the
          // training kernels: one task per sample, so a training kernel that becomes ready waits for at most
          // one sample's work (first come, first served on the GPU), not for the whole batch.
          for (int64_t i = 0; i < wl_.batch; ++i) {
            TaskId pre = g.add_compute(ctx.gpu[w], Time::from_seconds(ls.gpu_cost), static_cast<int32_t>(w),
                                       k, out.preprocessing_label);
            g.depend(first, pre);
            first = pre;
          }
        }
        TaskId gate = strategy_.forward_gate(k), fwd = kNoTask;
        if (!layerwise) {
          fwd = g.add_compute(ctx.gpu[w], Time::from_seconds(forward_time() * j), static_cast<int32_t>(w), k,
                              l_fwd);
          g.depend(first, fwd);
          g.depend(ctx.step_end[w], fwd);
          if (gate != kNoTask) g.depend(gate, fwd);
        } else {
          // The forward pass bucket by bucket (first layers first, so buckets in reverse), each part behind
          // its own bucket's pulls of the previous step: a layer waits only for its own parameters, and the
          // pulls of later layers overlap the forward of earlier ones. The first part follows the previous
          // step's backward on this GPU (or the initial broadcast).
          TaskId after = k == 0 ? out.broadcast : ctx.backward[w].back();
          for (size_t b = ctx.buckets.size(); b-- > 0;) {
            double t = 0;
            for (size_t i = ctx.buckets[b].first_layer; i <= ctx.buckets[b].last_layer; ++i)
              t += layer_time_[i].first;
            TaskId part =
                g.add_compute(ctx.gpu[w], Time::from_seconds(t * j), static_cast<int32_t>(w), k, l_fwd);
            g.depend(fwd == kNoTask ? first : fwd, part);
            if (fwd == kNoTask) {
              g.depend(after, part);
              if (gate != kNoTask) g.depend(gate, part);
            }
            if (k > 0)
              for (TaskId pulled : ctx.pulled[w][b]) g.depend(pulled, part);
            fwd = part;
          }
        }
        forwards[w].push_back(fwd);
        TaskId prev = fwd;
        ctx.backward[w].clear();
        for (const Bucket& b : ctx.buckets) {
          double t = 0;
          for (size_t i = b.first_layer; i <= b.last_layer; ++i) t += layer_time_[i].second;
          TaskId s = g.add_compute(ctx.gpu[w], Time::from_seconds(t * j), static_cast<int32_t>(w), k, l_bwd);
          g.depend(prev, s);
          ctx.backward[w].push_back(s);
          prev = s;
        }
      }
      if (layerwise) ctx.pulled.assign(p_, std::vector<std::vector<TaskId>>(ctx.buckets.size()));
      strategy_.build_step(ctx);
      for (uint32_t w = 0; w < p_; ++w) out.step_end[w].push_back(ctx.step_end[w]);
    }
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

  const Workload& wl_;
  StepBuilder& strategy_;
  const Cluster& c_;
  uint64_t seed_;
  uint32_t p_;
  std::vector<std::pair<double, double>> layer_time_;
};

// Parameter servers, from the measured steps' tasks: per server host (pushes are "push" transfers into it,
// pulls "pull" transfers out of it; its sums, updates and transport work are delays placed at it), the
// TrainingResult::PsServer figures, and the busiest and mean server's bytes in.
void ps_breakdown(const TaskGraph& g, const std::vector<TaskRecord>& rec, const Topology& topo,
                  const Workload& wl, TrainingResult& r) {
  const auto& labels = g.labels();
  auto label = [&](const char* name) {
    return static_cast<uint32_t>(std::find(labels.begin(), labels.end(), name) - labels.begin());
  };
  const uint32_t push = label("push"), pull = label("pull"), agg = label("aggregate"),
                 upd = label("server update");
  struct Sums {
    double bytes = 0, push = 0, queue = 0, compute = 0, transport = 0, pull = 0;
    size_t pushes = 0, queued = 0, pulls = 0;
  };
  std::map<VertexId, Sums> at;
  // A sum or update waits in the server's queue from the end of its last predecessor (the push, or the
  // host's receive work) to its start.
  std::vector<Time> ready(g.size());
  for (TaskId t = 0; t < g.size(); ++t)
    for (auto [s, e] = g.successors(t); s != e; ++s) ready[*s] = std::max(ready[*s], rec[t].end);
  for (TaskId t = 0; t < g.size(); ++t) {
    const Task& task = g.task(t);
    if (task.step < wl.warmup) continue;
    double d = (rec[t].end - rec[t].start).seconds();
    if (task.kind == TaskKind::Transfer && task.label == push) {
      Sums& s = at[task.dst];
      s.bytes += task.bytes;
      s.push += d;
      ++s.pushes;
    } else if (task.kind == TaskKind::Transfer && task.label == pull) {
      Sums& s = at[task.src];
      s.pull += d;
      ++s.pulls;
    } else if (task.kind == TaskKind::Delay && task.dst != kNoVertex) {
      Sums& s = at[task.dst];
      if (task.label == agg || task.label == upd) {
        s.compute += d;
        if (task.worker >= 0) {  // a push's sum (sync) or update (async), not the step's update
          s.queue += (rec[t].start - ready[t]).seconds();
          ++s.queued;
        }
      } else {
        s.transport += d;
      }
    }
  }
  const double steps = wl.steps;
  for (const auto& [host, s] : at) {
    if (s.pushes == 0) continue;
    TrainingResult::PsServer out;
    out.host = topo.vertex(host).name;
    out.bytes_in = s.bytes / steps;
    out.push_s = s.push / static_cast<double>(s.pushes);
    out.queue_s = s.queued ? s.queue / static_cast<double>(s.queued) : 0;
    out.compute_s = s.compute / steps;
    out.transport_s = s.transport / steps;
    out.pull_s = s.pulls ? s.pull / static_cast<double>(s.pulls) : 0;
    r.ps_max_server_bytes = std::max(r.ps_max_server_bytes, out.bytes_in);
    r.ps_mean_server_bytes += out.bytes_in;
    r.ps_servers.push_back(std::move(out));
  }
  if (!r.ps_servers.empty()) r.ps_mean_server_bytes /= static_cast<double>(r.ps_servers.size());
}

// One simulation (`gpu_limit` > 0: on only the first gpu_limit GPUs, a reference smaller than one node),
// telling `share` now and then what share of it is done.
TrainingResult simulate_once(const Scenario& sc, const Strategy& st, int64_t nodes,
                             const TrainingOptions& opts, bool write_trace, int64_t gpu_limit,
                             const std::function<void(double)>& share) {
  const Workload& wl = sc.training;
  ClusterConfig config = sc.cluster;  // part of a node: its first gpu_limit GPUs (build_cluster)
  if (gpu_limit > 0 && gpu_limit < config.gpus_per_node) config.gpus_per_node = static_cast<int>(gpu_limit);
  Cluster cluster = build_cluster(config, nodes, st.server_hosts());
  std::unique_ptr<StepBuilder> strategy = find_strategy_entry(st.name)->builder(st);
  Builder builder(wl, *strategy, cluster, sc.seed);
  Built built = builder.build();
  built.graph.finalize();
  Engine engine(cluster.topo, cluster.comm, built.graph, opts.engine);
  engine.on_progress(share);
  Time makespan = engine.run();
  const auto& rec = engine.records();
  uint32_t p = static_cast<uint32_t>(cluster.gpus.size());
  TrainingResult r;
  r.strategy = st.label;
  r.strategy_name = st.name;
  r.model = wl.model.name;
  r.loader = loader_name(wl.loader.kind);
  r.gpus = p;
  r.nodes = nodes;
  int w0 = wl.warmup - 1, w1 = wl.warmup + wl.steps - 1;
  r.step_time_s = measured_step_time(wl, built.step_end, rec);
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
    r.busy_allreduce = strategy->collective_kernels() ? 0 : union_length(comm, lo, hi) / window;
    r.busy_data = union_length(gpu_data, lo, hi) / window;
    r.busy_compute = c / window;
  }
  // Collective kernel busy share, averaged over workers (each over its own measured window): one worker's
  // view depends on whether it happens to be early (waits inside the kernel) or the straggler.
  if (strategy->collective_kernels()) {
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
  if (std::holds_alternative<PsOptions>(st.options)) ps_breakdown(g, rec, cluster.topo, wl, r);
  r.stats = engine.stats();
  r.links = top_links(engine, cluster.topo, makespan, opts.top_links);
  if (write_trace) write_perfetto_trace(opts.trace_file, built.graph, rec, 64, &cluster.topo);
  return r;
}

// f(), its graph built and run for strategy `st` at `nodes` nodes, refusing at the strategy a run that passes
// int64 picoseconds of simulated time (a Time sum or conversion that would wrap: steps that together take
// longer than about 53 days) instead of wrapping, and a collective the cluster cannot run.
template <class F>
auto at_strategy(const Strategy& st, int64_t nodes, F&& f) {
  try {
    return f();
  } catch (const TimeOverflow&) {
    st.where.fail(fmt::format(
        "at {} node(s) the run passes the limit of simulated time ({:.3g} s, about 53 days: 2^62 "
        "picoseconds); "
        "its steps, collectives or data loading take too long (workload.batch_per_gpu, the model's "
        "forward_flops and params, workload.loader, steps, or the cluster's bandwidths and latencies)",
        nodes, kMaxSimulatedSeconds));
  } catch (const std::invalid_argument& e) {  // a collective the cluster cannot run (e.g. nvls across nodes)
    st.where.fail(fmt::format("at {} node(s): {}", nodes, e.what()));
  }
}

TrainingResult simulate(const Scenario& sc, const Strategy& st, int64_t nodes, const TrainingOptions& opts,
                        bool write_trace, int64_t gpu_limit = 0,
                        const std::function<void(double)>& share = {}) {
  return at_strategy(st, nodes,
                     [&] { return simulate_once(sc, st, nodes, opts, write_trace, gpu_limit, share); });
}

}  // namespace

namespace {

// Bytes per task and per dependency while a simulation runs: the Task and its record, its readiness count and
// successor offset, the event that starts or ends it; a dependency is a pair while the graph is built and a
// successor index after. Each x2 for the slack of vectors grown by doubling (and the edge list and successor
// array that exist together in finalize). Checked against peak RSS by `bench_training --memory`.
constexpr double kBytesPerTask = 2.0 * (sizeof(Task) + sizeof(TaskRecord) + 3 * sizeof(uint32_t) + 16);
constexpr double kBytesPerEdge = 2.0 * (sizeof(std::pair<TaskId, TaskId>) + sizeof(TaskId));
constexpr double kBytesPerMember = 2.0 * 2 * sizeof(uint32_t);  // a collective's members and launch tasks
// A flow on the network: its state, route and slots (about 6 links), its entries in the links' lists.
constexpr double kBytesPerFlow = 400;
constexpr double kBaseBytes = 32e6;  // the program and its libraries (about 6 MB resident), and headroom
// Per GPU: the cluster (its devices, links and the fabric's share), the router's caches of routes and
// distances, the collective executor's state per member. Not derived: measured, as the peak RSS a 16,384-GPU
// fat-tree step leaves beyond its tasks and flows (`bench_training --memory`: 305 MB for 2.6e5 tasks, about
// 15 kB per GPU).
constexpr double kBytesPerGpu = 16e3;

}  // namespace

MemoryModel::MemoryModel(const Scenario& sc, const Strategy& st) : scenario_(sc), strategy_(st) {
  Cluster one = build_cluster(sc.cluster, 1, st.server_hosts());
  auto count = [&](int steps) {
    Workload w = sc.training;
    w.warmup = 1;
    w.steps = steps;
    TrainingGraph g = build_training_graph(w, st, one, sc.seed);
    Count c;
    for (const Task& t : g.graph.tasks()) (t.worker >= 0 ? c.own : c.shared) += 1;
    c.edges = static_cast<double>(g.graph.edge_count());
    for (const CollectiveTask& t : g.graph.collectives()) c.members += static_cast<double>(t.members.size());
    return c;
  };
  // (The one-node graphs are the run's first: a strategy the cluster cannot run is refused here.)
  two_ = at_strategy(st, 1, [&] { return count(1); });
  three_ = at_strategy(st, 1, [&] { return count(2); });
}

MemoryEstimate MemoryModel::at(int64_t nodes) const {
  const Scenario& sc = scenario_;
  const double steps = sc.training.warmup + sc.training.steps, n = static_cast<double>(nodes);
  auto scaled = [&](double Count::*field, double nodes_factor) {  // fixed + per step x steps
    double per_step = std::max(0.0, three_.*field - two_.*field);
    return nodes_factor * (std::max(0.0, two_.*field - 2 * per_step) + steps * per_step);
  };
  MemoryEstimate e;
  e.tasks = scaled(&Count::own, n) + scaled(&Count::shared, 1);
  double edges = scaled(&Count::edges, n);      // (an upper bound: some join shared tasks)
  double members = scaled(&Count::members, n);  // a collective's members: n times one node's
  const double gpus = n * sc.cluster.gpus_per_node;
  double fan_out = 4;  // a ring's channels, a tree's children, a few transfers
  if (const auto* ps = std::get_if<PsOptions>(&strategy_.options);
      ps && (ps->sharding == PsSharding::Range || ps->sharding == PsSharding::Mxnet))
    fan_out = std::max<double>(fan_out, 2.0 * ps->placement.count(static_cast<size_t>(nodes)));  // push, pull
  e.flows = gpus * fan_out;
  e.bytes = kBaseBytes + gpus * kBytesPerGpu + e.tasks * kBytesPerTask + edges * kBytesPerEdge +
            members * kBytesPerMember + e.flows * kBytesPerFlow;
  return e;
}

double available_memory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}

MemoryLimit memory_limit(double max_memory) {
  if (max_memory < 0) return {};
  double bytes = max_memory > 0 ? max_memory : available_memory();
  return {bytes, fmt::format("{:.3g} GB {}", bytes / 1e9,
                             max_memory > 0 ? "of --max-memory" : "available (MemAvailable)")};
}

TrainingGraph build_training_graph(const Workload& wl, const Strategy& st, const Cluster& cluster,
                                   uint64_t seed) {
  std::unique_ptr<StepBuilder> strategy = find_strategy_entry(st.name)->builder(st);
  Builder builder(wl, *strategy, cluster, seed);
  Built built = builder.build();
  return {std::move(built.graph), std::move(built.step_end)};
}

double measured_step_time(const Workload& wl, const std::vector<std::vector<TaskId>>& step_end,
                          const std::vector<TaskRecord>& records, TaskId offset) {
  int w0 = wl.warmup - 1, w1 = wl.warmup + wl.steps - 1;
  double sum = 0;
  for (const std::vector<TaskId>& ends : step_end)
    sum += (records[offset + ends[w1]].end - records[offset + ends[w0]].end).seconds() / wl.steps;
  return step_end.empty() ? 0 : sum / static_cast<double>(step_end.size());
}

const char* loader_name(LoaderKind k) {
  switch (k) {
    case LoaderKind::Synthetic:
      return "synthetic";
    case LoaderKind::Native:
      return "native";
    case LoaderKind::DaliCpu:
      return "dali-cpu";
    case LoaderKind::DaliGpu:
      return "dali-gpu";
  }
  return "?";
}

std::vector<bool> run_parallel(
    size_t count, int threads,
    const std::function<void(double fraction, size_t done, size_t total)>& progress,
    const std::function<void(size_t k, const std::function<void(double)>& share)>& task,
    std::vector<double> weights) {
  std::vector<uint8_t> ran(count, 0);  // (not vector<bool>: threads write distinct elements)
  std::vector<std::exception_ptr> errors(count);
  std::atomic<size_t> next{0};
  if (weights.size() != count || std::accumulate(weights.begin(), weights.end(), 0.0) <= 0)
    weights.assign(count, 1.0);
  const double all = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::mutex lock;  // guards what follows; progress is called one at a time
  size_t finished = 0;
  double work = 0;  // the weights of the finished tasks and the done parts of the running ones, summed
  auto report = [&] {
    if (progress) progress(std::min(1.0, work / all), finished, count);
  };
  auto worker = [&] {
    for (size_t k; !interrupted() && (k = next++) < count;) {  // SIGINT/SIGTERM: no new ones
      double mine = 0;                                         // this task's done part in `work`
      auto share = [&](double f) {
        std::lock_guard<std::mutex> guard(lock);
        work += f * weights[k] - mine;
        mine = f * weights[k];
        report();
      };
      try {
        task(k, progress ? std::function<void(double)>(share) : std::function<void(double)>());
        ran[k] = 1;
      } catch (const Interrupted&) {  // abandoned: not run, not an error
      } catch (...) {
        errors[k] = std::current_exception();
      }
      std::lock_guard<std::mutex> guard(lock);
      work += weights[k] - mine;
      ++finished;
      report();
    }
  };
  size_t n = std::min<size_t>(count, static_cast<size_t>(threads > 0 ? threads : usable_cpus()));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < n; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  return std::vector<bool>(ran.begin(), ran.end());
}

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

std::vector<TrainingResult> run_training(const Scenario& sc, const std::vector<int64_t>& counts,
                                         const TrainingOptions& opts) {
  int gpn = sc.cluster.gpus_per_node;
  if (gpn < 1) throw std::invalid_argument("run_training: the cluster needs at least one GPU per node");
  const std::vector<int64_t>& parts = opts.part_node_gpus;
  int64_t smallest = INT64_MAX;
  for (int64_t n : counts) smallest = std::min(smallest, n * gpn);
  for (int64_t g : parts) {
    if (g < 1 || g >= gpn) throw std::invalid_argument("run_training: part_node_gpus must be below one node");
    smallest = std::min(smallest, g);
  }
  if (smallest == INT64_MAX) throw std::invalid_argument("run_training: no points to run");
  int64_t ref_gpus = sc.reference_gpus > 0 ? sc.reference_gpus : smallest;
  if (ref_gpus > gpn && ref_gpus % gpn != 0)
    sc.reference_where.fail(
        fmt::format("reference_gpus must be at most one node or a multiple of {} GPUs per node", gpn));
  // Every simulation is independent: list them (per strategy, each count, each part of a node and the
  // reference: part of a node runs on that node's first GPUs), run them on `jobs` threads, then relate each
  // to its reference.
  struct Job {
    const Strategy* spec;
    int64_t nodes, gpu_limit;
    bool trace;
    bool point;  // reported (else only the reference)
    TrainingResult result;
    bool ran = false;
  };
  std::vector<Job> jobs;
  std::vector<size_t> first_job;
  int64_t ref_nodes = std::max<int64_t>(1, ref_gpus / gpn);
  for (const Strategy& spec : sc.strategies) {
    first_job.push_back(jobs.size());
    for (int64_t n : counts)
      jobs.push_back({&spec, n, 0, jobs.empty() && !opts.trace_file.empty(), true, {}, {}});
    for (int64_t g : parts) jobs.push_back({&spec, 1, g, false, true, {}, {}});
    if (ref_gpus < gpn) {
      if (std::find(parts.begin(), parts.end(), ref_gpus) == parts.end())
        jobs.push_back({&spec, 1, ref_gpus, false, false, {}, {}});
    } else if (std::find(counts.begin(), counts.end(), ref_nodes) == counts.end()) {
      jobs.push_back({&spec, ref_nodes, 0, false, false, {}, {}});
    }
  }
  first_job.push_back(jobs.size());
  // The references first (an interrupted run still relates what it finished to them), then the largest
  // first, so that the last to finish is a small one.
  auto reference = [&](const Job& j) {
    return ref_gpus < gpn ? j.gpu_limit == ref_gpus : j.gpu_limit == 0 && j.nodes == ref_nodes;
  };
  std::vector<size_t> order(jobs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (reference(jobs[a]) != reference(jobs[b])) return reference(jobs[a]);
    return jobs[a].nodes > jobs[b].nodes;
  });
  // A point the caller already has is not run, unless it is its strategy's reference.
  auto skipped = [&](const Job& j) {
    return opts.skip && j.gpu_limit == 0 && opts.skip(j.spec->label, j.nodes);
  };
  std::vector<size_t> reference_job(sc.strategies.size(), SIZE_MAX);
  std::vector<size_t> strategy_of(jobs.size());
  for (size_t s = 0; s < sc.strategies.size(); ++s)
    for (size_t i = first_job[s]; i < first_job[s + 1]; ++i) {
      strategy_of[i] = s;
      if (reference(jobs[i])) reference_job[s] = i;
    }
  // A finished point's result with its speed-up, efficiency and LR scale relative to the reference.
  auto related = [&](const Job& j) {
    const TrainingResult& ref = jobs[reference_job[strategy_of[&j - jobs.data()]]].result;
    TrainingResult r = j.result;
    r.speedup = r.throughput / ref.throughput;
    r.efficiency = r.speedup / (static_cast<double>(r.gpus) / static_cast<double>(ref.gpus));
    r.learning_rate_scale = r.global_batch / ref.global_batch;
    return r;
  };
  auto reported = [&](const Job& j) { return j.point && !skipped(j); };
  // Whether job i runs: not skipped, or its strategy's reference while a point of the strategy runs.
  auto needed = [&](size_t i) {
    if (!skipped(jobs[i])) return true;
    if (reference_job[strategy_of[i]] != i) return false;
    for (size_t o = first_job[strategy_of[i]]; o < first_job[strategy_of[i] + 1]; ++o)
      if (o != i && !skipped(jobs[o])) return true;
    return false;
  };
  std::mutex emit_lock;
  std::vector<uint8_t> finished(jobs.size(), 0), emitted(jobs.size(), 0);
  // Streams every finished point of strategy s whose reference has finished.
  auto emit = [&](size_t s) {
    if (!opts.on_result || !finished[reference_job[s]]) return;
    for (size_t i = first_job[s]; i < first_job[s + 1]; ++i)
      if (finished[i] && !emitted[i] && reported(jobs[i])) {
        emitted[i] = 1;
        opts.on_result(related(jobs[i]));
      }
  };
  // Refuse, before anything runs, a simulation that would not fit in memory.
  // Simulations run at once share it: fewer threads when the largest ones together would not fit. The
  // estimates' task counts also weigh the simulations in the progress reported.
  const MemoryLimit limit = memory_limit(opts.max_memory);
  int threads = opts.jobs > 0 ? opts.jobs : usable_cpus();
  std::vector<double> sizes, weights(jobs.size(), 0.0);
  std::vector<std::optional<MemoryModel>> models(sc.strategies.size());
  for (size_t i = 0; i < jobs.size() && (limit.bytes > 0 || opts.progress); ++i) {
    if (!needed(i)) continue;
    const Job& j = jobs[i];
    std::optional<MemoryModel>& model = models[strategy_of[i]];
    if (!model) model.emplace(sc, *j.spec);
    MemoryEstimate e = model->at(j.nodes);
    weights[i] = e.tasks;
    if (limit.bytes <= 0) continue;
    sizes.push_back(e.bytes);
    if (e.bytes <= limit.bytes) continue;
    sc.cluster.nodes_where.fail(fmt::format(
        "at {} nodes ({} GPUs) {} needs about {:.3g} GB ({:.3g} tasks over {} steps, up to {:.3g} flows at "
        "once), more than the {}: fewer nodes or workload.steps, or --max-memory to override",
        j.nodes, j.nodes * gpn, j.spec->label, e.bytes / 1e9, e.tasks, sc.training.warmup + sc.training.steps,
        e.flows, limit.text));
  }
  std::sort(sizes.rbegin(), sizes.rend());
  auto together = [&](int k) {
    return std::accumulate(sizes.begin(), sizes.begin() + std::min<size_t>(sizes.size(), k), 0.0);
  };
  std::vector<double> weight_in_order(order.size());  // (run_parallel's task k is job order[k])
  for (size_t k = 0; k < order.size(); ++k) weight_in_order[k] = weights[order[k]];
  // (no check: every thread; `--max-memory none` used to leave one)
  while (limit.bytes > 0 && threads > 1 && together(threads) > limit.bytes) --threads;
  std::vector<bool> ran = run_parallel(
      jobs.size(), threads, opts.progress,
      [&](size_t k, const auto& share) {
        size_t i = order[k];
        Job& j = jobs[i];
        if (!needed(i)) return;
        j.result = simulate(sc, *j.spec, j.nodes, opts, j.trace, j.gpu_limit, share);
        std::lock_guard<std::mutex> guard(emit_lock);
        finished[i] = 1;
        emit(strategy_of[i]);
      },
      std::move(weight_in_order));
  for (size_t k = 0; k < jobs.size(); ++k) jobs[order[k]].ran = ran[k] && finished[order[k]];
  // Every finished point whose reference finished (all of them unless interrupted), in the scenario's order.
  std::vector<TrainingResult> out;
  for (size_t s = 0; s < sc.strategies.size(); ++s) {
    if (!jobs[reference_job[s]].ran) continue;
    auto add = [&](int64_t nodes, int64_t gpu_limit) {
      for (size_t i = first_job[s]; i < first_job[s + 1]; ++i)
        if (jobs[i].gpu_limit == gpu_limit && jobs[i].nodes == nodes && jobs[i].ran && reported(jobs[i])) {
          out.push_back(related(jobs[i]));
          break;
        }
    };
    for (int64_t g : parts) add(1, g);  // below one node: before every node count
    for (int64_t n : counts) add(n, 0);
  }
  return out;
}

bool has_parameter_server(const Scenario& sc) {
  return std::any_of(sc.strategies.begin(), sc.strategies.end(),
                     [](const Strategy& st) { return std::holds_alternative<PsOptions>(st.options); });
}

Record training_record(const TrainingResult& r, bool has_ps, bool stats) {
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
  if (has_ps) {  // every row has the keys (one CSV header); 0 for strategies without servers
    rec.push_back({"ps.max_server_bytes_per_step", r.ps_max_server_bytes});
    rec.push_back({"ps.mean_server_bytes_per_step", r.ps_mean_server_bytes});
    // The slowest server's figures (each the largest over servers), then every server in JSON only.
    double push = 0, queue = 0, compute = 0, transport = 0, pull = 0;
    for (const TrainingResult::PsServer& s : r.ps_servers) {
      push = std::max(push, s.push_s);
      queue = std::max(queue, s.queue_s);
      compute = std::max(compute, s.compute_s);
      transport = std::max(transport, s.transport_s);
      pull = std::max(pull, s.pull_s);
    }
    rec.push_back({"ps.max_push_s", push});
    rec.push_back({"ps.max_queue_s", queue});
    rec.push_back({"ps.max_compute_s_per_step", compute});
    rec.push_back({"ps.max_transport_cpu_s_per_step", transport});
    rec.push_back({"ps.max_pull_s", pull});
    for (const TrainingResult::PsServer& s : r.ps_servers) {
      const std::string k = "ps.servers." + s.host + ".";
      rec.push_back({k + "bytes_in_per_step", s.bytes_in, true});
      rec.push_back({k + "push_s", s.push_s, true});
      rec.push_back({k + "queue_s", s.queue_s, true});
      rec.push_back({k + "compute_s_per_step", s.compute_s, true});
      rec.push_back({k + "transport_cpu_s_per_step", s.transport_s, true});
      rec.push_back({k + "pull_s", s.pull_s, true});
    }
  }
  if (stats) add_engine_stats(rec, r.stats);
  return rec;
}

void add_engine_stats(Record& rec, const EngineStats& s) {
  rec.push_back({"messages", static_cast<int64_t>(s.messages)});
  rec.push_back({"fast_messages", static_cast<int64_t>(s.fast_messages)});
  rec.push_back({"flows", static_cast<int64_t>(s.flows)});
  rec.push_back({"region_solves", static_cast<int64_t>(s.region_solves)});
  rec.push_back({"region_flows", static_cast<int64_t>(s.region_flows)});
}

Report run_training_report(const Scenario& sc, const std::vector<int64_t>& counts,
                           const TrainingOptions& opts, bool stats) {
  Report report;
  report.scenario_name = sc.name;
  report.scenario_file = sc.file;
  const Workload& wl = sc.training;
  report.title = fmt::format("{}: {} on {}, batch {}/GPU, {} loader", sc.name, wl.model.name, sc.cluster.name,
                             wl.batch, loader_name(wl.loader.kind));
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
  const bool has_ps = has_parameter_server(sc);
  for (const TrainingResult& r : run_training(sc, counts, opts))
    report.results.push_back(training_record(r, has_ps, stats));
  report.notes.push_back(
      "shares: wall-time split of a step on worker 0 (compute, exposed communication, exposed I/O, idle)");
  if (has_ps)
    report.notes.push_back(
        "kernel_shares.allreduce of a parameter-server strategy (no collective kernels): the share of the "
        "step with a push, pull or host transfer work of worker 0 in flight");
  if (!wl.rate_source.empty())
    report.notes.push_back("compute: the model's published rate: " + wl.rate_source);
  return report;
}

}  // namespace ddlsim
