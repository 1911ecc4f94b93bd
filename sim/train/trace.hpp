#pragma once
// Perfetto / Chrome trace-event JSON of a simulated run: one track per worker (compute, loader,
// communication), one for collectives, one per parameter-server host; open in ui.perfetto.dev or
// chrome://tracing.
#include <string>
#include <vector>

#include "sim/net/topology.hpp"
#include "sim/train/engine.hpp"
#include "sim/train/task_graph.hpp"

namespace ddlsim {

// Writes the tasks of the first `max_workers` workers plus every collective, and with `topo` a "servers"
// process: a thread per host (the first `max_workers`) that does work placed on it (Task::dst of a delay:
// parameter servers' sums, updates and transport work), named after the host. Throws InputError if the file
// cannot be written.
void write_perfetto_trace(const std::string& path, const TaskGraph& graph,
                          const std::vector<TaskRecord>& records, int max_workers,
                          const Topology* topo = nullptr);

// One process per job of a run of several (tasks [first_task, end_task) of the graph, its workers from
// first_worker on): a thread per worker (the first `max_workers`) and one for its collectives and other
// tasks of no worker.
struct TraceProcess {
  std::string name;
  TaskId first_task = 0, end_task = 0;
  int32_t first_worker = 0;
};
void write_perfetto_trace(const std::string& path, const TaskGraph& graph,
                          const std::vector<TaskRecord>& records, const std::vector<TraceProcess>& processes,
                          int max_workers);

}  // namespace ddlsim
