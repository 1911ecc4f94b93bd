// Readers of measurement files: the real ddlsim-kernels sample, nccl-tests and OSU output in their genuine
// formats, measured step times, and truncated or garbled files (InputError naming file and line).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "sim/calib/readers.hpp"
#include "sim/core/error.hpp"

namespace ddlsim {
namespace {

std::string measured(const std::string& f) {
  return std::string(DDLSIM_SOURCE_DIR) + "/scenarios/measured/" + f;
}
std::string bad(const std::string& f) {
  return std::string(DDLSIM_SOURCE_DIR) + "/tests/bad_inputs/calib/" + f;
}

TEST(CalibReaders, KernelsJsonSample) {
  std::vector<Measurement> ms = read_measurements(measured("kernels-np2.json"));
  ASSERT_EQ(ms.size(), 133u);  // 7 algorithms x 19 sizes
  const Measurement& m = ms[0];
  EXPECT_EQ(m.tool, "ddlsim-kernels");
  EXPECT_EQ(m.algorithm, "ring");
  EXPECT_EQ(m.kind, MeasurementKind::Allreduce);
  EXPECT_EQ(m.line, 13);
  EXPECT_EQ(m.ranks, 2);
  EXPECT_EQ(m.ranks_per_node, 2);
  EXPECT_EQ(m.nodes, 1);
  EXPECT_TRUE(m.same_node);
  EXPECT_EQ(m.bytes, 1024);
  ASSERT_EQ(m.reps.size(), 10u);
  // Median of ten repetitions: the mean of the 5th and 6th smallest, (0.821 + 0.822) / 2 us.
  EXPECT_NEAR(m.time_s, 0.8215e-6, 1e-12);
  size_t pingpong = 0, ps = 0;
  for (const Measurement& x : ms) {
    pingpong += x.kind == MeasurementKind::PingPong;
    if (x.algorithm == "ps") {
      ++ps;
      EXPECT_EQ(x.servers, 1);
    }
  }
  EXPECT_EQ(pingpong, 19u);
  EXPECT_EQ(ps, 19u);
  EXPECT_EQ(ms.back().line, 13 + 132);
}

TEST(CalibReaders, NcclTestsAllReducePerf) {
  std::vector<Measurement> ms = read_measurements(measured("nccl-tests-allreduce-dgx-a100.txt"));
  ASSERT_EQ(ms.size(), 31u);  // 8 B .. 8 GiB, factor 2
  const Measurement& first = ms.front();
  EXPECT_EQ(first.tool, "nccl-tests");
  EXPECT_EQ(first.kind, MeasurementKind::Allreduce);
  EXPECT_EQ(first.ranks, 8);           // eight "Rank" lines
  EXPECT_EQ(first.ranks_per_node, 8);  // all on host dgx-a100
  EXPECT_EQ(first.nodes, 1);
  EXPECT_TRUE(first.same_node);
  EXPECT_EQ(first.bytes, 8);
  EXPECT_EQ(first.line, 17);
  EXPECT_NEAR(first.time_s, 10.90e-6, 1e-12);  // out-of-place time, not in-place (11.06)
  EXPECT_EQ(ms.back().bytes, 8589934592.0);
  EXPECT_NEAR(ms.back().time_s, 65208e-6, 1e-9);
}

TEST(CalibReaders, NcclTestsOlderFormatAndMultipleNodes) {
  // nccl-tests before 2.10: no root column, "error" instead of "#wrong", rank lines without "Group". Two
  // hosts.
  const std::string text =
      "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 4194304 step: 2(factor) warmup iters: 5 iters: 20 "
      "validation: 1\n"
      "#\n"
      "# Using devices\n"
      "#   Rank  0 Pid   1320 on     node01 device  0 [0x00] Tesla V100-SXM2-16GB\n"
      "#   Rank  1 Pid   1321 on     node01 device  1 [0x00] Tesla V100-SXM2-16GB\n"
      "#   Rank  2 Pid   2066 on     node02 device  0 [0x00] Tesla V100-SXM2-16GB\n"
      "#   Rank  3 Pid   2067 on     node02 device  1 [0x00] Tesla V100-SXM2-16GB\n"
      "#\n"
      "#                                                     out-of-place                       in-place\n"
      "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  "
      "error\n"
      "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
      "     1048576        262144   float     sum    610.2    1.72    2.58  5e-07    608.1    1.72    2.59  "
      "5e-07\n"
      "     2097152        524288   float     sum   1182.4    1.77    2.66  5e-07   1180.0    1.78    2.67  "
      "5e-07\n"
      "     4194304       1048576   float     sum   2330.9    1.80    2.70  5e-07   2329.4    1.80    2.70  "
      "5e-07\n"
      "# Out of bounds values : 0 OK\n"
      "# Avg bus bandwidth    : 2.65\n";
  std::vector<Measurement> ms = read_measurements_text(text, "old.txt");
  ASSERT_EQ(ms.size(), 3u);
  EXPECT_EQ(ms[0].ranks, 4);
  EXPECT_EQ(ms[0].ranks_per_node, 2);
  EXPECT_EQ(ms[0].nodes, 2);
  EXPECT_FALSE(ms[0].same_node);
  EXPECT_NEAR(ms[2].time_s, 2330.9e-6, 1e-12);
  EXPECT_EQ(ms[2].line, 14);
}

TEST(CalibReaders, NcclTestsOfAnotherCollectiveIsRejected) {
  // reduce_scatter_perf prints the same columns; its busbw is algbw*(p-1)/p, not 2(p-1)/p.
  const std::string text =
      "# nThread 1 nGpus 4 minBytes 1048576 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw "
      "  busbw #wrong\n"
      "     1048576         65536     float     sum      -1    100.0   10.49    7.86      0    100.0   10.49 "
      "   7.86      0\n"
      "# Avg bus bandwidth    : 7.86\n";
  try {
    read_measurements_text(text, "rs.txt");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().line, 3);
    EXPECT_NE(std::string(e.what()).find("not all_reduce_perf"), std::string::npos) << e.what();
  }
}

TEST(CalibReaders, OsuLatency) {
  std::vector<Measurement> ms = read_measurements(measured("osu-latency-sample.txt"));
  ASSERT_EQ(ms.size(), 23u);  // 1 B .. 4 MiB
  EXPECT_EQ(ms[0].kind, MeasurementKind::PingPong);
  EXPECT_EQ(ms[0].algorithm, "osu_latency");
  EXPECT_EQ(ms[0].ranks, 2);
  EXPECT_FALSE(ms[0].same_node);  // one rank per node unless told otherwise
  EXPECT_EQ(ms[0].bytes, 1);
  EXPECT_EQ(ms[0].line, 6);
  EXPECT_NEAR(ms[0].time_s, 1.06e-6, 1e-12);
  EXPECT_NEAR(ms.back().time_s, 183.81e-6, 1e-12);

  ReaderOptions same;
  same.pt2pt_same_node = true;
  same.ranks_per_node = 4;  // for collectives only
  EXPECT_TRUE(read_measurements(measured("osu-latency-sample.txt"), same)[0].same_node);
}

TEST(CalibReaders, OsuLatencyOldFormat) {
  const std::string text =
      "# OSU MPI Latency Test (Version 2.0)\n"
      "# Size Latency (us)\n"
      "0 1.06\n"
      "1 1.06\n"
      "1024 2.47\n";
  std::vector<Measurement> ms = read_measurements_text(text, "old-osu.txt");
  ASSERT_EQ(ms.size(), 2u);  // the zero-byte row carries no per-byte information
  EXPECT_EQ(ms[1].bytes, 1024);
  EXPECT_NEAR(ms[1].time_s, 2.47e-6, 1e-12);
}

TEST(CalibReaders, OsuBandwidthIsTimePerMessage) {
  std::vector<Measurement> ms = read_measurements(measured("osu-bw-sample.txt"));
  ASSERT_EQ(ms.size(), 23u);
  EXPECT_EQ(ms[0].kind, MeasurementKind::Bandwidth);
  // OMB's MB/s is 10^6 bytes per second: 1 byte at 4.70 MB/s is 1 / 4.70e6 s per message.
  EXPECT_NEAR(ms[0].time_s, 1 / 4.70e6, 1e-15);
}

TEST(CalibReaders, OsuAllreduceNeedsTheRankCount) {
  try {
    read_measurements(measured("osu-allreduce-sample.txt"));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("osu-allreduce-sample.txt"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--ranks"), std::string::npos) << e.what();
  }
  ReaderOptions o;
  o.ranks = 16;
  o.ranks_per_node = 4;
  std::vector<Measurement> ms = read_measurements(measured("osu-allreduce-sample.txt"), o);
  ASSERT_EQ(ms.size(), 19u);  // 4 B .. 1 MiB, with Min, Max and Iterations columns
  EXPECT_EQ(ms[0].kind, MeasurementKind::Allreduce);
  EXPECT_EQ(ms[0].ranks, 16);
  EXPECT_EQ(ms[0].nodes, 4);
  EXPECT_FALSE(ms[0].same_node);
  EXPECT_NEAR(ms[0].time_s, 12.76e-6, 1e-12);  // the average, not min or max
}

TEST(CalibReaders, StepCsv) {
  std::vector<Measurement> a = read_measurements_text("gpus,step_time_s\n4,0.25\n8,0.26\n", "steps.csv");
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[1].kind, MeasurementKind::Step);
  EXPECT_EQ(a[1].ranks, 8);
  EXPECT_EQ(a[1].time_s, 0.26);
  EXPECT_EQ(a[1].line, 3);
  // Throughput and batch per GPU give the step time: 8 GPUs x 64 samples / 2048 samples/s = 0.25 s.
  std::vector<Measurement> b = read_measurements_text(
      "# measured\ngpus,throughput_samples_per_s,batch_per_gpu\n8,2048,64\n", "tp.csv");
  ASSERT_EQ(b.size(), 1u);
  EXPECT_DOUBLE_EQ(b[0].time_s, 0.25);
  EXPECT_EQ(b[0].throughput, 2048);
}

struct BadFile {
  std::string file;
  int line;
  std::string fragment;
};

TEST(CalibReaders, TruncatedOrGarbledFilesNameFileAndLine) {
  const std::vector<BadFile> cases = {
      {"kernels-truncated.json", 20, "truncated or malformed ddlsim-kernels JSON"},
      {"kernels-missing-times.json", 9, "results[1].times_s: missing or empty"},
      {"kernels-failed-check.json", 7, "wrong result"},
      {"nccl-truncated-row.txt", 31, "expected 13 columns"},
      {"nccl-no-trailer.txt", 40, "Avg bus bandwidth"},
      {"nccl-garbled.txt", 20, "out-of-place time \"1O.99\""},
      {"osu-latency-truncated.txt", 13, "expected 2 columns"},
      {"osu-latency-garbled.txt", 9, "latency in us \"n/a\""},
      {"osu-bcast.txt", 2, "Broadcast Latency"},
      {"steps-bad-column.csv", 1, "did you mean \"step_time_s\""},
      {"steps-short-row.csv", 3, "expected 2 fields"},
      {"unknown-format.txt", 1, "unrecognised measurement file"},
  };
  for (const BadFile& c : cases) {
    SCOPED_TRACE(c.file);
    try {
      read_measurements(bad(c.file));
      ADD_FAILURE() << "expected InputError";
    } catch (const InputError& e) {
      std::string what = e.what();
      EXPECT_EQ(e.where().file, bad(c.file));
      EXPECT_EQ(e.where().line, c.line) << what;
      EXPECT_NE(what.find(c.file + ":" + std::to_string(c.line) + ":"), std::string::npos) << what;
      EXPECT_NE(what.find(c.fragment), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

// A measurement that would give a NaN, infinite or meaningless rate is refused where it is read, naming the
// line.
struct BadText {
  std::string name, text;
  int line;
  std::string fragment;
};

std::string kernels_json(const std::string& result) {
  return "{\"tool\":\"ddlsim-kernels\",\"format_version\":1,\"results\":[\n"
         " {\"algorithm\":\"ring\",\"ranks\":2,\"ranks_per_node\":2,\"nodes\":1,\"servers\":0,\"bytes\":4096,"
         "\"times_s\":[2e-6],\"check\":\"ok\"},\n " +
         result + "\n]}\n";
}

std::string kernels_row(const std::string& placement, const std::string& bytes, const std::string& times) {
  return "{\"algorithm\":\"ring\"," + placement + ",\"servers\":0,\"bytes\":" + bytes + ",\"times_s\":[" +
         times + "],\"check\":\"ok\"}";
}

const std::string kTwo = "\"ranks\":2,\"ranks_per_node\":2,\"nodes\":1";

std::string nccl_text(const std::string& rows) {
  return "# nThread 1 nGpus 2 minBytes 8 maxBytes 64 step: 2(factor) warmup iters: 5 iters: 20\n"
         "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   "
         "algbw "
         "  busbw #wrong\n" +
         rows + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.01\n";
}

const std::string kNcclRow8 =
    "           8             2     float     sum      -1    10.90    0.00    0.00      0    11.06    0.00   "
    " 0.00      0\n";
const std::string kNcclRow16 =
    "          16             4     float     sum      -1    11.06    0.00    0.00      0    10.92    0.00   "
    " 0.00      0\n";
const std::string kOsuLatency = "# OSU MPI Latency Test v7.3\n# Size       Avg Latency(us)\n";

TEST(CalibReaders, MeaninglessNumbersAreRefusedWithTheirLine) {
  const std::vector<BadText> cases = {
      {"kernels zero bytes", kernels_json(kernels_row(kTwo, "0", "1e-6")), 3,
       "results[1].bytes: expected a whole number of bytes from 1"},
      {"kernels bytes over 1 PiB", kernels_json(kernels_row(kTwo, "1e300", "1e-6")), 3, "1 PiB"},
      {"kernels denormal time", kernels_json(kernels_row(kTwo, "1024", "1e-320")), 3,
       "outside 1 ns .. 1e6 s"},
      {"kernels huge time", kernels_json(kernels_row(kTwo, "1024", "2e-6,1e308")), 3,
       "outside 1 ns .. 1e6 s"},
      {"kernels ranks 3 on 2 x 1",
       kernels_json(kernels_row("\"ranks\":3,\"ranks_per_node\":2,\"nodes\":1", "1024", "1e-6")), 3,
       "inconsistent placement: ranks 3"},
      {"kernels ranks 2^40",
       kernels_json(kernels_row("\"ranks\":1099511627776,\"ranks_per_node\":2,\"nodes\":1", "1024", "1e-6")),
       3, "rank count 1099511627776 out of range 1..1000000"},
      {"osu garbage after the rows", kOsuLatency + "1 1.06\n2 1.06\ngarbage row here\n", 5,
       "not a data row: \"garbage row here\""},
      {"osu negative size", kOsuLatency + "-1 1.06\n2 1.06\n", 3, "size \"-1\" is not a byte count"},
      {"osu zero size after rows", kOsuLatency + "1 1.06\n0 1.06\n", 4, "size 0 B"},
      {"osu bandwidth zero size",
       "# OSU MPI Bandwidth Test v7.3\n# Size      Bandwidth (MB/s)\n0 4.70\n2 9.71\n", 3, "size 0 B"},
      {"osu denormal latency", kOsuLatency + "1 1e-300\n2 1.06\n", 3,
       "latency 1e-300 us is outside 1 ns .. 1e6 s"},
      {"osu absurd bandwidth",
       "# OSU MPI Bandwidth Test v7.3\n# Size      Bandwidth (MB/s)\n1 1e308\n2 9.71\n", 3,
       "not a physically meaningful rate"},
      {"nccl zero size after rows",
       nccl_text(kNcclRow8 + "           0             0     float     sum      -1    10.90    0.00    0.00  "
                             "    0    11.06    0.00    0.00      0\n"),
       4, "size 0 B after larger sizes"},
      {"nccl garbage between rows", nccl_text(kNcclRow8 + "garbage garbage\n" + kNcclRow16), 4,
       "not a data row: \"garbage garbage\""},
      {"nccl garbage before the rows", nccl_text("garbage garbage\n" + kNcclRow8), 3, "not a data row"},
      {"nccl huge time",
       nccl_text("           8             2     float     sum      -1    1e308    0.00    0.00      0    "
                 "11.06    0.00    0.00      0\n"),
       3, "out-of-place time 1e308 us is outside"},
      {"steps denormal time", "gpus,step_time_s\n4,1e-320\n", 2, "step_time_s: 1e-320 s is outside"},
  };
  for (const BadText& c : cases) {
    SCOPED_TRACE(c.name);
    try {
      read_measurements_text(c.text, "m.txt");
      ADD_FAILURE() << "expected InputError";
    } catch (const InputError& e) {
      std::string what = e.what();
      EXPECT_EQ(e.where().line, c.line) << what;
      EXPECT_NE(what.find(c.fragment), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

TEST(CalibReaders, WhatRealToolsWriteIsStillRead) {
  // Uneven nodes: the largest holds ranks_per_node, each other at least one rank.
  EXPECT_EQ(
      read_measurements_text(
          kernels_json(kernels_row("\"ranks\":6,\"ranks_per_node\":4,\"nodes\":3", "1024", "1e-6")), "k.json")
          .size(),
      2u);
  // nccl-tests: leading zero-byte rows (sizes under one element) are skipped; NCCL's log lines may come
  // between the rows; launcher output after the trailer is not data.
  const std::string zero =
      "           0             0     float     sum      -1    10.90    0.00    0.00      0    11.06    0.00 "
      "   0.00      0\n";
  std::vector<Measurement> ms = read_measurements_text(
      nccl_text(zero + kNcclRow8 + "node1:123:456 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n" +
                kNcclRow16) +
          "[node1:00123] 1 more process has sent help message help-mpi-btl-openib.txt\n",
      "n.txt");
  ASSERT_EQ(ms.size(), 2u);
  EXPECT_EQ(ms[0].bytes, 8);
  EXPECT_EQ(ms[1].line, 6);
}

TEST(CalibReaders, MissingFile) {
  EXPECT_THROW(read_measurements(bad("no-such-file.json")), InputError);
}

}  // namespace
}  // namespace ddlsim
