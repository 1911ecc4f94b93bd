// `ddlsim sweep --split`: each process of an mpirun/srun job takes the node counts i with i mod size = rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

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
// signal is sent once the first row has been streamed (so that there is one to print, however slow the
// machine or the build), and the sweep is long enough (nine counts up to 1024 GPUs, one thread) that it
// always lands mid-run.
TEST(CliSweep, InterruptPrintsTheFinishedRowsAndExits130) {
  std::string out = testing::TempDir() + "ddlsim-interrupt.csv",
              err = testing::TempDir() + "ddlsim-interrupt.err",
              stream = testing::TempDir() + "ddlsim-interrupt-stream.csv";
  std::remove(stream.c_str());
  // popen's shell runs the sweep in the background, waits (up to 120 s) until its stream has a header and a
  // row, and interrupts it. 1000 steps a point keep the whole sweep far longer than its first rows (about 20
  // s on the project's VM; the scenario's own 12 steps take under one).
  std::string cmd = std::string("'") + DDLSIM_BINARY + "' sweep '" + DDLSIM_SOURCE_DIR +
                    "/scenarios/aach2023/resnet50-dali-cpu.yaml' --nodes 1,2,4,8,16,32,64,128,256 --jobs 1 "
                    "--set workload.steps=1000 --stream '" +
                    stream + "' --format csv > '" + out + "' 2> '" + err +
                    "' & p=$!; i=0; while [ $i -lt 1200 ] && [ \"$({ wc -l < '" + stream +
                    "'; } 2>/dev/null || echo 0)\" -lt 2 ]; do sleep 0.1; i=$((i + 1)); done; kill -INT $p; "
                    "wait $p; echo $?";
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
  EXPECT_GE(t.rows.size(), 1u);   // the streamed one at least
  EXPECT_LT(t.rows.size(), 18u);  // not all 9 counts x 2 strategies
  for (const auto& r : t.rows) EXPECT_GT(std::stod(r[t.column("efficiency")]), 0) << csv;
  std::remove(out.c_str());
  std::remove(err.c_str());
  std::remove(stream.c_str());
}

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The file's data rows (header dropped), sorted: streams are in completion order.
std::vector<std::string> sorted_rows(const std::string& text) {
  std::vector<std::string> rows;
  std::stringstream ss(text);
  std::string line;
  std::getline(ss, line);
  while (std::getline(ss, line)) rows.push_back(line);
  std::sort(rows.begin(), rows.end());
  return rows;
}

}  // namespace

// --stream writes each row as it finishes; a sweep killed with SIGKILL (nothing printed, perhaps in the
// middle of a line: a torn line is appended here by hand) and run again with --resume keeps the rows it has,
// skips their points and ends with every row exactly once, the same as an uninterrupted run. Whether the kill
// lands early or late, the end state is the same; the kill only decides how much is kept.
TEST(CliSweep, KilledSweepResumesWithoutLossOrDuplicates) {
  const std::string dir = testing::TempDir(), full = dir + "ddlsim-full.csv", part = dir + "ddlsim-part.csv";
  const std::string sweep = std::string("sweep '") + DDLSIM_SOURCE_DIR +
                            "/scenarios/aach2023/resnet50-dali-cpu.yaml' --nodes 1,2,4,8,16,32,64 --jobs 1 ";
  auto whole = ddlsim_test::run_ddlsim(sweep + "--stream '" + full + "' --format csv");
  ASSERT_EQ(whole.status, 0);
  std::vector<std::string> expected = sorted_rows(slurp(full));
  ASSERT_EQ(expected.size(), 14u);              // 7 counts x 2 strategies
  EXPECT_EQ(expected, sorted_rows(whole.out));  // the stream holds what stdout shows
  std::string cmd = std::string("'") + DDLSIM_BINARY + "' " + sweep + "--stream '" + part +
                    "' > /dev/null 2>&1 & p=$!; sleep 0.3; kill -KILL $p; { wait $p; } 2> /dev/null; printf "
                    "'ddp,16,4,0.10' >> '" +
                    part + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::string killed = slurp(part);
  size_t kept = sorted_rows(killed.substr(0, killed.rfind('\n') + 1)).size();
  auto resumed = ddlsim_test::run_ddlsim(sweep + "--resume '" + part + "' --format csv");
  EXPECT_EQ(resumed.status, 0);
  EXPECT_EQ(sorted_rows(slurp(part)), expected);                       // every row once, the torn line gone
  EXPECT_EQ(sorted_rows(resumed.out).size(), expected.size() - kept);  // stdout: only what ran this time
  // Resumed again with nothing left: nothing runs, the file stays as it is.
  std::string before = slurp(part);
  auto again = ddlsim_test::run_ddlsim(sweep + "--resume '" + part + "'");
  EXPECT_EQ(again.status, 0);
  EXPECT_NE(again.out.find("resumed: 14 rows were in"), std::string::npos) << again.out;
  EXPECT_EQ(slurp(part), before);
  // A file of other columns (here: with --stats) is refused at its header, and left alone.
  auto other = ddlsim_test::run_ddlsim(sweep + "--stats --resume '" + part + "'", ddlsim_test::Capture::Both);
  EXPECT_EQ(other.status, 2);
  EXPECT_NE(other.out.find(part + ":1:1: its columns are not this run's"), std::string::npos) << other.out;
  EXPECT_EQ(slurp(part), before);
  std::remove(full.c_str());
  std::remove(part.c_str());
}

