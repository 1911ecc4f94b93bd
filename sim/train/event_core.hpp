#pragma once
// The event and resource core of the Engine: an event queue ordered by (time, insertion order), and task
// readiness (unfinished predecessors per task) with exclusive resources that run their tasks one at a time,
// in the order they became ready (FIFO).
#include <array>
#include <cstdint>
#include <queue>
#include <vector>

#include "sim/core/units.hpp"
#include "sim/train/task_graph.hpp"

namespace ddlsim {

struct EngineStats {
  uint64_t events = 0;                // events handled by the queue
  uint64_t flows = 0;                 // flows run on the flow network
  uint64_t region_solves = 0;         // max-min re-solves of a region of the flow network's flows
  uint64_t region_flows = 0;          // the flows those re-solves took, summed
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

// Events at one time pop in the order they were scheduled. Most events of a long run are scheduled a fixed
// delay after the instant they are scheduled at (a protocol's step latency, a message of one size at one
// rate, a reduction): such events come in time order, so each of the few most recent delays keeps its own
// FIFO lane, and only the others go to the heap. pop() takes the least (time, insertion order) of the heap's
// top and the lanes' fronts, the same order the heap alone gives.
class EventQueue {
 public:
  void schedule(Time t, EventKind kind, uint32_t a, uint32_t b = 0) {
    Event e{t, seq_++, kind, a, b};
    const int64_t delay = t.picoseconds() - now_;
    for (Lane& lane : lanes_)
      if (lane.delay == delay) {
        lane.events.push_back(e);  // its times do not fall: now_ never does
        return;
      }
    for (Lane& lane : lanes_)
      if (lane.events.empty()) {  // an empty lane takes the new delay
        lane.delay = delay;
        lane.events.push_back(e);
        return;
      }
    heap_.push(e);
  }
  bool empty() const { return next() == nullptr; }
  Time next_time() const {
    const Event* e = next();
    return e ? e->time : Time::max();
  }
  Event pop() {
    const Event* e = next();
    Event out = *e;
    if (!heap_.empty() && e == &heap_.top()) {
      heap_.pop();
    } else {
      for (Lane& lane : lanes_)
        if (!lane.events.empty() && &lane.events[lane.head] == e) {
          lane.pop_front();
          break;
        }
    }
    return out;
  }
  // The engine's current instant (it never falls): delays are taken from it.
  void advance(Time now) { now_ = now.picoseconds(); }

 private:
  struct Lane {
    int64_t delay = -1;
    std::vector<Event> events;
    size_t head = 0;  // the front; events is empty when no event is left
    void pop_front() {
      if (++head == events.size()) {
        events.clear();
        head = 0;
      } else if (head >= 4096 && 2 * head >= events.size()) {  // keep it within twice what it holds
        events.erase(events.begin(), events.begin() + static_cast<std::ptrdiff_t>(head));
        head = 0;
      }
    }
  };
  const Event* next() const {
    const Event* best = heap_.empty() ? nullptr : &heap_.top();
    for (const Lane& lane : lanes_)
      if (!lane.events.empty() && (!best || *best > lane.events[lane.head])) best = &lane.events[lane.head];
    return best;
  }
  std::priority_queue<Event, std::vector<Event>, std::greater<>> heap_;
  std::array<Lane, 6> lanes_;
  int64_t now_ = 0;  // advance()
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
