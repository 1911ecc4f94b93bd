// Bad inputs through the real CLI: exit status 2 and exactly one line on stderr naming the file, the
// line:column and the key path (the convention `file:line:col: key.path: message`). Usage errors exit
// 2, --help 0.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <filesystem>
#include <fstream>

#include <array>
#include <cstdio>
#include <regex>
#include <string>

#include "tests/support/cli.hpp"

namespace {

using Outcome = ddlsim_test::CliOutcome;

// Runs build/ddlsim with `args`, capturing stderr (stdout discarded) or stdout (stderr discarded).
Outcome ddlsim(const std::string& args, bool capture_stderr = true) {
  using ddlsim_test::Capture;
  return ddlsim_test::run_ddlsim(args, capture_stderr ? Capture::Stderr : Capture::Stdout);
}

std::string data(const std::string& file) {
  return std::string(DDLSIM_SOURCE_DIR) + "/tests/bad_inputs/data/" + file;
}

size_t lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n + (!s.empty() && s.back() != '\n');
}

struct Expected {
  std::string file;
  int line;              // 1-based line of the offending key or value
  std::string key_path;  // e.g. cluster.network.link.bandwidth
  std::string fragment;  // a piece of the message
};

// stderr must be one line: `ddlsim: <path>/<file>:<line>:<col>: <key path>: <message>`.
void expect_one_line_error(const Expected& e) {
  SCOPED_TRACE(e.file);
  Outcome o = ddlsim("run '" + data(e.file) + "'");
  EXPECT_EQ(o.status, 2) << o.out;
  EXPECT_EQ(lines(o.out), 1u) << o.out;
  std::smatch m;
  std::regex located(std::regex_replace(e.file, std::regex(R"([.\[\]])"), R"(\$&)") + R"(:(\d+):(\d+): )");
  ASSERT_TRUE(std::regex_search(o.out, m, located)) << "no file:line:col in: " << o.out;
  EXPECT_EQ(std::stoi(m[1]), e.line) << o.out;
  EXPECT_GE(std::stoi(m[2]), 1) << o.out;
  if (!e.key_path.empty()) {
    EXPECT_NE(o.out.find(": " + e.key_path + ": "), std::string::npos) << o.out;
  }
  EXPECT_NE(o.out.find(e.fragment), std::string::npos) << o.out;
}

TEST(CliErrors, MissingFile) {
  // Nothing to point into: the file name and the reason, on one line.
  Outcome o = ddlsim("run '" + data("no_such_file.yaml") + "'");
  EXPECT_EQ(o.status, 2);
  EXPECT_EQ(lines(o.out), 1u) << o.out;
  EXPECT_NE(o.out.find("no_such_file.yaml"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("cannot open"), std::string::npos) << o.out;
}

TEST(CliErrors, YamlSyntaxError) {
  // The flow map opened on line 7 is never closed; yaml-cpp notices at the next line's key.
  SCOPED_TRACE("syntax_error.yaml");
  Outcome o = ddlsim("run '" + data("syntax_error.yaml") + "'");
  EXPECT_EQ(o.status, 2);
  EXPECT_EQ(lines(o.out), 1u) << o.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(o.out, m, std::regex(R"(syntax_error\.yaml:(\d+):(\d+): )"))) << o.out;
  EXPECT_GE(std::stoi(m[1]), 7) << o.out;
  EXPECT_NE(o.out.find("syntax"), std::string::npos) << o.out;
}

TEST(CliErrors, UnknownKeySuggestsTheCloseOne) {
  expect_one_line_error(
      {"unknown_key.yaml", 9, "cluster.network.link.bandwdith", "did you mean \"bandwidth\""});
}

TEST(CliErrors, NegativeBandwidth) {
  expect_one_line_error({"negative_bandwidth.yaml", 9, "cluster.network.link.bandwidth", "positive"});
}

TEST(CliErrors, UnitlessBandwidth) {
  expect_one_line_error({"unitless_bandwidth.yaml", 10, "cluster.network.link.bandwidth", "unit"});
}

