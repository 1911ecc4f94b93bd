// The Perfetto trace is JSON that parses: of a real run, and with task names that need escaping.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
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

TEST(Trace, RunWritesParsableJson) {
  std::string path = temp_path("run.json");
  auto o = ddlsim_test::run_ddlsim(
      "run '" + std::string(DDLSIM_SOURCE_DIR) +
      "/scenarios/horovod-mnist.yaml' --set cluster.nodes=1 --format csv --trace '" + path + "'");
  ASSERT_EQ(o.status, 0) << o.out;
  nlohmann::json doc = parse_file(path);
  std::filesystem::remove(path);
  EXPECT_EQ(doc["displayTimeUnit"], "ms");
  ASSERT_TRUE(doc["traceEvents"].is_array());
  size_t complete = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    ++complete;
    EXPECT_TRUE(e["ts"].is_number() && e["dur"].is_number()) << e.dump();
    EXPECT_GE(e["dur"].get<double>(), 0) << e.dump();
  }
  EXPECT_GT(complete, 0u);
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
