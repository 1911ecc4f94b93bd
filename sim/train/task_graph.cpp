#include "sim/train/task_graph.hpp"

#include <algorithm>
#include <cassert>

namespace ddlsim {

TaskId TaskGraph::add(const Task& t) {
  tasks_.push_back(t);
  return static_cast<TaskId>(tasks_.size() - 1);
}

TaskId TaskGraph::add_compute(uint32_t resource, Time duration, int32_t worker, int32_t step,
                              uint32_t label) {
  Task t;
  t.kind = TaskKind::Compute;
  t.category = Category::Compute;
  t.resource = resource;
  t.duration = duration;
  t.worker = worker;
  t.step = step;
  t.label = label;
  return add(t);
}

TaskId TaskGraph::add_delay(Time duration, Category category, int32_t worker, int32_t step, uint32_t label,
                            uint32_t resource, VertexId at) {
  Task t;
  t.kind = TaskKind::Delay;
  t.dst = at;
  t.category = category;
  t.resource = resource;
  t.duration = duration;
  t.worker = worker;
  t.step = step;
  t.label = label;
  return add(t);
}

TaskId TaskGraph::add_transfer(VertexId src, VertexId dst, double bytes, int32_t worker, int32_t step,
                               uint32_t label) {
  Task t;
  t.kind = TaskKind::Transfer;
  t.category = Category::Communication;
  t.src = src;
  t.dst = dst;
  t.bytes = bytes;
  t.worker = worker;
  t.step = step;
  t.label = label;
  return add(t);
}

TaskId TaskGraph::add_collective(CollectiveTask c, int32_t step, uint32_t label) {
  collectives_.push_back(std::move(c));
  Task t;
  t.kind = TaskKind::Collective;
  t.category = Category::Communication;
  t.collective = static_cast<uint32_t>(collectives_.size() - 1);
  t.step = step;
  t.label = label;
  return add(t);
}

void TaskGraph::depend(TaskId before, TaskId after) {
  assert(before < tasks_.size() && after < tasks_.size() && before != after);
  edges_.emplace_back(before, after);
}

uint32_t TaskGraph::label(const std::string& name) {
  auto it = std::find(labels_.begin(), labels_.end(), name);
  if (it != labels_.end()) return static_cast<uint32_t>(it - labels_.begin());
  labels_.push_back(name);
  return static_cast<uint32_t>(labels_.size() - 1);
}

TaskId TaskGraph::append(const TaskGraph& other, Time start) {
  const TaskId offset = static_cast<TaskId>(tasks_.size());
  const uint32_t resources = resources_, collectives = static_cast<uint32_t>(collectives_.size());
  int32_t workers = 0;  // this graph's workers are 0..workers-1
  for (const Task& t : tasks_) workers = std::max(workers, t.worker + 1);
  std::vector<uint32_t> labels(other.labels_.size());
  for (size_t i = 0; i < other.labels_.size(); ++i) labels[i] = label(other.labels_[i]);
  for (Task t : other.tasks_) {
    if (t.resource != kNoResource) t.resource += resources;
    if (t.kind == TaskKind::Collective) t.collective += collectives;
    t.label = labels[t.label];
    if (t.worker >= 0) t.worker += workers;
    tasks_.push_back(t);
  }
  for (uint32_t r = 0; r < other.resources_; ++r) add_resource(other.capacity_[r]);
  for (CollectiveTask c : other.collectives_) {
    for (TaskId& l : c.launch)
      if (l != kNoTask) l += offset;
    c.first_worker += workers;
    collectives_.push_back(std::move(c));
  }
  for (auto [a, b] : other.edges_) edges_.emplace_back(a + offset, b + offset);
  if (start > Time()) {
    std::vector<bool> has_pred(other.tasks_.size(), false);
    for (auto [a, b] : other.edges_) has_pred[b] = true;
    TaskId delay = add_delay(start, Category::Other, -1, -1, label("job start"));
    for (TaskId t = 0; t < other.tasks_.size(); ++t)
      if (!has_pred[t]) depend(delay, offset + t);
  }
  return offset;
}

void TaskGraph::finalize() {
  size_t n = tasks_.size();
  succ_begin_.assign(n + 1, 0);
  preds_.assign(n, 0);
  for (auto [a, b] : edges_) {
    ++succ_begin_[a + 1];
    ++preds_[b];
  }
  for (size_t i = 0; i < n; ++i) succ_begin_[i + 1] += succ_begin_[i];
  succ_.resize(edges_.size());
  std::vector<uint32_t> fill(succ_begin_.begin(), succ_begin_.end() - 1);
  for (auto [a, b] : edges_) succ_[fill[a]++] = b;
  edges_.clear();
  edges_.shrink_to_fit();
}

}  // namespace ddlsim