TEST(CliErrors, DragonflyThatCannotConnectItsGroups) {
  expect_one_line_error(
      {"dragonfly_disconnected.yaml", 12, "cluster.network.global_links_per_router", "global"});
}

TEST(CliErrors, UnknownStrategy) {
  expect_one_line_error({"unknown_strategy.yaml", 10, "strategies[1]", "butterfly"});
}

TEST(CliErrors, InterNodeAlgorithmWithoutHierarchical) {
  // inter_node picks the allreduce a hierarchical plan runs between nodes; on a flat ring it means nothing.
  expect_one_line_error({"inter_node_on_ring.yaml", 7, "strategies[1].inter_node", "hierarchical"});
}

TEST(CliErrors, OverrideWithBadValueNamesTheFlag) {
  // --set values are checked like file values; there is no line, but the error names the key.
  Outcome o = ddlsim("run '" + std::string(DDLSIM_SOURCE_DIR) +
                     "/scenarios/star-ps-vs-ring.yaml' --set cluster.network.link.bandwidth=25");
  EXPECT_EQ(o.status, 2);
  EXPECT_EQ(lines(o.out), 1u) << o.out;
  EXPECT_NE(o.out.find("cluster.network.link.bandwidth"), std::string::npos) << o.out;
  // The value came from --set: the error names "--set", not a position in the file (a grafted node has no
  // line of its own; it used to be rendered as file:1:1).
  EXPECT_EQ(o.out.find("star-ps-vs-ring.yaml:1:1"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("--set"), std::string::npos) << o.out;
}

TEST(CliErrors, NodeCountsFromTheCommandLineAreCheckedLikeTheFile) {
  // --nodes goes through the same check as cluster.nodes: 1..1,000,000 and at most the system's max_nodes
  // (JUWELS Booster: 936). Before, sweep --nodes 1000000000 ran out of memory ("internal error").
  const std::string dir = DDLSIM_SOURCE_DIR;
  for (const std::string& cmd :
       {fmt::format("sweep '{}/scenarios/star-ps-vs-ring.yaml' --nodes 1000000000", dir),
        fmt::format("crossover '{}/scenarios/star-ps-vs-ring.yaml' --nodes 2000000", dir),
        fmt::format("describe '{}/topologies/juwels-booster.yaml' --nodes 937", dir)}) {
    Outcome o = ddlsim(cmd);
    EXPECT_EQ(o.status, 2) << cmd;
    EXPECT_EQ(lines(o.out), 1u) << o.out;
    EXPECT_EQ(o.out.rfind("ddlsim: --nodes: ", 0), 0u) << o.out;
  }
}

TEST(CliUsage, NoArgumentsIsAUsageError) {
  Outcome o = ddlsim("");
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.out.find("usage"), std::string::npos) << o.out;  // the usage goes to stderr
}

TEST(CliUsage, HelpExitsZero) {
  Outcome o = ddlsim("--help", false);
  EXPECT_EQ(o.status, 0);
  EXPECT_NE(o.out.find("usage"), std::string::npos) << o.out;
}

TEST(CliUsage, RunHelpExitsZero) {
  Outcome o = ddlsim("run --help", false);
  EXPECT_EQ(o.status, 0);
  EXPECT_NE(o.out.find("usage: ddlsim run"), std::string::npos) << o.out;
}

TEST(CliUsage, UnknownCommandAndOption) {
  EXPECT_EQ(ddlsim("frobnicate").status, 2);
  Outcome o = ddlsim("run '" + std::string(DDLSIM_SOURCE_DIR) + "/scenarios/star-ps-vs-ring.yaml' --bogus");
  EXPECT_EQ(o.status, 2);
  EXPECT_EQ(lines(o.out), 1u) << o.out;
  EXPECT_EQ(ddlsim("run").status, 2);  // no scenario
}

}  // namespace

