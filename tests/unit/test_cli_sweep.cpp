// `ddlsim sweep --split`: each process of an mpirun/srun job takes the node counts i with i mod size = rank.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "sim/io/csv.hpp"
#include "tests/support/cli.hpp"

namespace {

std::string nodes_column(const std::string& env_rank, const std::string& env_size) {
  for (const char* v : {"PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS"})
    unsetenv(v);  // not under a launcher
  if (!env_rank.empty()) {
    setenv("OMPI_COMM_WORLD_RANK", env_rank.c_str(), 1);
    setenv("OMPI_COMM_WORLD_SIZE", env_size.c_str(), 1);
  }
  auto o = ddlsim_test::run_ddlsim("sweep '" + std::string(DDLSIM_SOURCE_DIR) +
                                   "/scenarios/star-ps-vs-ring.yaml' --nodes 2,4,8,16,32 --split "
                                   "--set 'strategies=[ring]' --format csv");
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("OMPI_COMM_WORLD_SIZE");
  EXPECT_EQ(o.status, 0) << o.out;
  if (o.out.empty()) return "";
  ddlsim::CsvTable t = ddlsim::parse_csv(o.out, "sweep output");
  std::string nodes;
  for (const auto& r : t.rows) nodes += r[t.column("nodes")] + " ";
  return nodes;
}

}  // namespace

TEST(CliSweep, SplitTakesEverySizeThCountFromTheRank) {
  EXPECT_EQ(nodes_column("0", "2"), "2 8 32 ");
  EXPECT_EQ(nodes_column("1", "2"), "4 16 ");
  EXPECT_EQ(nodes_column("", ""), "2 4 8 16 32 ");  // outside a parallel job: everything
  EXPECT_EQ(nodes_column("6", "8"), "");            // more processes than counts: nothing, status 0
}

TEST(CliSweep, JobsRunSimulationsAtOnceWithTheSameResults) {
  // --jobs N runs the independent simulations (each strategy at each count, and the reference) on N threads;
  // every number is the same as one at a time, in the same row order. Here: allreduce and parameter servers
  // (dedicated hosts) at four counts.
  auto run = [](const std::string& jobs) {
    return ddlsim_test::run_ddlsim(
        "sweep '" + std::string(DDLSIM_SOURCE_DIR) +
            "/scenarios/juwels-ps-vs-allreduce.yaml' --nodes 1,2,4,8 --format csv --jobs " + jobs,
        ddlsim_test::Capture::Both);
  };
  auto one = run("1"), three = run("3");
  EXPECT_EQ(one.status, 0) << one.out;
  EXPECT_GT(one.out.size(), 100u);
  EXPECT_EQ(three.out, one.out);
  auto bad = run("0");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.out.find("--jobs"), std::string::npos) << bad.out;
}

// SIGINT during a sweep: the simulations in flight are abandoned, the finished rows (whose reference
// finished) are printed as complete CSV rows, one line on stderr says so, and the exit status is 128 + 2. The
// sweep is long enough (nine counts up to 1024 GPUs, one thread) that the signal after 1 s always lands
// mid-run.
TEST(CliSweep, InterruptPrintsTheFinishedRowsAndExits130) {
  std::string out = testing::TempDir() + "ddlsim-interrupt.csv",
              err = testing::TempDir() + "ddlsim-interrupt.err";
  // popen's shell runs the sweep in the background and interrupts it.
  std::string cmd = std::string("'") + DDLSIM_BINARY + "' sweep '" + DDLSIM_SOURCE_DIR +
                    "/scenarios/aach2023/resnet50-dali-cpu.yaml' --nodes 1,2,4,8,16,32,64,128,256 --jobs 1 "
                    "--format csv > '" +
                    out + "' 2> '" + err + "' & p=$!; sleep 1; kill -INT $p; wait $p; echo $?";
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char buf[64] = {};
  size_t got = fread(buf, 1, sizeof(buf) - 1, pipe);
  pclose(pipe);
  EXPECT_EQ(std::string(buf, got), "130\n");
  auto slurp = [](const std::string& path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  std::string csv = slurp(out), message = slurp(err);
  EXPECT_NE(message.find("ddlsim: interrupted by SIGINT; printed the "), std::string::npos) << message;
  ddlsim::CsvTable t = ddlsim::parse_csv(csv, "interrupted sweep");
  EXPECT_LT(t.rows.size(), 18u);  // not all 9 counts x 2 strategies
  for (const auto& r : t.rows) EXPECT_GT(std::stod(r[t.column("efficiency")]), 0) << csv;
  std::remove(out.c_str());
  std::remove(err.c_str());
}
