#pragma once
// Executes a TaskGraph on a topology. A thin composition of its parts:
//   event_core           the event queue (time, insertion order) and task readiness with exclusive resources
//   transport            messages on the flow network (route latency + α, multipath, per-flow bounds)
//   collective_executor  collectives: round plans message by message on the flow model, or the max-plus fast
//                        path (fast_path) when a collective is isolated and starts on an idle network and
//                        the standalone rates of its messages on a link never sum to more than the link's
//                        capacity (exactly when the flow model gives each message its standalone rate)
//   device_model         compute slowed while collective kernels are resident on its GPU
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/net/comm_model.hpp"
#include "sim/net/flow_network.hpp"
#include "sim/net/topology.hpp"
#include "sim/train/collective_executor.hpp"
#include "sim/train/device_model.hpp"
#include "sim/train/event_core.hpp"
#include "sim/train/task_graph.hpp"
#include "sim/train/transport.hpp"

namespace ddlsim {

struct EngineOptions {
  bool fast_collectives = true;
};

struct TaskRecord {
  Time start = Time::max();
  Time end = Time::max();
};

class Engine {
 public:
  Engine(const Topology& topo, const CommModel& comm, const TaskGraph& graph, EngineOptions options = {});
  ~Engine();
  // Runs the graph to completion; returns the time the last task ended.
  Time run();
  // Called now and then while run() runs (every 4096 instants of simulated time) with the share of the
  // graph's tasks that have ended.
  void on_progress(std::function<void(double)> f) { progress_ = std::move(f); }
  const std::vector<TaskRecord>& records() const { return records_; }
  const EngineStats& stats() const { return stats_; }
  // What every directed link carried (flow model and fast path), in link id order.
  std::vector<LinkUsage> link_usage() const;

 private:
  void handle(const Event& e);
  void start(TaskId t);
  void finish(TaskId t);
  void start_transfer(TaskId t);
  void flow_done(uint64_t tag);

  const TaskGraph& graph_;
  EngineOptions options_;
  EngineStats stats_;
  Time now_;
  std::vector<TaskRecord> records_;
  std::vector<uint8_t> parts_left_;  // flows left per transfer task
  size_t ended_ = 0;                 // tasks that have ended
  std::function<void(double)> progress_;
  EventQueue events_;
  TaskScheduler tasks_;
  Transport transport_;
  CollectiveExecutor collectives_;
  DeviceModel device_;
};

// One of the most-loaded links of a run, for reports.
struct LinkLoad {
  std::string link;       // link_name
  double bytes = 0;       // carried over the whole run
  double busy_share = 0;  // time with at least one flow on it / the run's length
  uint32_t peak_flows = 0;
  LinkId id = 0;
};
// The `n` links that carried the most bytes (ties by link id), over a run of length `makespan`.
std::vector<LinkLoad> top_links(const Engine& engine, const Topology& topo, Time makespan, size_t n);

// A directed link named by its two vertices, as `ddlsim describe` prints routes: "n0.gpu0 > n0.pcie0".
std::string link_name(const Topology& topo, LinkId l);

}  // namespace ddlsim