// `ddlsim validate` reads a measured CSV: a broken file is one line naming the file and line, exit 2.
TEST(CliErrors, ValidateMeasuredCsvProblems) {
  const std::string scenario = std::string(DDLSIM_SOURCE_DIR) + "/scenarios/aach2023/resnet50-dali-cpu.yaml";
  struct Case {
    const char* file;
    const char* where;
    const char* fragment;
  } cases[] = {
      {"measured_unterminated.csv", "measured_unterminated.csv:2:1: ", "unterminated quoted field"},
      {"measured_bad_number.csv", "measured_bad_number.csv:2:1: gpus/value: ", "expected numbers"},
      {"measured_short_row.csv", "measured_short_row.csv:2:1: ", "expected 7 fields"},
      {"measured_nan.csv", "measured_nan.csv:2:1: value: ", "must be a finite number, got \"nan\""},
      {"measured_inf.csv", "measured_inf.csv:2:1: value: ", "must be a finite number, got \"inf\""},
      {"measured_duplicate_column.csv", "measured_duplicate_column.csv:1:1: value: ",
       "the header names column \"value\" twice (columns 6 and 7)"},
      {"measured_other_model.csv", "measured_other_model.csv:1:1: model/loader: ",
       "no measured rows for the scenario's model resnet50 with loader dali-cpu and a quantity ddlsim "
       "simulates at a whole number of nodes or on part of one (the file's models: vgg16; loaders: dali; 1 "
       "rows)"}};
  for (const Case& c : cases) {
    Outcome o = ddlsim("validate '" + scenario + "' --measured '" + data(c.file) + "'");
    EXPECT_EQ(o.status, 2) << c.file << ": " << o.out;
    EXPECT_EQ(lines(o.out), 1u) << o.out;
    EXPECT_NE(o.out.find(c.where), std::string::npos) << o.out;
    EXPECT_NE(o.out.find(c.fragment), std::string::npos) << o.out;
  }
  // A UTF-8 byte-order mark before the header is not part of the first column's name.
  Outcome bom =
      ddlsim("validate '" + scenario + "' --measured '" + data("measured_bom.csv") + "' --format csv", false);
  EXPECT_EQ(bom.status, 0) << bom.out;
  EXPECT_NE(bom.out.find(",ddp,8,efficiency,=,0.9,"), std::string::npos) << bom.out;
  Outcome missing = ddlsim("validate '" + scenario + "'");
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.out.find("--measured"), std::string::npos) << missing.out;
}

// `ddlsim run SCENARIO --set ASSIGNMENT` must fail with one line containing `expect`, exit status 2.
static void expect_override_error(const std::string& scenario, const std::string& assignment,
                                  const std::string& expect) {
  SCOPED_TRACE(assignment);
  Outcome o = ddlsim("run '" + std::string(DDLSIM_SOURCE_DIR) + "/scenarios/" + scenario + "' --set '" +
                     assignment + "'");
  EXPECT_EQ(o.status, 2) << o.out;
  EXPECT_EQ(lines(o.out), 1u) << o.out;
  EXPECT_NE(o.out.find(expect), std::string::npos) << o.out;
}

TEST(CliErrors, OverrideWithUnknownKeyNamesTheFlag) {
  // A misspelt key given with --set is not in the file: the error names --set and suggests the close key.
  expect_override_error("star-ps-vs-ring.yaml", "cluster.network.lnk=3",
                        "--set: cluster.network.lnk: unknown key (did you mean \"link\"?)");
}

TEST(CliErrors, OverrideIntoListsAndScalarsNamesTheFlag) {
  // --set walks list elements by index and cannot set a key inside a plain value; either mistake, and any
  // error inside a list element that came from --set, is one line naming --set and the key, exit 2.
  const std::string s = "star-ps-vs-ring.yaml";
  expect_override_error(s, "strategies.x=ring",
                        "--set: strategies.x: \"x\" is not an index of the list (it has 7 elements)");
  expect_override_error(s, "strategies.9=ring", "--set: strategies.9: \"9\" is not an index");
  expect_override_error(s, "strategies.0.label=x",
                        "--set: strategies.0.label: \"label\" is inside the value \"ring\"");
  expect_override_error(s, "strategies=[{name: ps, servers: 0}]",
                        "--set: strategies[0].servers: servers must be between 1");
}

