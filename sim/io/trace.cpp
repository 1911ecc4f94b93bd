#include "sim/io/trace.hpp"

#include <fmt/format.h>
#include <fstream>

#include "sim/core/error.hpp"

namespace ddlsim {

void write_perfetto_trace(const std::string& path, const TaskGraph& graph,
                          const std::vector<TaskRecord>& records, int max_workers) {
  std::ofstream out(path);
  if (!out) throw InputError({path, 0, 0}, "--trace", "cannot write the trace file");
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  auto emit = [&](const std::string& s) {
    out << (first ? "" : ",\n") << s;
    first = false;
  };
  emit(R"({"name":"process_name","ph":"M","pid":0,"args":{"name":"collectives"}})");
  for (int w = 0; w < max_workers; ++w)
    emit(fmt::format(R"({{"name":"process_name","ph":"M","pid":{},"args":{{"name":"worker {}"}}}})", w + 1,
                     w));
  for (TaskId t = 0; t < graph.size(); ++t) {
    const Task& task = graph.task(t);
    if (task.worker >= max_workers) continue;
    if (records[t].end == records[t].start && task.kind != TaskKind::Collective) continue;
    int pid = task.worker < 0 ? 0 : task.worker + 1;
    const char* track = task.category == Category::Compute         ? "gpu"
                        : task.category == Category::Io            ? "loader"
                        : task.category == Category::Communication ? "network"
                                                                   : "other";
    int tid = static_cast<int>(task.category);
    emit(fmt::format(
        R"({{"name":"{}","cat":"{}","ph":"X","pid":{},"tid":{},"ts":{:.3f},"dur":{:.3f},"args":{{"step":{}}}}})",
        graph.labels()[task.label], track, pid, tid, records[t].start.seconds() * 1e6,
        (records[t].end - records[t].start).seconds() * 1e6, task.step));
  }
  out << "\n]}\n";
}

}  // namespace ddlsim
