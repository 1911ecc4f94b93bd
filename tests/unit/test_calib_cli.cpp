// `ddlsim calibrate` end to end: the hold-out check on the real kernels sample prints a summary; a bad
// measurement file is one line on stderr naming file and line, exit status 2; --out writes a calibration that
// loads back.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <unistd.h>
#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/calib/calibration.hpp"
#include "sim/config/cluster.hpp"
#include "sim/io/csv.hpp"
#include "sim/io/yaml.hpp"
#include "tests/support/cli.hpp"

namespace ddlsim {
namespace {

using Outcome = ddlsim_test::CliOutcome;

Outcome ddlsim(const std::string& args, bool capture_stderr) {
  return ddlsim_test::run_ddlsim(
      args, capture_stderr ? ddlsim_test::Capture::Stderr : ddlsim_test::Capture::Stdout);
}

std::string source(const std::string& rel) {
  return std::string(DDLSIM_SOURCE_DIR) + "/" + rel;
}

TEST(CalibCli, CheckOnTheKernelsSamplePrintsAHoldOutSummary) {
  std::string np2 = source("scenarios/measured/kernels-np2.json"),
              np4 = source("scenarios/measured/kernels-np4.json");
  if (!std::filesystem::exists(np2)) GTEST_SKIP() << "no kernels sample yet";
  std::string files = "'" + np2 + "'";
  if (std::filesystem::exists(np4)) files += " '" + np4 + "'";
  Outcome o = ddlsim("calibrate " + files + " --check --cores 2", false);
  ASSERT_EQ(o.status, 0) << o.out;
  EXPECT_NE(o.out.find("Fitted comm model"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("summary: held-out: "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("summary: held-out, np=2: "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("explained (median |error| <= 0.25): "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("not explained: "), std::string::npos) << o.out;
  if (std::filesystem::exists(np4)) {
    EXPECT_NE(o.out.find("summary: held-out, np=4: "), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("caveat oversubscribed"), std::string::npos) << o.out;  // 4 ranks on 2 cores
  }
}

TEST(CalibCli, OutWritesACalibrationThatLoads) {
  std::string out = (std::filesystem::temp_directory_path() / "ddlsim-calib-test.yaml").string();
  Outcome o = ddlsim("calibrate '" + source("scenarios/measured/osu-latency-sample.txt") + "' --out '" + out +
                         "' --format json",
                     false);
  ASSERT_EQ(o.status, 0) << o.out;
  EXPECT_NE(o.out.find("\"section\": \"parameter\""), std::string::npos) << o.out;
  CommModel m = load_calibration_file(out);
  EXPECT_GE(m.inter.ranges.size(), 1u);
  EXPECT_GT(m.inter.ranges.back().bandwidth, 0);
  std::filesystem::remove(out);
}

TEST(CalibCli, BadFileIsOneLineAndStatus2) {
  Outcome o = ddlsim("calibrate '" + source("tests/bad_inputs/calib/nccl-truncated-row.txt") + "'", true);
  EXPECT_EQ(o.status, 2);
  EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 1) << o.out;
  EXPECT_NE(o.out.find("nccl-truncated-row.txt:31:"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("expected 13 columns"), std::string::npos) << o.out;
}

TEST(CalibCli, UsageErrors) {
  EXPECT_EQ(ddlsim("calibrate", true).status, 2);
  EXPECT_EQ(ddlsim("calibrate x.json --breakpoint 64", true).status, 2);              // a size needs a unit
  EXPECT_EQ(ddlsim("calibrate x.json --breakpoint 1KiB,2KiB,4KiB", true).status, 2);  // at most three ranges
  EXPECT_EQ(ddlsim("calibrate x.json --breakpoint 4KiB,2KiB", true).status, 2);       // increasing
  {
    auto zero = ddlsim("calibrate x.json --breakpoint 0B", true);  // below every message: was ignored
    EXPECT_EQ(zero.status, 2);
    EXPECT_NE(zero.out.find("a breakpoint must be at least 1 B"), std::string::npos) << zero.out;
  }
  EXPECT_EQ(ddlsim("calibrate --help", false).status, 0);
}

}  // namespace
}  // namespace ddlsim

namespace ddlsim {
namespace {

TEST(CalibCli, FitAlgorithmsHoldsTheOthersOut) {
  // --fit-algorithms pingpong,ring: only those rows are fitted ("fit"); every other algorithm is replayed as
  // held-out with the parameters they gave.
  Outcome o =
      ddlsim("calibrate '" + source("scenarios/measured/kernels-np2-long.json") +
                 "' --check --cores 2 --fit-max-bytes 1GiB --fit-algorithms pingpong,ring --format csv",
             false);
  ASSERT_EQ(o.status, 0) << o.out;
  size_t fit_other = 0, held_ring = 0, held_ps = 0;
  std::istringstream lines(o.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("measurement,", 0) != 0) continue;
    // Columns: section, source, file, line, kind, algorithm, ..., set (11th); no quoted commas in these rows.
    std::vector<std::string> cells;
    std::istringstream row(line);
    for (std::string cell; std::getline(row, cell, ',');) cells.push_back(cell);
    ASSERT_GT(cells.size(), 10u) << line;
    const std::string& algorithm = cells[5];
    bool fit = cells[10] == "fit", held = cells[10] == "held-out";
    bool ring_or_pp = algorithm == "ring" || algorithm == "pingpong";
    fit_other += fit && !ring_or_pp;
    held_ring += held && ring_or_pp;
    held_ps += held && algorithm == "ps";
  }
  EXPECT_EQ(fit_other, 0u) << o.out;
  EXPECT_EQ(held_ring, 0u) << o.out;
  EXPECT_GT(held_ps, 0u) << o.out;
}

}  // namespace
}  // namespace ddlsim

namespace ddlsim {
namespace {

std::string temp_file(const std::string& name, const std::string& text) {
  std::string path =
      (std::filesystem::temp_directory_path() / ("ddlsim-calib-" + std::to_string(getpid()) + "-" + name))
          .string();
  std::ofstream(path) << text;
  return path;
}

// The compute efficiency comes back from step times the simulator itself produced with it: ResNet-152 on
// JUWELS Booster with DALI (compute-bound there), efficiency 0.215, at 4, 16 and 64 GPUs (ddlsim run), and at
// one GPU (the 4-GPU run with reference_gpus 1: step = batch / (throughput(4) / speed-up)). The fit minimises
// sum(((T_sim(e) - T)/T)^2) over e, so it must return 0.215 with residuals at the simulator's rounding.
TEST(CalibCli, ScenarioFitsTheComputeEfficiencyToStepTimes) {
  const std::string sc = fmt::format("'{}'", source("scenarios/aach2023/resnet152-dali-cpu.yaml"));
  Outcome run = ddlsim("run " + sc + " --set 'cluster.nodes=[1,4,16]' --format csv", false);
  ASSERT_EQ(run.status, 0) << run.out;
  Outcome one = ddlsim("run " + sc + " --set cluster.nodes=1 --set reference_gpus=1 --format csv", false);
  ASSERT_EQ(one.status, 0) << one.out;
  CsvTable t = parse_csv(run.out, "run"), o = parse_csv(one.out, "run");
  ASSERT_EQ(t.rows.size(), 3u);
  double thr = std::stod(o.rows[0][o.column("throughput_samples_per_s")]);
  double speedup = std::stod(o.rows[0][o.column("speedup")]);
  std::string csv = fmt::format("gpus,step_time_s\n1,{:.12g}\n", 64 / (thr / speedup));
  for (const auto& row : t.rows) csv += row[t.column("gpus")] + "," + row[t.column("step_time_s")] + "\n";
  std::string steps = temp_file("steps.csv", csv), out = temp_file("compute.yaml", "");
  Outcome fit = ddlsim("calibrate '" + steps + "' --scenario " + sc + " --out '" + out + "'", false);
  ASSERT_EQ(fit.status, 0) << fit.out;
  EXPECT_NE(fit.out.find("compute efficiency 0.2150"), std::string::npos) << fit.out;
  YamlNode doc = YamlNode::load_file(out);
  EXPECT_NEAR(doc["compute"]["efficiency"].as_double(), 0.215, 1e-5);
  EXPECT_LT(doc["compute"]["residual_max"].as_double(), 1e-6);
  // A loader-bound run says nothing about the efficiency, and the output says so: with a 10
  // images/s-per-thread loader (12 threads: 64 / 120 = 0.53 s per batch) no efficiency brings the step below
  // 0.53 s, so measured 0.3 s steps leave every efficiency above the compute-bound range equally (un)fitting.
  std::string bound = temp_file("bound.csv", "gpus,step_time_s\n4,0.3\n64,0.3\n");
  Outcome b =
      ddlsim("calibrate '" + bound + "' --scenario '" + source("scenarios/aach2023/resnet50-dali-cpu.yaml") +
                 "' --set workload.loader.per_thread=10",
             false);
  ASSERT_EQ(b.status, 0) << b.out;
  EXPECT_NE(b.out.find("not determined"), std::string::npos) << b.out;
  for (const std::string& f : {steps, out, bound}) std::filesystem::remove(f);
}

TEST(CalibCli, ComputeFitInputErrors) {
  const std::string sc = fmt::format(" --scenario '{}'", source("scenarios/aach2023/resnet50-dali-cpu.yaml"));
  std::string odd = temp_file("odd.csv", "gpus,step_time_s\n6,0.1\n");
  Outcome o = ddlsim("calibrate '" + odd + "'" + sc, true);
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.out.find(":2:"), std::string::npos) << o.out;  // names the row
  EXPECT_NE(o.out.find("whole number of 4-GPU nodes"), std::string::npos) << o.out;
  std::string steps = temp_file("ok.csv", "gpus,step_time_s\n4,0.1\n");
  EXPECT_EQ(ddlsim("calibrate '" + steps + "'" + sc + " --strategy nope", true).status, 2);
  EXPECT_EQ(ddlsim("calibrate '" + steps + "' --set a=b", true).status, 2);  // --set needs --scenario
  Outcome none = ddlsim("calibrate '" + steps + "'", true);                  // step times need a scenario
  EXPECT_EQ(none.status, 2);
  EXPECT_NE(none.out.find("--scenario"), std::string::npos) << none.out;
  EXPECT_EQ(ddlsim("calibrate '" + source("scenarios/measured/kernels-np2.json") + "'" + sc, true).status, 2);
  for (const std::string& f : {odd, steps}) std::filesystem::remove(f);
}

}  // namespace
}  // namespace ddlsim

namespace ddlsim {
namespace {

// A calibration replays its own fit set in a scenario on the cluster it was fitted through. The published
// 2-node all_reduce_perf run of AWS p4de (16 A100, 8 per node, EFA) is fitted through a two-node DGX A100
// cluster (the shipped topology nearest it: 8 A100 per node on NVSwitch; its NICs are not p4de's), and a
// scenario on that topology with the file, validated against the same run, has a median |busbw error| of
// at most 2% (measured 0.4%). The closed-form fit of the same run (one ring of n/p messages, the wire
// latency inside alpha) replays there at a median of about 30%: the simulator's ring crosses the nodes on
// eight channels and pays each route's wire latency on top of alpha.
// Every second size held out of a fit through the cluster is predicted there at a median of at most 10%.
TEST(CalibCli, AFitThroughTheClusterReplaysItsFitSet) {
  const std::string dir =
      std::filesystem::temp_directory_path().string() + "/ddlsim-calsim-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string run = source("scenarios/measured/nccl-tests/aws-p4de-2node-a100-efa.txt");
  const std::string layout = " --ranks 16 --ranks-per-node 8";
  auto median_error = [&](const std::string& file) {
    std::string scenario = dir + "/v.yaml";
    std::ofstream(scenario) << "name: v\ncluster: {topology: "
                            << source("topologies/dgx-a100-hdr-fattree.yaml")
                            << ", nodes: [2], comm: {calibration: " << file
                            << "}}\nworkload: {collective: allreduce, bytes: 1MB}\nstrategies: [ring]\n";
    Outcome v =
        ddlsim("validate '" + scenario + "' --measured '" + run + "'" + layout + " --format csv", false);
    EXPECT_EQ(v.status, 0) << v.out;
    CsvTable t = parse_csv(v.out, "validate");
    std::vector<double> e;
    for (const auto& row : t.rows) e.push_back(std::stod(row[t.column("rel_error")]));
    std::sort(e.begin(), e.end());
    return e.empty() ? 1.0 : e[e.size() / 2];
  };
  Outcome fit = ddlsim("calibrate '" + run + "'" + layout + " --topology dgx-a100-hdr-fattree --out '" + dir +
                           "/through.yaml'",
                       false);
  ASSERT_EQ(fit.status, 0) << fit.out;
  EXPECT_NE(fit.out.find("fitted through the simulator on dgx-a100-hdr-fattree"), std::string::npos)
      << fit.out;
  EXPECT_LE(median_error(dir + "/through.yaml"), 0.02);
  ASSERT_EQ(ddlsim("calibrate '" + run + "'" + layout + " --out '" + dir + "/closed.yaml'", false).status, 0);
  EXPECT_GT(median_error(dir + "/closed.yaml"), 0.2);
  // Every second size held out of the fit through the cluster and replayed there: median |error| at most
  // 10% (measured 0.010 over 14 sizes).
  Outcome held =
      ddlsim("calibrate '" + run + "'" + layout +
                 " --topology dgx-a100-hdr-fattree --check --fit-max-bytes 1TiB --fit-max-ranks 16 "
                 "--hold-out-every 2",
             false);
  ASSERT_EQ(held.status, 0) << held.out;
  const std::string key = "summary: held-out: 14 cases, median |error| ";
  size_t at = held.out.find(key);
  ASSERT_NE(at, std::string::npos) << held.out;
  EXPECT_LE(std::stod(held.out.substr(at + key.size())), 0.10);
  // NCCL's tuner runs these 2-node sizes as its double tree on that cluster too, but the fit replays them
  // (it converged): nothing to say about the algorithm.
  EXPECT_EQ(fit.out.find("NCCL's tuner on"), std::string::npos) << fit.out;
  std::filesystem::remove_all(dir);
}

TEST(CalibCli, AFitThatARingCannotReplayNamesNcclsAlgorithm) {
  // The published p5 run is NCCL's double tree up to 8 MiB and NVLSTree from 16 MiB (its tuner's choice on
  // aws-p5-efa, as `describe` prints). A ring of 16 ranks has 30 steps where the tree has 2 across nodes: at
  // 8 B the ring's latency on that cluster (120 us) alone exceeds the measured 69 us, and the fit through
  // it does not converge. The notes name the algorithms and what to measure instead, not the link latencies.
  Outcome fit = ddlsim("calibrate '" + source("scenarios/measured/nccl-tests/aws-p5-2node-h100-efa.txt") +
                           "' --ranks 16 --ranks-per-node 8 --topology aws-p5-efa",
                       false);
  ASSERT_EQ(fit.status, 0) << fit.out;
  EXPECT_NE(fit.out.find("not converged"), std::string::npos) << fit.out;
  EXPECT_NE(fit.out.find("NCCL's tuner on aws-p5-efa runs 32 of the fit rows with another algorithm than the "
                         "ring the fit replays (double-tree 8 B-8 MiB, nvls-tree 16 MiB-16 GiB)"),
            std::string::npos)
      << fit.out;
  EXPECT_NE(fit.out.find("NCCL_ALGO=Ring"), std::string::npos) << fit.out;
  EXPECT_NE(fit.out.find("NCCL runs that size as double-tree"), std::string::npos) << fit.out;
  EXPECT_EQ(fit.out.find("link latencies are too high"), std::string::npos) << fit.out;
}

TEST(CalibCli, ValidateComparesACollectiveScenarioSizeBySize) {
  // A collective scenario (one DGX A100 node, a ring allreduce) against nccl-tests output: one row per
  // measured size, busbw measured = bytes / time x 2(p-1)/p, rel_error = |simulated - measured| / measured,
  // and a simulated time equal to `ddlsim run` of that size alone.
  const std::string dir =
      std::filesystem::temp_directory_path().string() + "/ddlsim-validate-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  auto scenario = [&](const std::string& name, const std::string& cluster, const std::string& bytes) {
    std::string path = dir + "/" + name + ".yaml";
    std::ofstream(path) << "name: " << name << "\ncluster: " << cluster
                        << "\nworkload: {collective: allreduce, bytes: " << bytes
                        << "}\nstrategies: [ring]\n";
    return path;
  };
  const std::string dgx = "{topology: " + source("topologies/dgx-a100-hdr-fattree.yaml") + ", nodes: [1]}";
  const std::string nccl = source("scenarios/measured/nccl-tests-allreduce-dgx-a100.txt");
  Outcome v =
      ddlsim("validate '" + scenario("v", dgx, "1MB") + "' --measured '" + nccl + "' --format csv", false);
  ASSERT_EQ(v.status, 0) << v.out;
  CsvTable t = parse_csv(v.out, "validate");
  ASSERT_EQ(t.rows.size(), 31u);  // 8 B .. 8 GiB
  const double factor = 2.0 * 7 / 8;
  bool found = false;
  for (const auto& row : t.rows) {
    double bytes = std::stod(row[t.column("bytes")]), us = std::stod(row[t.column("measured_us")]);
    double mb = std::stod(row[t.column("measured_busbw")]), sb = std::stod(row[t.column("simulated_busbw")]);
    EXPECT_NEAR(mb, bytes / (us * 1e-6) * factor / 1e9, mb * 1e-6);
    EXPECT_NEAR(std::stod(row[t.column("rel_error")]), std::abs(sb - mb) / mb, 1e-6);
    if (bytes == 16777216) {
      found = true;
      Outcome r = ddlsim("run '" + scenario("r", dgx, "16777216B") + "' --format csv", false);
      CsvTable rt = parse_csv(r.out, "run");
      ASSERT_EQ(rt.rows.size(), 1u) << r.out;
      EXPECT_NEAR(std::stod(row[t.column("simulated_us")]),
                  std::stod(rt.rows[0][rt.column("collective_time_s")]) * 1e6, 1e-3);
    }
  }
  EXPECT_TRUE(found);
  // --max-rel-error bounds the median: far below it, exit 1.
  EXPECT_EQ(
      ddlsim("validate '" + scenario("v", dgx, "1MB") + "' --measured '" + nccl + "' --max-rel-error 0.001",
             false)
          .status,
      1);
  // A cluster that cannot hold the run (4 GPUs per node for a run of 8 on one node): exit 2 naming the file.
  Outcome bad = ddlsim("validate '" +
                           scenario("b",
                                    "{nodes: [1], gpus_per_node: 4, gpu: a100-40gb, network: {kind: star, "
                                    "link: {bandwidth: 25GB/s, latency: 1us}}}",
                                    "1MB") +
                           "' --measured '" + nccl + "'",
                       true);
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_NE(bad.out.find("nccl-tests-allreduce-dgx-a100.txt:"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("4 GPUs per node"), std::string::npos) << bad.out;
  // A run on more nodes than the cluster has (the 2-node p4de run against a one-node system): exit 2 too.
  Outcome big =
      ddlsim("validate '" +
                 scenario("m",
                          "{max_nodes: 1, nodes: [1], gpus_per_node: 8, gpu: a100-40gb, network: "
                          "{kind: star, link: {bandwidth: 25GB/s, latency: 1us}}}",
                          "1MB") +
                 "' --measured '" + source("scenarios/measured/nccl-tests/aws-p4de-2node-a100-efa.txt") +
                 "' --ranks 16 --ranks-per-node 8",
             true);
  EXPECT_EQ(big.status, 2) << big.out;
  EXPECT_NE(big.out.find("2 nodes where the cluster has 1"), std::string::npos) << big.out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ddlsim
