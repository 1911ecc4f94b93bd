#include "sim/train/device_model.hpp"

namespace ddlsim {

DeviceModel::DeviceModel(const TaskGraph& graph) : graph_(graph) {
  if (graph.collective_compute_slowdown <= 0) return;
  for (TaskId t = 0; t < graph.size(); ++t) {
    const Task& task = graph.task(t);
    if (task.kind != TaskKind::Collective) continue;
    const CollectiveTask& c = graph.collectives()[task.collective];
    const size_t workers = static_cast<size_t>(c.first_worker) + c.launch.size();
    for (uint32_t m = 0; m < c.launch.size(); ++m)
      launches_[c.launch[m]].push_back(static_cast<uint32_t>(c.first_worker) + m);
    if (workers > resident_.size()) {
      resident_.resize(workers);
      resident_since_.resize(workers);
      resident_total_.resize(workers);
    }
  }
  resident_at_start_.resize(graph.size());
  extended_.resize(graph.size());
}

int64_t DeviceModel::resident_time(int32_t worker, Time now) const {
  size_t w = static_cast<size_t>(worker);
  if (w >= resident_.size()) return 0;
  return resident_total_[w] + (resident_[w] > 0 ? now.picoseconds() - resident_since_[w] : 0);
}

Time DeviceModel::extension(TaskId t, Time now) {
  if (!active()) return Time();
  const Task& task = graph_.task(t);
  if (task.kind != TaskKind::Compute || task.worker < 0 || extended_[t]) return Time();
  int64_t overlap = resident_time(task.worker, now) - resident_at_start_[t];
  extended_[t] = true;
  return Time::from_seconds(graph_.collective_compute_slowdown * Time::ps(overlap).seconds());
}

void DeviceModel::task_finished(TaskId t, Time now) {
  if (launches_.empty()) return;
  if (auto it = launches_.find(t); it != launches_.end())
    for (uint32_t m : it->second)
      if (resident_[m]++ == 0) resident_since_[m] = now.picoseconds();
  const Task& task = graph_.task(t);
  if (task.kind == TaskKind::Collective) {
    const CollectiveTask& c = graph_.collectives()[task.collective];
    for (size_t m = static_cast<size_t>(c.first_worker);
         m < static_cast<size_t>(c.first_worker) + c.launch.size(); ++m)
      if (--resident_[m] == 0) resident_total_[m] += now.picoseconds() - resident_since_[m];
  }
}

}  // namespace ddlsim
