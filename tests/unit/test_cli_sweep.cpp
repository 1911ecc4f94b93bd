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
