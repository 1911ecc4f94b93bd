#include "sim/train/trace.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "sim/core/error.hpp"
#include "sim/core/output_file.hpp"

namespace ddlsim {

namespace {

// A task's arguments in the trace: its step; a collective also its bytes per rank and, when the library
// picked one, its protocol (NCCL's LL, LL128 or Simple).
nlohmann::ordered_json task_args(const TaskGraph& graph, const Task& task) {
  nlohmann::ordered_json args = {{"step", task.step}};
  if (task.kind == TaskKind::Collective) {
    const CollectivePlan& plan = *graph.collectives()[task.collective].plan;
    args["bytes"] = plan.bytes();
    if (plan.protocol().on()) args["protocol"] = plan.protocol().name;
  }
  return args;
}

}  // namespace

void write_perfetto_trace(const std::string& path, const TaskGraph& graph,
                          const std::vector<TaskRecord>& records, int max_workers, const Topology* topo) {
  using Json = nlohmann::ordered_json;
  Json events = Json::array();
  auto process_name = [&](int pid, const std::string& name) {
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", name}}}});
  };
  process_name(0, "collectives");
  int workers = 0;  // a track for each worker the graph has, up to max_workers
  for (TaskId t = 0; t < graph.size(); ++t) workers = std::max(workers, graph.task(t).worker + 1);
  for (int w = 0; w < std::min(workers, max_workers); ++w) process_name(w + 1, "worker " + std::to_string(w));
  // Microseconds to the nanosecond, as the trace viewers show them.
  auto micros = [](Time t) { return std::round(t.seconds() * 1e9) / 1e3; };
  // Hosts doing placed work get threads of the "servers" process (pid max_workers + 1) in order of first use.
  const int servers_pid = max_workers + 1;
  std::map<VertexId, int> host_thread;
  for (TaskId t = 0; t < graph.size(); ++t) {
    const Task& task = graph.task(t);
    if (records[t].end == records[t].start && task.kind != TaskKind::Collective) continue;
    if (topo && task.kind == TaskKind::Delay && task.dst != kNoVertex) {
      auto [it, added] = host_thread.emplace(task.dst, static_cast<int>(host_thread.size()));
      if (it->second >= max_workers) continue;
      if (added) {
        if (it->second == 0) process_name(servers_pid, "servers");
        events.push_back({{"name", "thread_name"},
                          {"ph", "M"},
                          {"pid", servers_pid},
                          {"tid", it->second},
                          {"args", {{"name", topo->vertex(task.dst).name}}}});
      }
      events.push_back({{"name", graph.labels()[task.label]},
                        {"cat", "server"},
                        {"ph", "X"},
                        {"pid", servers_pid},
                        {"tid", it->second},
                        {"ts", micros(records[t].start)},
                        {"dur", micros(records[t].end - records[t].start)},
                        {"args", {{"step", task.step}, {"worker", task.worker}}}});
      continue;
    }
    if (task.worker >= max_workers) continue;
    int pid = task.worker < 0 ? 0 : task.worker + 1;
    const char* track = task.category == Category::Compute         ? "gpu"
                        : task.category == Category::Io            ? "loader"
                        : task.category == Category::Communication ? "network"
                                                                   : "other";
    events.push_back({{"name", graph.labels()[task.label]},
                      {"cat", track},
                      {"ph", "X"},
                      {"pid", pid},
                      {"tid", static_cast<int>(task.category)},
                      {"ts", micros(records[t].start)},
                      {"dur", micros(records[t].end - records[t].start)},
                      {"args", task_args(graph, task)}});
  }
  Json doc = {{"displayTimeUnit", "ms"}, {"traceEvents", std::move(events)}};
  write_output_file(path, doc.dump() + "\n");
}

void write_perfetto_trace(const std::string& path, const TaskGraph& graph,
                          const std::vector<TaskRecord>& records, const std::vector<TraceProcess>& processes,
                          int max_workers) {
  using Json = nlohmann::ordered_json;
  Json events = Json::array();
  auto micros = [](Time t) { return std::round(t.seconds() * 1e9) / 1e3; };
  for (size_t p = 0; p < processes.size(); ++p) {
    const TraceProcess& proc = processes[p];
    int pid = static_cast<int>(p) + 1;
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", proc.name}}}});
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"tid", 0},
                      {"args", {{"name", "collectives"}}}});
    int32_t workers = 0;
    for (TaskId t = proc.first_task; t < proc.end_task; ++t) {
      const Task& task = graph.task(t);
      int32_t w = task.worker < 0 ? -1 : task.worker - proc.first_worker;
      if (w >= max_workers) continue;
      if (w >= workers) {
        for (int32_t k = workers; k <= w; ++k)
          events.push_back({{"name", "thread_name"},
                            {"ph", "M"},
                            {"pid", pid},
                            {"tid", k + 1},
                            {"args", {{"name", "worker " + std::to_string(k)}}}});
        workers = w + 1;
      }
      if (records[t].end == records[t].start && task.kind != TaskKind::Collective) continue;
      events.push_back({{"name", graph.labels()[task.label]},
                        {"ph", "X"},
                        {"pid", pid},
                        {"tid", w + 1},
                        {"ts", micros(records[t].start)},
                        {"dur", micros(records[t].end - records[t].start)},
                        {"args", task_args(graph, task)}});
    }
  }
  Json doc = {{"displayTimeUnit", "ms"}, {"traceEvents", std::move(events)}};
  write_output_file(path, doc.dump() + "\n");
}

}  // namespace ddlsim
