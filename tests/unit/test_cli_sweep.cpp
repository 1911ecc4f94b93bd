// `ddlsim sweep --split`: each process of an mpirun/srun job takes the node counts i with i mod size = rank.
#include <gtest/gtest.h>

#include <cstdlib>
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
