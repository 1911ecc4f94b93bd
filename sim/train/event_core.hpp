#pragma once
// The event and resource core of the Engine: an event queue ordered by (time, insertion order), and task
// readiness (unfinished predecessors per task) with exclusive resources that run their tasks one at a time,
// in the order they became ready (FIFO).
#include <cstdint>
#include <queue>
#include <vector>

#include "sim/core/units.hpp"
#include "sim/train/task_graph.hpp"

namespace ddlsim {

struct EngineStats {
  uint64_t events = 0;                // events handled by the queue
  uint64_t flows = 0;                 // flows run on the flow network
  uint64_t messages = 0;              // transfers simulated (flow model + fast path)
  uint64_t fast_messages = 0;         // of which by the fast path
  uint64_t fast_collectives = 0;      // collectives done by the fast path
  uint64_t slow_collectives = 0;      // collectives done by the flow model
  uint64_t replayed_collectives = 0;  // of those, replays of a recorded flow-model run of the same collective
  uint64_t skipped_rounds = 0;        // rounds of flow-model runs stood for by a repeated period (not run)
};

enum class EventKind : uint8_t { TaskEnd, FlowStart, MessageDone, RoundDone, DirectDone };

struct Event {
  Time time;
  uint64_t seq;
  EventKind kind;
  uint32_t a, b;
  bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
};

// Events at one time pop in the order they were scheduled.
class EventQueue {
 public:
  void schedule(Time t, EventKind kind, uint32_t a, uint32_t b = 0) {
    queue_.push(Event{t, seq_++, kind, a, b});
  }
  bool empty() const { return queue_.empty(); }
  Time next_time() const { return queue_.empty() ? Time::max() : queue_.top().time; }
  Event pop() {
    Event e = queue_.top();
    queue_.pop();
    return e;
  }

 private:
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  uint64_t seq_ = 0;
};

// Which tasks may start: a task is ready when its last predecessor ends, and starts when its resource (if
// any) has a free slot (exclusive resources have one; a host CPU has one per core); a resource's waiting
// tasks start in the order they became ready.
class TaskScheduler {
 public:
  static constexpr TaskId kNone = UINT32_MAX;
  explicit TaskScheduler(const TaskGraph& graph);
  // Sets every task's count of unfinished predecessors; calls start(t) for the tasks without any, in id
  // order (through ready()).
  template <class Start>
  void begin(Start&& start) {
    for (TaskId t = 0; t < graph_.size(); ++t) waiting_[t] = graph_.predecessor_count(t);
    for (TaskId t = 0; t < graph_.size(); ++t)
      if (waiting_[t] == 0 && acquire(t)) start(t);
  }
  // A task became ready: true when it may start now (its resource was free and is now taken), false when it
  // waits in its resource's queue.
  bool acquire(TaskId t);
  // Task t ended: frees its resource, or hands it to the next waiting task, which is returned (kNone if
  // none). The caller starts it before calling complete().
  TaskId release(TaskId t);
  // Task t ended: counts it off its successors and calls start(s) for each that became ready and may start.
  template <class Start>
  void complete(TaskId t, Start&& start) {
    auto [b, e] = graph_.successors(t);
    for (const TaskId* s = b; s != e; ++s)
      if (--waiting_[*s] == 0 && acquire(*s)) start(*s);
  }

 private:
  const TaskGraph& graph_;
  std::vector<uint32_t> waiting_;  // unfinished predecessors per task
  std::vector<uint32_t> in_use_;   // tasks running, per resource
  std::vector<std::queue<TaskId>> queue_;
};

}  // namespace ddlsim
