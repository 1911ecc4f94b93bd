#pragma once
// The task graph a strategy builds and the engine executes: compute on a GPU, transfers between endpoints,
// delays (I/O, coordination), and collectives (a round plan over member endpoints). Tasks that name an
// exclusive resource (a GPU's stream, a server's CPU, a loader) run one at a time on it, in the order they
// become ready.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/core/units.hpp"
#include "sim/net/topology.hpp"
#include "sim/train/collective.hpp"

namespace ddlsim {

using TaskId = uint32_t;
constexpr TaskId kNoTask = UINT32_MAX;
constexpr uint32_t kNoResource = UINT32_MAX;

enum class TaskKind : uint8_t { Compute, Delay, Transfer, Collective };
// What a task counts as in reports.
enum class Category : uint8_t { Compute, Communication, Io, Other };

struct Task {
  TaskKind kind = TaskKind::Delay;
  Category category = Category::Other;
  uint32_t resource = kNoResource;
  Time duration;                              // Compute, Delay
  VertexId src = kNoVertex, dst = kNoVertex;  // Transfer; dst of a Delay: the host it runs on, if any
  double bytes = 0;                           // Transfer
  uint32_t collective = UINT32_MAX;           // Collective: index into TaskGraph::collectives
  int32_t worker = -1;                        // for metrics: the worker this task belongs to
  int32_t step = -1;                          // training step, -1 for one-off tasks
  uint32_t label = 0;                         // index into TaskGraph::labels (for traces)
};

struct CollectiveTask {
  std::shared_ptr<const CollectivePlan> plan;
  std::vector<VertexId> members;           // endpoint of each plan member
  bool reduce_on_cpu_for_servers = false;  // PS servers aggregate on CPUs (server_gamma) rather than GPUs
  uint32_t first_server = UINT32_MAX;      // members from here on are servers
  // The builder guarantees no other flow runs while this collective does (one communicator, no concurrent
  // transfers), which lets the engine use the exact max-plus fast path. The engine checks the guarantee.
  bool isolated = false;
  // Optional, per member: the task after which that member launches its kernel (for interference and busy
  // time).
  std::vector<TaskId> launch;
  int32_t first_worker = 0;  // member m < launch.size() is worker first_worker + m (jobs of one machine)
};

class TaskGraph {
 public:
  TaskId add(const Task& t);
  TaskId add_compute(uint32_t resource, Time duration, int32_t worker, int32_t step, uint32_t label = 0);
  // `at`: the host whose CPU does the work (parameter servers' sums and updates), for per-server metrics.
  TaskId add_delay(Time duration, Category category, int32_t worker, int32_t step, uint32_t label = 0,
                   uint32_t resource = kNoResource, VertexId at = kNoVertex);
  TaskId add_transfer(VertexId src, VertexId dst, double bytes, int32_t worker, int32_t step,
                      uint32_t label = 0);
  TaskId add_collective(CollectiveTask c, int32_t step, uint32_t label = 0);
  // `after` cannot start before `before` has ended.
  void depend(TaskId before, TaskId after);
  uint32_t label(const std::string& name);  // interned task names for traces
  // Appends `other` (not finalized) as an independent part of this graph: its tasks, resources, collectives,
  // labels and workers get new ids (its task t becomes offset + t, the returned offset; its workers follow
  // this graph's). With `start` > 0, a delay of `start` (worker -1, step -1) comes first and every appended
  // task without a predecessor waits for it.
  TaskId append(const TaskGraph& other, Time start = Time());
  // A resource that runs up to `capacity` tasks at once (a host CPU's cores); the rest wait in FIFO order.
  uint32_t add_resource(uint32_t capacity = 1) {
    capacity_.push_back(capacity);
    return resources_++;
  }
  uint32_t resource_capacity(uint32_t r) const { return capacity_[r]; }

  size_t size() const { return tasks_.size(); }
  size_t edge_count() const { return edges_.size() + succ_.size(); }  // (before or after finalize)
  const Task& task(TaskId t) const { return tasks_[t]; }
  const std::vector<Task>& tasks() const { return tasks_; }
  const std::vector<CollectiveTask>& collectives() const { return collectives_; }
  const std::vector<std::string>& labels() const { return labels_; }
  uint32_t resource_count() const { return resources_; }
  // Other traffic may share the network with every collective (no collective is isolated).
  void share_network() {
    for (CollectiveTask& c : collectives_) c.isolated = false;
  }
  // Successors in CSR form; valid after finalize().
  void finalize();
  std::pair<const TaskId*, const TaskId*> successors(TaskId t) const {
    return {succ_.data() + succ_begin_[t], succ_.data() + succ_begin_[t + 1]};
  }
  uint32_t predecessor_count(TaskId t) const { return preds_[t]; }

  // While a collective kernel is resident on a GPU (from its launch to the collective's end), compute there
  // runs this fraction slower: NCCL/RCCL kernels hold SMs and HBM bandwidth. 0 = no interference.
  double collective_compute_slowdown = 0;

 private:
  std::vector<Task> tasks_;
  std::vector<CollectiveTask> collectives_;
  std::vector<std::pair<TaskId, TaskId>> edges_;
  std::vector<uint32_t> succ_begin_;
  std::vector<TaskId> succ_;
  std::vector<uint32_t> preds_;
  std::vector<std::string> labels_{""};
  uint32_t resources_ = 0;
  std::vector<uint32_t> capacity_;  // per resource
};

}  // namespace ddlsim