TEST(CliErrors, RingChannelsAreChecked) {
  // channels: 1..64 rings, and only for the ring algorithm.
  const std::string s = "juwels-ps-vs-allreduce.yaml";
  expect_override_error(s, "strategies=[{name: ring, channels: 0}]",
                        "--set: strategies[0].channels: channels must be between 1 and 64");
  expect_override_error(s, "strategies=[{name: ddp, algorithm: hierarchical, channels: 2}]",
                        "--set: strategies[0].channels: channels apply to the ring algorithm only");
}

TEST(CliErrors, HostTransportsAndCoresAreChecked) {
  // A PS strategy's transport must be one the cluster's comm model names; a transport's per-byte rate and a
  // host's cores must be positive; server_cores describe a dedicated host only.
  const std::string s = "juwels-ps-vs-allreduce.yaml";
  expect_override_error(
      s, "strategies=[{name: ps, transport: grcp}]",
      "--set: strategies[0].transport: unknown transport \"grcp\" (did you mean \"grpc\"? grpc, ideal,");
  expect_override_error(s, "cluster.comm={transports: {tcp: {overhead: 10us, cpu_rate: 0GB/s}}}",
                        "--set: cluster.comm.transports.tcp.cpu_rate: bandwidth \"0GB/s\" must be positive");
  expect_override_error(s, "cluster.comm={transports: {tcp: {overhead: 10}}}",
                        "--set: cluster.comm.transports.tcp.overhead:");
  expect_override_error(s, "cluster.host_cores=0", "--set: cluster.host_cores: host_cores must be between 1");
  expect_override_error(s, "strategies[0].servers=2",
                        "--set: strategies[0].servers: list elements are addressed by a dotted index: --set "
                        "strategies.0.servers=...");
  expect_override_error(s, "cluster.comm={goodput_inter: 1.5}",
                        "--set: cluster.comm.goodput_inter: goodput_inter must be in (0, 1]");
  expect_override_error(s, "strategies=[{name: ps, placement: colocated, server_cores: 4}]",
                        "--set: strategies[0].server_cores: server_cores are a dedicated server host's");
}

TEST(CliErrors, EmptyAndNonPositiveSizesAreRejected) {
  // Each of these used to run and print a silently wrong result (or nothing at all, exit 0).
  const std::string s = "horovod-mnist.yaml";
  expect_override_error(s, "cluster.nodes=[]", "--set: cluster.nodes: list at least one node count");
  expect_override_error(s, "workload.dataset_samples=-5",
                        "--set: workload.dataset_samples: dataset_samples must be at least 1");
  expect_override_error(s, "strategies=[{name: ddp, bucket_size: 0B}]",
                        "--set: strategies[0].bucket_size: bucket_size must be at least 1 byte");
  expect_override_error(s, "strategies=[{name: ps, chunk_size: 0.5B}]",
                        "--set: strategies[0].chunk_size: chunk_size must be at least 1 byte");
}

TEST(CliErrors, DuplicateKeysAndSecondDocumentsAreErrors) {
  // yaml-cpp keeps the first of two equal keys and reads only the first document: either would silently
  // drop what the user wrote. Both are one located line, exit 2.
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / fmt::format("ddlsim-yaml-{}", getpid());
  fs::create_directories(dir);
  std::ofstream(dir / "dup.yaml") << "name: a\ncluster: {nodes: 1}\nname: b\n";
  std::ofstream(dir / "two.yaml") << "name: a\n---\nname: b\n";
  Outcome dup = ddlsim("run '" + (dir / "dup.yaml").string() + "'");
  EXPECT_EQ(dup.status, 2);
  EXPECT_EQ(lines(dup.out), 1u) << dup.out;
  EXPECT_NE(dup.out.find("dup.yaml:3:1: name: duplicate key"), std::string::npos) << dup.out;
  Outcome two = ddlsim("run '" + (dir / "two.yaml").string() + "'");
  EXPECT_EQ(two.status, 2);
  EXPECT_NE(two.out.find("two.yaml:3:1: a second YAML document"), std::string::npos) << two.out;
  fs::remove_all(dir);
}

