#pragma once
// Data-parallel training: a model's layer table on a GPU, a data loader, a gradient-synchronisation strategy
// (a task-graph builder), simulated for warm-up + K steps; reported as step time, throughput, speed-up and
// efficiency relative to reference_gpus, time to train, and the split of step time.
#include <functional>
#include <string>
#include <vector>

#include "sim/io/output.hpp"
#include "sim/train/engine.hpp"
#include "sim/train/scenario.hpp"

namespace ddlsim {

struct TrainingResult;

struct TrainingOptions {
  EngineOptions engine;
  std::string trace_file;  // Perfetto trace of the first run, when set
  size_t top_links = 0;    // report this many most-loaded links per simulation
  int jobs = 0;            // simulations run at once (threads); 0: one per CPU this process may use
  // A simulation whose memory estimate passes this many bytes is refused before it runs (InputError naming
  // cluster.nodes); 0: the memory available on this machine (MemAvailable), < 0: no check.
  double max_memory = 0;
  // Progress of run_training, from its worker threads one call at a time: after each finished simulation,
  // and now and then while they run. `fraction`: the work done, each simulation weighed by its task count
  // (its memory estimate's), a running one by the share of its tasks that have ended; `done` of `total`
  // simulations have finished.
  std::function<void(double fraction, size_t done, size_t total)> progress;
  // Points (strategy label, node count) not to run: rows a resumed sweep has already. A reference still runs
  // when another point needs it, and is not reported when skipped.
  std::function<bool(const std::string& strategy, int64_t nodes)> skip;
  // Called with each reported result as soon as it and its reference have finished (speed-up and efficiency
  // set), in completion order, one call at a time: rows streamed to a file survive an interrupt.
  std::function<void(const TrainingResult&)> on_result;
  // Points below one node of an interior, each a GPU count run on one node's first GPUs, reported before the
  // node counts' and related to the same reference (validate's measured counts below one node).
  std::vector<int64_t> part_node_gpus;
};

// CPUs this process may run on (its affinity mask, as Slurm and mpirun bind it), at least 1.
int usable_cpus();

// Runs task(k, share) for k = 0..count-1 on up to `threads` threads (0: usable_cpus()), taking them in index
// order, and calls progress(fraction, done, count) after each (one call at a time). `done` counts the
// finished tasks; `fraction` is the work done, task k weighing weights[k] (all alike when `weights` is empty
// or sums to 0), a running one the share of it done as it last said by calling share(f), f in [0, 1] (which
// calls progress too). After SIGINT/SIGTERM it takes no new ones. Rethrows the first task's exception (by
// index) once every thread has ended; otherwise returns which tasks ran to the end.
std::vector<bool> run_parallel(
    size_t count, int threads,
    const std::function<void(double fraction, size_t done, size_t total)>& progress,
    const std::function<void(size_t k, const std::function<void(double)>& share)>& task,
    std::vector<double> weights = {});

struct TrainingResult {
  std::string strategy;       // the strategy's label
  std::string strategy_name;  // ddp, horovod, zero, ps, ring, ...
  std::string model, loader;
  int64_t gpus = 0, nodes = 0;
  double step_time_s = 0;
  double throughput = 0;  // samples/s
  double speedup = 0, efficiency = 0;
  double time_to_train_s = 0;
  double global_batch = 0;
  double learning_rate_scale = 0;  // linear LR-scaling rule: global batch / reference global batch
  // Wall-time split of a step from worker 0's view: compute, exposed communication, I/O (exposed loader
  // wait and GPU preprocessing), idle (waiting for stragglers / coordination). Sums to 1.
  double share_compute = 0, share_communication = 0, share_io = 0, share_idle = 0;
  // Share of time during which a kind of kernel runs (overlapping, as Aach et al. Table 2): allreduce busy
  // (from each launch to the collective's end, averaged over workers), data work on the GPU (DALI-GPU
  // preprocessing; host-side loader threads run no GPU kernels), compute busy; the last two on worker 0.
  double busy_allreduce = 0, busy_data = 0, busy_compute = 0;
  // Parameter servers: per measured step, the bytes pushed into the busiest server and into the mean one
  // (their ratio shows how unevenly the sharding loads the servers); 0 for other strategies.
  double ps_max_server_bytes = 0, ps_mean_server_bytes = 0;
  // Where a PS step goes, per server host (per measured step; means over its messages): bytes pushed in, a
  // push on the wire (contention included), a received push's wait for the host's accumulator (the server
  // queue), the host's CPU seconds summing and updating and in the transport's host work, a pull on the wire.
  struct PsServer {
    std::string host;
    double bytes_in = 0, push_s = 0, queue_s = 0, compute_s = 0, transport_s = 0, pull_s = 0;
  };
  std::vector<PsServer> ps_servers;
  EngineStats stats;
  std::vector<LinkLoad> links;  // the most-loaded links (TrainingOptions::top_links)
};

// One training run's task graph on every GPU of `cluster` (not finalized), and per worker and step (warm-up
// steps first) the task that ends the step. The scenario form with jobs builds its jobs' graphs with it.
struct TrainingGraph {
  TaskGraph graph;
  std::vector<std::vector<TaskId>> step_end;
};
TrainingGraph build_training_graph(const Workload& wl, const Strategy& st, const Cluster& cluster,
                                   uint64_t seed);
// The measured steps' mean time (after the warm-up), averaged over workers, from a run's records; the
// graph's task t is task offset + t of the run.
double measured_step_time(const Workload& wl, const std::vector<std::vector<TaskId>>& step_end,
                          const std::vector<TaskRecord>& records, TaskId offset = 0);

std::vector<TrainingResult> run_training(const Scenario& scenario, const std::vector<int64_t>& node_counts,
                                         const TrainingOptions& options);
// What one simulation will hold, estimated before it runs from graphs of one node with one and with two
// measured steps (tasks and dependencies per node and step, scaled to the nodes and steps), and an upper
// bound on the flows in flight at once (every GPU to every server for a parameter server splitting each
// chunk over all of them, else a few per GPU).
struct MemoryEstimate {
  double bytes = 0;
  double tasks = 0;
  double flows = 0;
};
// The one-node graphs are built once per strategy; at() scales them to any node count.
class MemoryModel {
 public:
  MemoryModel(const Scenario& scenario, const Strategy& strategy);
  MemoryEstimate at(int64_t nodes) const;

