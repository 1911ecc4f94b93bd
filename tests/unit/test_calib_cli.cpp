// `ddlsim calibrate` end to end: the hold-out check on the real kernels sample prints a summary; a bad
// measurement file is one line on stderr naming file and line, exit status 2; --out writes a calibration that
// loads back.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

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