// Collective workloads stream and resume the same way (JSON Lines here); the rows are the run's own.
TEST(CliSweep, CollectiveRowsStreamAsJsonLines) {
  const std::string file = testing::TempDir() + "ddlsim-coll.jsonl";
  std::remove(file.c_str());
  const std::string sweep = std::string("sweep '") + DDLSIM_SOURCE_DIR +
                            "/scenarios/star-ps-vs-ring.yaml' --set 'strategies=[ring, ps]' --nodes 2,4 ";
  auto first = ddlsim_test::run_ddlsim(sweep + "--stream '" + file + "'");
  EXPECT_EQ(first.status, 0);
  std::vector<std::string> lines = sorted_rows("header\n" + slurp(file));
  ASSERT_EQ(lines.size(), 4u);  // 2 strategies x 2 counts, one JSON object each
  for (const std::string& l : lines) EXPECT_EQ(l.rfind("{\"strategy\":", 0), 0u) << l;
  auto more = ddlsim_test::run_ddlsim(
      std::string("sweep '") + DDLSIM_SOURCE_DIR +
      "/scenarios/star-ps-vs-ring.yaml' --set 'strategies=[ring, ps]' --nodes 2,4,8 --resume '" + file +
      "' --format csv");
  EXPECT_EQ(more.status, 0);
  EXPECT_EQ(sorted_rows(more.out).size(), 2u);  // only the two points at 8 nodes ran
  EXPECT_EQ(sorted_rows("header\n" + slurp(file)).size(), 6u);
  std::remove(file.c_str());
}

// A run whose memory estimate passes --max-memory (default: the memory available) is refused before it runs,
// with exit 2, at cluster.nodes, giving the estimate and what to change; `none` turns the check off.
TEST(CliSweep, MemoryEstimateRefusesARunThatWouldNotFit) {
  const std::string run = std::string("run '") + DDLSIM_SOURCE_DIR +
                          "/scenarios/aach2023/resnet50-dali-cpu.yaml' --set 'cluster.nodes=[2]' ";
  auto refused = ddlsim_test::run_ddlsim(run + "--max-memory 1MB", ddlsim_test::Capture::Both);
  EXPECT_EQ(refused.status, 2);
  EXPECT_NE(refused.out.find("cluster.nodes: at 2 nodes (8 GPUs) ddp needs about "), std::string::npos)
      << refused.out;
  EXPECT_NE(refused.out.find("more than the 0.001 GB of --max-memory: fewer nodes or workload.steps"),
            std::string::npos)
      << refused.out;
  EXPECT_EQ(ddlsim_test::run_ddlsim(run + "--max-memory none").status, 0);
  EXPECT_EQ(ddlsim_test::run_ddlsim(run + "--max-memory 64GB").status, 0);
  auto bad = ddlsim_test::run_ddlsim(run + "--max-memory lots", ddlsim_test::Capture::Both);
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.out.find("--max-memory: expected a size like 16GB, or none"), std::string::npos) << bad.out;
}

