#include "measure.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "check.hpp"
#include "kernels.hpp"

namespace ddlsim::kernels {
namespace {

bool is_power_of_two(int value) {
  return value > 0 && (value & (value - 1)) == 0;
}

}  // namespace

KernelBench::KernelBench(MPI_Comm comm, const Options& options) : comm_(comm), options_(options) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &ranks_);
  const std::size_t count = options_.sizes_bytes.empty() ? 0 : options_.sizes_bytes.back() / sizeof(float);
  input_.resize(count);
  output_.resize(count);
  fill_input(rank_, input_);
  // Sums are element-wise, so the reference for a smaller size is a prefix of this one.
  reference_all_.resize(count);
  library_allreduce(comm_, input_, reference_all_);
  const bool ps_wanted = std::find(options_.algorithms.begin(), options_.algorithms.end(), Algorithm::ps) !=
                         options_.algorithms.end();
  if (ps_wanted && !skip_reason(Algorithm::ps)) {
    std::vector<float> contribution = rank_ < ps_workers() ? input_ : std::vector<float>(count, 0.0f);
    reference_workers_.resize(count);
    library_allreduce(comm_, contribution, reference_workers_);
  }
}

std::optional<std::string> KernelBench::skip_reason(Algorithm algorithm) const {
  if (algorithm == Algorithm::rhd && !is_power_of_two(ranks_)) {
    return fmt::format(
        "rhd skipped: recursive halving-doubling needs a power-of-two number of ranks, have {}", ranks_);
  }
  if (algorithm == Algorithm::ps && ps_workers() < 1) {
    return fmt::format("ps skipped: --servers {} leaves no worker among {} ranks", options_.servers, ranks_);
  }
  if (algorithm == Algorithm::pingpong && ranks_ < 2) return "pingpong skipped: needs at least 2 ranks";
  return std::nullopt;
}

void KernelBench::run_kernel(Algorithm algorithm, std::span<const float> input, std::span<float> output) {
  switch (algorithm) {
    case Algorithm::ring:
      return ring_allreduce(comm_, output, scratch_);
    case Algorithm::ps:
      return ps_allreduce(comm_, PsLayout::dedicated(ranks_, options_.servers), input, output, scratch_);
    case Algorithm::ps_colocated:
      return ps_allreduce(comm_, PsLayout::colocated(ranks_), input, output, scratch_);
    case Algorithm::rhd:
      return rhd_allreduce(comm_, output, scratch_);
    case Algorithm::direct:
      return direct_allreduce(comm_, input, output, scratch_);
    case Algorithm::mpi_allreduce:
      return library_allreduce_in_place(comm_, output);
    case Algorithm::pingpong:
      return pingpong(comm_, input, output);
  }
}

std::string KernelBench::check_local(Algorithm algorithm, std::span<const float> output) const {
  switch (algorithm) {
    case Algorithm::pingpong:
      return rank_ < 2 ? find_echo_mismatch(output, 0) : std::string{};
    case Algorithm::ps:
      return rank_ < ps_workers() ? find_mismatch(output, ps_workers(), reference_workers_) : std::string{};
    default:
      return find_mismatch(output, ranks_, reference_all_);
  }
}

int KernelBench::last_checked_rank(Algorithm algorithm) const {
  switch (algorithm) {
    case Algorithm::pingpong:
      return 1;
    case Algorithm::ps:
      return ps_workers() - 1;
    default:
      return ranks_ - 1;
  }
}

std::string KernelBench::agree_on_check(const std::string& local_problem) const {
  const int mine = local_problem.empty() ? ranks_ : rank_;
  int first_failing = ranks_;
  MPI_Allreduce(&mine, &first_failing, 1, MPI_INT, MPI_MIN, comm_);
  if (first_failing == ranks_) return "ok";
  constexpr int tag = 199;
  if (first_failing == 0) return fmt::format("mismatch on rank 0: {}", local_problem);
  if (rank_ == first_failing) {
    MPI_Send(local_problem.data(), static_cast<int>(local_problem.size()), MPI_CHAR, 0, tag, comm_);
  }
  if (rank_ != 0) return "mismatch";
  MPI_Status status;
  MPI_Probe(first_failing, tag, comm_, &status);
  int length = 0;
  MPI_Get_count(&status, MPI_CHAR, &length);
  std::string problem(static_cast<std::size_t>(length), '\0');
  MPI_Recv(problem.data(), length, MPI_CHAR, first_failing, tag, comm_, MPI_STATUS_IGNORE);
  return fmt::format("mismatch on rank {}: {}", first_failing, problem);
}

Measurement KernelBench::measure(Algorithm algorithm, std::size_t bytes) {
  Measurement result;
  result.algorithm = algorithm;
  result.bytes = bytes;
  if (algorithm == Algorithm::ps) result.servers = options_.servers;
  if (algorithm == Algorithm::ps_colocated) result.servers = ranks_;

  const std::size_t count = bytes / sizeof(float);
  const std::span<const float> input = std::span<const float>(input_).first(count);
  const std::span<float> output = std::span<float>(output_).first(count);
  std::vector<double> local_times(static_cast<std::size_t>(options_.reps));
  std::string local_problem;
  for (int rep = -options_.warmup; rep < options_.reps; ++rep) {
    // Allreduce kernels start from the own gradient in `output` (in place; copied before the clock starts),
    // so one that leaves it alone fails the check (for p >= 2). Ping-pong's echo buffer is poisoned instead,
    // so it cannot pass on an earlier result.
    if (algorithm == Algorithm::pingpong)
      std::fill(output.begin(), output.end(), std::numeric_limits<float>::quiet_NaN());
    else
      std::copy(input.begin(), input.end(), output.begin());
    MPI_Barrier(comm_);
    const double start = MPI_Wtime();
    run_kernel(algorithm, input, output);
    const double elapsed = MPI_Wtime() - start;
    if (rep >= 0) local_times[static_cast<std::size_t>(rep)] = elapsed;
    if (options_.inject_error && rank_ == last_checked_rank(algorithm)) output[count / 2] += 1.0f;
    if (local_problem.empty()) {
      local_problem = check_local(algorithm, output);
      if (!local_problem.empty()) {
        const std::string which = rep < 0 ? fmt::format("warm-up repetition {}", rep + options_.warmup + 1)
                                          : fmt::format("repetition {}", rep + 1);
        local_problem = fmt::format("{}: {}", which, local_problem);
      }
    }
  }

  result.times_s.resize(local_times.size());
  MPI_Reduce(local_times.data(), result.times_s.data(), static_cast<int>(local_times.size()), MPI_DOUBLE,
             MPI_MAX, 0, comm_);
  for (double& time : result.times_s) {
    if (algorithm == Algorithm::pingpong) time /= 2;  // one way = round trip / 2
    time = std::round(time * 1e9) / 1e9;              // whole nanoseconds: finer is clock noise
  }
  if (rank_ != 0) result.times_s.clear();
  result.check = agree_on_check(local_problem);
  return result;
}

}  // namespace ddlsim::kernels
