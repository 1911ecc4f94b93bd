#pragma once
// Executes a TaskGraph on a topology: an event queue (time, insertion order) plus the flow network.
// Collectives run their round plans message by message; when a collective is isolated and starts on an idle
// network, the engine first tries the max-plus fast path (closed recursion over rounds, periodic rounds
// skipped) and keeps its result only if no two of its messages overlap in time on a link, which is exactly
// when the flow model gives each message its full bottleneck rate. Otherwise it falls back to the flow model.
#include <cstdint>
#include <memory>
#include <queue>
#include <unordered_map>
#include <vector>

#include "sim/net/comm_model.hpp"
#include "sim/net/flow_network.hpp"
#include "sim/net/topology.hpp"
#include "sim/train/task_graph.hpp"

namespace ddlsim {

struct EngineOptions {
  bool fast_collectives = true;
};

struct TaskRecord {
  Time start = Time::max();
  Time end = Time::max();
};

struct EngineStats {
  uint64_t events = 0;            // events handled by the queue
  uint64_t flows = 0;             // flows run on the flow network
  uint64_t messages = 0;          // transfers simulated (flow model + fast path)
  uint64_t fast_messages = 0;     // of which by the fast path
  uint64_t fast_collectives = 0;  // collectives done by the fast path
  uint64_t slow_collectives = 0;  // collectives done by the flow model
};

class Engine {
 public:
  Engine(const Topology& topo, const CommModel& comm, const TaskGraph& graph, EngineOptions options = {});
  ~Engine();
  // Runs the graph to completion; returns the time the last task ended.
  Time run();
  const std::vector<TaskRecord>& records() const { return records_; }
  const EngineStats& stats() const { return stats_; }

 private:
  enum class EventKind : uint8_t { TaskEnd, FlowStart, MessageDone, RoundDone };
  struct Event {
    Time time;
    uint64_t seq;
    EventKind kind;
    uint32_t a, b;
    bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };
  struct FlowRequest {
    const std::vector<LinkId>* route;
    double bytes, cap;
    uint64_t tag;
  };
  struct Message {
    uint32_t from, to, round, parts;
  };
  struct CollectiveRun;

  void schedule(Time t, EventKind kind, uint32_t a, uint32_t b = 0);
  void handle(const Event& e);
  void ready(TaskId t);
  void start(TaskId t);
  void finish(TaskId t);
  void start_transfer(TaskId t);
  // Sends `bytes` from endpoint src to dst; the flow completion carries `tag`. Returns parts started.
  uint32_t send(VertexId src, VertexId dst, double bytes, uint64_t tag);
  void flow_done(uint64_t tag);
  void start_collective(TaskId t);
  bool try_fast_collective(TaskId t);
  bool finish_fast_collective(TaskId t, int64_t end_ps, uint64_t messages);
  void enter_round(uint32_t run, uint32_t member, uint32_t round);
  void round_complete(uint32_t run, uint32_t member);
  void message_done(uint32_t run, uint32_t slot);
  Time reduce_delay(const CollectiveRun& run, uint32_t member, uint32_t round) const;
  void message_timing(VertexId src, VertexId dst, double bytes, Time& latency, double& rate);

  const Topology& topo_;
  const CommModel& comm_;
  const TaskGraph& graph_;
  EngineOptions options_;
  FlowNetwork net_;
  Router router_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  uint64_t seq_ = 0;
  Time now_;
  std::vector<TaskRecord> records_;
  std::vector<uint32_t> waiting_;    // unfinished predecessors per task
  std::vector<uint8_t> parts_left_;  // flows left per transfer task
  std::vector<bool> resource_busy_;
  std::vector<std::queue<TaskId>> resource_queue_;
  std::vector<FlowRequest> requests_;
  std::vector<uint32_t> free_requests_;
  std::vector<std::unique_ptr<CollectiveRun>> runs_;
  Time isolated_until_;  // a fast-path collective owns the network until then
  uint32_t pending_flow_starts_ = 0;
  std::vector<int64_t> last_end_;  // fast path: last end time seen per link (ps)
  std::vector<LinkId> touched_;
  std::vector<uint64_t> link_round_;  // fast path: the last round (round_id_) that put a message on each link
  uint64_t round_id_ = 0;
  // Fast-path outcomes: on an idle network the max-plus result depends only on the plan and the members, so a
  // collective repeated every step is evaluated once (failures too, so a plan that needs the flow model is
  // not retried).
  struct FastMemo {
    const CollectivePlan* plan;
    const std::vector<VertexId>* members;
    bool cpu_servers;
    uint32_t first_server;
    bool ok;
    int64_t duration;
    uint64_t messages;
  };
  std::vector<FastMemo> fast_memo_;
  // Collective kernels resident per member (see TaskGraph::collective_compute_slowdown): the members whose
  // kernel a task's end launches, the count resident per member, since when, and the resident time before
  // that; per compute task the member's resident time at its start and whether its end was already extended.
  std::unordered_map<TaskId, std::vector<uint32_t>> launches_;
  std::vector<uint32_t> resident_;
  std::vector<int64_t> resident_since_, resident_total_;
  std::vector<int64_t> resident_at_start_;
  std::vector<bool> extended_;
  int64_t resident_time(
      int32_t worker) const;  // ps during which `worker` had a resident collective, up to now
  EngineStats stats_;
};

}  // namespace ddlsim
