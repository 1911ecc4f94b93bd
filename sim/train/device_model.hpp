#pragma once
// The device side of the Engine: kernel interference on a GPU. While collective kernels are resident on a
// member's GPU (from the end of the task after which that member launches its kernel to the collective's
// end), compute there runs TaskGraph::collective_compute_slowdown slower: a compute task is extended, once,
// by slowdown x the resident time during it (the resident time during the extension itself is not counted
// again).
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "sim/core/units.hpp"
#include "sim/train/task_graph.hpp"

namespace ddlsim {

class DeviceModel {
 public:
  explicit DeviceModel(const TaskGraph& graph);
  // False when the graph has no interference (slowdown 0 or no collectives): every hook is then a no-op.
  bool active() const { return !resident_.empty(); }
  // A compute task started at `now`.
  void compute_started(TaskId t, Time now) {
    if (!active()) return;
    const Task& task = graph_.task(t);
    if (task.kind == TaskKind::Compute && task.worker >= 0)
      resident_at_start_[t] = resident_time(task.worker, now);
  }
  // Task t reached its end time `now`: the extra time it still runs (zero when it is done), at most once per
  // task.
  Time extension(TaskId t, Time now);
  // Task t ended at `now`: the kernels its end launches become resident; a collective's end retires its own.
  void task_finished(TaskId t, Time now);
  // Picoseconds during which `worker`'s GPU had a resident collective kernel, up to `now`.
  int64_t resident_time(int32_t worker, Time now) const;

 private:
  const TaskGraph& graph_;
  std::unordered_map<TaskId, std::vector<uint32_t>>
      launches_;                                          // task -> members whose kernel its end launches
  std::vector<uint32_t> resident_;                        // kernels resident per member
  std::vector<int64_t> resident_since_, resident_total_;  // since when; resident ps before that
  std::vector<int64_t> resident_at_start_;                // per compute task: resident_time at its start
  std::vector<bool> extended_;                            // per task: its end was already extended
};

}  // namespace ddlsim