// Under `sweep --split` each process streams to its own file: {rank} in the name is its rank, and a name
// without it is refused when the job has more than one process (they would write one file together).
TEST(CliSweep, SplitStreamsOneFilePerRank) {
  const std::string dir = testing::TempDir();
  const std::string sweep =
      std::string("sweep '") + DDLSIM_SOURCE_DIR +
      "/scenarios/star-ps-vs-ring.yaml' --set 'strategies=[ring]' --nodes 2,4,8 --split ";
  for (const char* v : {"PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS"}) unsetenv(v);
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  for (const char* rank : {"0", "1"}) {
    setenv("OMPI_COMM_WORLD_RANK", rank, 1);
    EXPECT_EQ(ddlsim_test::run_ddlsim(sweep + "--stream '" + dir + "split-{rank}.csv'").status, 0);
  }
  auto shared =
      ddlsim_test::run_ddlsim(sweep + "--stream '" + dir + "split.csv'", ddlsim_test::Capture::Both);
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("OMPI_COMM_WORLD_SIZE");
  EXPECT_EQ(shared.status, 2);
  EXPECT_NE(shared.out.find("--stream: with --split each of the 2 processes needs a file of its own"),
            std::string::npos)
      << shared.out;
  // Rank 0 takes the counts at positions 0 and 2 (2 and 8 nodes), rank 1 the one at position 1.
  EXPECT_EQ(sorted_rows(slurp(dir + "split-0.csv")).size(), 2u);
  std::vector<std::string> one = sorted_rows(slurp(dir + "split-1.csv"));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].rfind("ring,4,4,", 0), 0u) << one[0];
  std::remove((dir + "split-0.csv").c_str());
  std::remove((dir + "split-1.csv").c_str());
}

// A resumed sweep simulates only the missing points (and the reference they need), and only those face the
// memory check: with 256 nodes already in the file, resuming for the 2-node point fits in 50 MB, although
// 256 nodes alone would be estimated at about 76 MB and refused.
TEST(CliSweep, ResumeRunsOnlyTheMissingPoints) {
  const std::string file = testing::TempDir() + "ddlsim-missing.csv";
  const std::string sweep = std::string("sweep '") + DDLSIM_SOURCE_DIR +
                            "/scenarios/aach2023/resnet50-dali-cpu.yaml' --set 'strategies=[ddp]' ";
  ASSERT_EQ(ddlsim_test::run_ddlsim(sweep + "--nodes 1 --stream '" + file + "'").status, 0);
  std::string kept = slurp(file);
  std::string row1 = kept.substr(kept.find('\n') + 1);  // "ddp,4,1,..."
  ASSERT_EQ(row1.rfind("ddp,4,1,", 0), 0u) << row1;
  {
    std::ofstream out(file, std::ios::app);
    out << "ddp,1024,256," << row1.substr(8);  // the 256-node point, as if a run had finished it
  }
  auto big = ddlsim_test::run_ddlsim(sweep + "--nodes 256 --max-memory 50MB", ddlsim_test::Capture::Both);
  EXPECT_EQ(big.status, 2) << big.out;  // alone, 256 nodes do not fit
  auto resumed = ddlsim_test::run_ddlsim(sweep + "--nodes 1,2,256 --max-memory 50MB --resume '" + file +
                                         "' --format csv");
  EXPECT_EQ(resumed.status, 0) << resumed.out;
  std::vector<std::string> ran = sorted_rows(resumed.out);
  ASSERT_EQ(ran.size(), 1u);
  EXPECT_EQ(ran[0].rfind("ddp,8,2,", 0), 0u) << ran[0];
  EXPECT_EQ(sorted_rows(slurp(file)).size(), 3u);
  std::remove(file.c_str());
}
