// `ddlsim calibrate` end to end: the hold-out check on the real kernels sample prints a summary; a bad
// measurement file is one line on stderr naming file and line, exit status 2; --out writes a calibration that
// loads back.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "sim/calib/calibration.hpp"
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
  EXPECT_EQ(ddlsim("calibrate x.json --breakpoint 64", true).status, 2);  // a size needs a unit
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
