#pragma once
// Measurement files, read into one record type: ddlsim-kernels JSON, nccl-tests all_reduce_perf output, OSU
// osu_latency / osu_bw / osu_allreduce output, and a CSV of measured training step times. The format is
// detected from the content, not the file name. Anything truncated or garbled throws InputError naming the
// file, the line and what was expected there.
#include <optional>
#include <string>
#include <vector>

namespace ddlsim {

enum class MeasurementKind {
  PingPong,   // one message of `bytes` between two ranks, one-way time
  Allreduce,  // an allreduce of `bytes` per rank over `ranks` ranks
  Bandwidth,  // streaming messages of `bytes` (osu_bw): time_s is the time per message, bytes / bandwidth
  Step,       // one training step on `ranks` GPUs
};
const char* kind_name(MeasurementKind k);

struct Measurement {
  std::string file;
  int line = 0;      // 1-based line of the record in `file`
  std::string tool;  // ddlsim-kernels, nccl-tests, osu, step-csv
  MeasurementKind kind = MeasurementKind::Allreduce;
  std::string algorithm;  // kernels: ring, ps, ps-colocated, rhd, direct, mpi_allreduce, pingpong;
                          // nccl-tests: nccl; OSU: osu_latency, osu_bw, osu_allreduce; step CSV: step
  int64_t ranks = 0;
  int64_t ranks_per_node = 0;  // the most ranks any node holds
  int64_t nodes = 0;
  int64_t servers = 0;        // kernels ps: k dedicated servers (the last k ranks); ps-colocated: p
  double bytes = 0;           // per-rank buffer (message size for ping-pong and bandwidth)
  double time_s = 0;          // median of `reps` (step CSV: step time; 0 when only a throughput was given)
  std::vector<double> reps;   // every repetition as measured (a single average for nccl-tests and OSU)
  bool same_node = false;     // every rank on one node: the intra-node link class
  std::string library;        // kernels: the MPI library that ran them (its mpi_library), else empty
  double throughput = 0;      // step CSV: samples per second when given
  int64_t batch_per_gpu = 0;  // step CSV: when given
};

// For files that do not say where their ranks ran. `ranks` and `ranks_per_node` describe a collective run
// (osu_allreduce, which never says; nccl-tests without "Using devices" lines) and override what a file says.
// OSU point-to-point runs (osu_latency, osu_bw) have two ranks, on two nodes unless `pt2pt_same_node`.
struct ReaderOptions {
  std::optional<int64_t> ranks;
  std::optional<int64_t> ranks_per_node;
  bool pt2pt_same_node = false;
};

// Reads one file (format detected by content). Throws InputError for a missing, unknown, truncated or garbled
// file.
std::vector<Measurement> read_measurements(const std::string& path, const ReaderOptions& options = {});
// The same on text already in memory; `name` is used in error messages.
std::vector<Measurement> read_measurements_text(const std::string& text, const std::string& name,
                                                const ReaderOptions& options = {});

double median(std::vector<double> values);

}  // namespace ddlsim
