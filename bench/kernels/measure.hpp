#pragma once
// Times and checks one algorithm at one size: warm-up, then timed repetitions, each started after a
// barrier; the time of a repetition is the slowest rank's.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <mpi.h>

#include "options.hpp"
#include "scratch.hpp"

namespace ddlsim::kernels {

struct Measurement {
  Algorithm algorithm = Algorithm::ring;
  int servers = 0;  // k for ps, p for ps-colocated, 0 otherwise
  std::size_t bytes = 0;
  std::vector<double> times_s;  // max over ranks of each repetition (one-way time for pingpong); rank 0 only
  std::string check;            // "ok" or a description of the first wrong element
  bool ok() const { return check == "ok"; }
};

class KernelBench {
 public:
  // Collective: allocates for the largest size and computes the MPI_Allreduce references once.
  KernelBench(MPI_Comm comm, const Options& options);

  // Why `algorithm` cannot run with this many ranks and servers, if it cannot.
  std::optional<std::string> skip_reason(Algorithm algorithm) const;

  // Collective. The check verdict is the same on every rank.
  Measurement measure(Algorithm algorithm, std::size_t bytes);

 private:
  void run_kernel(Algorithm algorithm, std::span<const float> input, std::span<float> output);
  // This rank's verdict on its own result ("" if fine or if it holds no result).
  std::string check_local(Algorithm algorithm, std::span<const float> output) const;
  // The highest rank whose result is checked: --inject-error corrupts its result.
  int last_checked_rank(Algorithm algorithm) const;
  // Every rank learns whether some rank failed; rank 0 gets the lowest failing rank's description.
  std::string agree_on_check(const std::string& local_problem) const;
  int ps_workers() const { return ranks_ - options_.servers; }

  MPI_Comm comm_;
  const Options& options_;
  int rank_ = 0;
  int ranks_ = 0;
  std::vector<float> input_;
  std::vector<float> output_;
  std::vector<float> reference_all_;      // MPI_Allreduce over all ranks
  std::vector<float> reference_workers_;  // MPI_Allreduce over the ps workers (servers add zeros)
  Scratch scratch_;
};

}  // namespace ddlsim::kernels