 private:
  struct Count {
    double own = 0, shared = 0, edges = 0, members = 0;  // tasks of a worker, tasks of none (collectives)
  };
  const Scenario& scenario_;
  const Strategy& strategy_;
  Count two_, three_;  // one node, 2 and 3 steps in all
};
// The memory this machine has available now (MemAvailable of /proc/meminfo), or 0 when unknown.
double available_memory();
// What a run may use, from a max_memory option (> 0: that; 0: available_memory(); < 0: no check, 0 returned),
// and where that limit came from, for the refusal: "1.5 GB of --max-memory" or "23.8 GB available
// (MemAvailable)".
struct MemoryLimit {
  double bytes = 0;  // 0: no check
  std::string text;
};
MemoryLimit memory_limit(double max_memory);

// The report's row of one result (every row of a scenario has the same keys: `has_ps` when any strategy is a
// parameter server; `stats` adds the engine's counts).
Record training_record(const TrainingResult& r, bool has_ps, bool stats);
// The engine statistics `--stats` adds to a row: messages, fast messages, flows and region re-solves.
void add_engine_stats(Record& rec, const EngineStats& s);
bool has_parameter_server(const Scenario& scenario);
Report run_training_report(const Scenario& scenario, const std::vector<int64_t>& node_counts,
                           const TrainingOptions& options, bool stats);

}  // namespace ddlsim
