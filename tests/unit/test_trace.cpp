// The Perfetto trace is JSON that parses: of a real run, and with task names that need escaping.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "sim/train/trace.hpp"
#include "tests/support/cli.hpp"

namespace ddlsim {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("ddlsim-trace-" + std::to_string(getpid()) + "-" + name))
      .string();
}

nlohmann::json parse_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());  // throws on invalid JSON
}

// The trace `ddlsim run` writes of a shipped scenario (a path under the source tree) with `options`.
nlohmann::json run_trace(const std::string& scenario, const std::string& options) {
  std::string path = temp_path("run.json");
  auto o = ddlsim_test::run_ddlsim("run '" + std::string(DDLSIM_SOURCE_DIR) + "/" + scenario + "' " +
                                   options + " --format csv --trace '" + path + "'");
  EXPECT_EQ(o.status, 0) << o.out;
  nlohmann::json doc = parse_file(path);
  std::filesystem::remove(path);
  return doc;
}

TEST(Trace, RunWritesParsableJson) {
  // One node of 4 GPUs: a track (process) for each of its 4 workers, and for its collectives.
  nlohmann::json doc = run_trace("scenarios/horovod-mnist.yaml", "--set cluster.nodes=1");
  EXPECT_EQ(doc["displayTimeUnit"], "ms");
  ASSERT_TRUE(doc["traceEvents"].is_array());
  size_t complete = 0, processes = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["name"] == "process_name") ++processes;
    if (e["ph"] != "X") continue;
    ++complete;
    EXPECT_TRUE(e["ts"].is_number() && e["dur"].is_number()) << e.dump();
    EXPECT_GE(e["dur"].get<double>(), 0) << e.dump();
  }
  EXPECT_GT(complete, 0u);
  EXPECT_EQ(processes, 1u + 4u);
}

TEST(Trace, CollectivesNameTheirBytesAndProtocol) {
  // JUWELS Booster runs NCCL's protocols: every allreduce in the trace of a 2-node DDP run carries its bytes
  // per rank and the protocol the tuner picked.
  nlohmann::json doc = run_trace("scenarios/aach2023/resnet50-dali-cpu.yaml",
                                 "--set 'cluster.nodes=[2]' --set 'strategies=[ddp]'");
  size_t collectives = 0;
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "X" && e["name"] == "allreduce") {
      ++collectives;
      EXPECT_GT(e["args"]["bytes"].get<double>(), 0) << e.dump();
      const std::string protocol = e["args"]["protocol"].get<std::string>();
      EXPECT_TRUE(protocol == "LL" || protocol == "LL128" || protocol == "Simple") << e.dump();
    }
  EXPECT_GT(collectives, 0u);
}

TEST(Trace, ParameterServerHostsGetTracksOfTheirOwn) {
  // Two colocated servers on two nodes (server j on node j's host CPU), over the costly grpc transport: the
  // "servers" process has one thread per host, named after it, carrying that host's sums, updates and
  // transport work (host receive / host send), and no worker track carries them.
  nlohmann::json doc = run_trace("scenarios/juwels-ps-vs-allreduce.yaml",
                                 "--set 'cluster.nodes=[2]' --set 'strategies=[{name: ps, servers: 2, "
                                 "placement: colocated, transport: grpc}]'");
  int servers_pid = -1;
  std::set<std::string> threads, names;
  for (const auto& e : doc["traceEvents"])
    if (e["name"] == "process_name" && e["args"]["name"] == "servers") servers_pid = e["pid"];
  ASSERT_GT(servers_pid, 0);
  for (const auto& e : doc["traceEvents"]) {
    if (e["pid"] != servers_pid) {
      if (e["ph"] == "X") {
        EXPECT_NE(e["name"], "aggregate") << e.dump();
      }
      continue;
    }
    if (e["name"] == "thread_name") threads.insert(e["args"]["name"].get<std::string>());
    if (e["ph"] == "X") names.insert(e["name"].get<std::string>());
  }
  EXPECT_EQ(threads, (std::set<std::string>{"n0.cpu", "n1.cpu"}));
  EXPECT_EQ(names, (std::set<std::string>{"aggregate", "server update", "host receive", "host send"}));
}

TEST(Trace, NamesWithQuotesAndBackslashesAreEscaped) {
  TaskGraph g;
  const std::string name = "say \"hi\" to C:\\path\ttab";
  g.add_delay(Time::us(1.5), Category::Io, 0, 0, g.label(name));
  g.add_delay(Time::us(2), Category::Compute, 0, 0, g.label("forward"));
  std::vector<TaskRecord> records{{Time::us(0), Time::us(1.5)}, {Time::us(1.5), Time::us(3.5)}};
  std::string path = temp_path("escape.json");
  write_perfetto_trace(path, g, records, 1);
  nlohmann::json doc = parse_file(path);
  std::filesystem::remove(path);
  bool found = false;
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "X" && e["name"] == name) {
      found = true;
      EXPECT_EQ(e["cat"], "loader");
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 0);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 1.5);
      EXPECT_EQ(e["pid"], 1);
      EXPECT_EQ(e["args"]["step"], 0);
    }
  EXPECT_TRUE(found) << doc.dump();
}

}  // namespace
}  // namespace ddlsim