TEST(CliErrors, OutputFilesFailLoudlyAndNeverHalfWritten) {
  // --trace to a full device or into a missing folder is exit 1 naming the path (the folder is checked
  // before the run); a written trace replaces the old file whole (temporary file, renamed): no temporary
  // file is left behind.
  const std::string s =
      fmt::format("run '{}/scenarios/horovod-mnist.yaml' --set 'cluster.nodes=[1]'", DDLSIM_SOURCE_DIR);
  Outcome full = ddlsim(s + " --trace /dev/full");
  EXPECT_EQ(full.status, 1) << full.out;
  EXPECT_NE(full.out.find("cannot write /dev/full"), std::string::npos) << full.out;
  Outcome missing = ddlsim(s + " --trace /nonexistent-ddlsim/x.json");
  EXPECT_EQ(missing.status, 1) << missing.out;
  EXPECT_NE(missing.out.find("no folder /nonexistent-ddlsim"), std::string::npos) << missing.out;
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / fmt::format("ddlsim-out-{}", getpid());
  fs::create_directories(dir);
  std::ofstream(dir / "t.json") << "old";
  EXPECT_EQ(ddlsim(s + " --trace '" + (dir / "t.json").string() + "'").status, 0);
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1u);
  EXPECT_GT(fs::file_size(dir / "t.json"), 100u);
  fs::remove_all(dir);
  // The standard output on a full device: exit 1 with the message on stderr, not a silent success.
  const std::string to_full = fmt::format("'{}' {} 2>&1 >/dev/full", DDLSIM_BINARY, s);
  FILE* pipe = popen(to_full.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string err;
  std::array<char, 256> buf;
  for (size_t n; (n = fread(buf.data(), 1, buf.size(), pipe)) > 0;) err.append(buf.data(), n);
  const int raw = pclose(pipe);
  EXPECT_EQ(WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, 1) << err;
  EXPECT_EQ(err, "ddlsim: cannot write the standard output\n");
}

TEST(CliErrors, InputsThatAreNotRegularFilesAreRefused) {
  // Reading /dev/zero as a scenario, measured CSV or calibration input used to grow to gigabytes.
  const std::string s = fmt::format("'{}/scenarios/horovod-mnist.yaml'", DDLSIM_SOURCE_DIR);
  for (const std::string& cmd : {std::string("run /dev/zero"), "validate " + s + " --measured /dev/zero",
                                 std::string("calibrate /dev/zero")}) {
    Outcome o = ddlsim(cmd);
    EXPECT_EQ(o.status, 2) << cmd;
    EXPECT_EQ(lines(o.out), 1u) << o.out;
    EXPECT_NE(o.out.find("/dev/zero: not a regular file"), std::string::npos) << o.out;
  }
}

TEST(CliErrors, StepsBelowOneNamesTheKey) {
  expect_override_error("horovod-mnist.yaml", "workload.warmup_steps=0",
                        "--set: workload.warmup_steps: warmup_steps must be at least 1");
}

TEST(CliErrors, KeysThatWouldBeIgnoredAreRejected) {
  // A key that the chosen configuration does not use would silently do nothing: each is one line naming it.
  expect_override_error("juwels-ps-vs-allreduce.yaml", "strategies=[{name: ps, staleness: 2}]",
                        "--set: strategies[0].staleness: staleness applies to mode: ssp only");
  for (const char* s : {"juwels-ps-vs-allreduce.yaml", "star-ps-vs-ring.yaml"})  // training, collective
    expect_override_error(s, "strategies=[{name: ps, placement: colocated, link: {bandwidth: 10GB/s}}]",
                          "strategies[0].link: link is the cable of a dedicated server");
  expect_override_error("aach2023/resnet50-dali-cpu.yaml", "workload.loader.gpu_cost=1ms",
                        "--set: workload.loader.gpu_cost: gpu_cost applies to the dali-gpu loader only");
  expect_override_error(
      "aach2023/resnet50-dali-cpu.yaml", "cluster.gpus_per_node=8",
      "--set: cluster.gpus_per_node: gpus_per_node must be between 1 and the node's 4 GPUs");
  expect_override_error("horovod-mnist.yaml",
                        "workload.model={architecture: resnet50, layers: [{params: 1, forward_flops: 1}]}",
                        "workload.model.layers: give architecture or layers, not both");
}
