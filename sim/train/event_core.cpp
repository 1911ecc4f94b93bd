#include "sim/train/event_core.hpp"

namespace ddlsim {

TaskScheduler::TaskScheduler(const TaskGraph& graph)
    : graph_(graph),
      waiting_(graph.size()),
      in_use_(graph.resource_count()),
      queue_(graph.resource_count()) {}

bool TaskScheduler::acquire(TaskId t) {
  uint32_t res = graph_.task(t).resource;
  if (res == kNoResource) return true;
  if (in_use_[res] >= graph_.resource_capacity(res)) {
    queue_[res].push(t);
    return false;
  }
  ++in_use_[res];
  return true;
}

TaskId TaskScheduler::release(TaskId t) {
  uint32_t res = graph_.task(t).resource;
  if (res == kNoResource) return kNone;
  if (queue_[res].empty()) {
    --in_use_[res];
    return kNone;
  }
  TaskId next = queue_[res].front();
  queue_[res].pop();
  return next;
}

}  // namespace ddlsim
