// ddlsim-kernels: hand-written MPI communication kernels (ring, parameter server, recursive
// halving-doubling, direct), MPI_Allreduce and ping-pong, timed and checked; the measurements
// calibrate ddlsim's network model.

#include <algorithm>
#include <cstdio>
#include <exception>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <mpi.h>

#include "check.hpp"
#include "environment.hpp"
#include "measure.hpp"
#include "options.hpp"
#include "report.hpp"

namespace ddlsim::kernels {
namespace {

constexpr int exit_ok = 0;
constexpr int exit_failure = 1;
constexpr int exit_usage = 2;

// Rank 0 opens the JSON file before the measurements, so that a bad path fails in seconds, not minutes.
bool open_output(MPI_Comm comm, int rank, const std::string& path, std::ofstream& out) {
  int opened = 1;
  if (rank == 0 && !path.empty()) {
    out.open(path);
    opened = out ? 1 : 0;
    if (!opened) fmt::print(stderr, "ddlsim-kernels: error: cannot write \"{}\"\n", path);
  }
  MPI_Bcast(&opened, 1, MPI_INT, 0, comm);
  return opened == 1;
}

void print_banner(const RunEnvironment& environment, const Options& options) {
  fmt::print("ddlsim-kernels: {} ranks on {} node(s), {} per node{}; {}\n", environment.ranks,
             environment.nodes, environment.ranks_per_node,
             environment.uneven_nodes ? " (largest; nodes differ)" : "", environment.mpi_library);
  fmt::print("reps {}, warm-up {}, servers for ps {}\n", options.reps, options.warmup, options.servers);
  if (environment.ranks > max_exact_ranks) {
    fmt::print("note: more than {} ranks: float32 sums are no longer exact, checks may fail\n",
               max_exact_ranks);
  }
  fmt::print("{}\n", table_header());
  std::fflush(stdout);
}

int run(MPI_Comm comm, const std::vector<std::string>& args) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  Options options;
  try {
    options = parse_options(args);
  } catch (const UsageError& error) {
    if (rank == 0) fmt::print(stderr, "ddlsim-kernels: error: {}\n", error.what());
    return exit_usage;
  }
  if (options.help) {
    if (rank == 0) fmt::print("{}", usage_text());
    return exit_ok;
  }
  std::ofstream out;
  if (!open_output(comm, rank, options.out_path, out)) return exit_failure;

  const RunEnvironment environment = describe_environment(comm);
  const std::string started = utc_timestamp();
  KernelBench bench(comm, options);
  if (rank == 0) print_banner(environment, options);

  std::vector<Algorithm> runnable;
  for (Algorithm algorithm : options.algorithms) {
    if (const auto reason = bench.skip_reason(algorithm)) {
      if (rank == 0) fmt::print("note: {}\n", *reason);
      continue;
    }
    runnable.push_back(algorithm);
  }
  // Every algorithm at one size before the next size: a slow spell of a shared machine then hits the
  // algorithms being compared alike, not whichever one happened to run during it.
  std::vector<Measurement> results;
  std::optional<Measurement> failed;
  for (std::size_t bytes : options.sizes_bytes) {
    for (Algorithm algorithm : runnable) {
      results.push_back(bench.measure(algorithm, bytes));
      if (rank == 0) {
        fmt::print("{}\n", table_row(results.back()));
        std::fflush(stdout);
      }
      if (!results.back().ok()) {
        failed = results.back();
        break;
      }
    }
    if (failed) break;
  }
  // The file lists them by algorithm (in the order asked for), then size.
  std::stable_sort(results.begin(), results.end(), [&](const Measurement& a, const Measurement& b) {
    auto at = [&](Algorithm x) { return std::find(runnable.begin(), runnable.end(), x) - runnable.begin(); };
    return at(a.algorithm) < at(b.algorithm);
  });

  if (rank == 0 && out.is_open()) {
    out << format_json(to_json(environment, started, utc_timestamp(), results));
    if (!out) {
      fmt::print(stderr, "ddlsim-kernels: error: writing \"{}\" failed\n", options.out_path);
      return exit_failure;
    }
    fmt::print("wrote {}\n", options.out_path);
  }
  if (failed) {
    if (rank == 0) {
      fmt::print(stderr, "ddlsim-kernels: error: {} at {} bytes gave a wrong result: {}\n",
                 algorithm_name(failed->algorithm), failed->bytes, failed->check);
    }
    return exit_failure;
  }
  return exit_ok;
}

}  // namespace
}  // namespace ddlsim::kernels

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  int status = 1;
  try {
    status = ddlsim::kernels::run(comm, std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::exception& error) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    fmt::print(stderr, "ddlsim-kernels: error on rank {}: {}\n", rank, error.what());
    MPI_Abort(comm, 1);
  }
  MPI_Comm_free(&comm);
  MPI_Finalize();
  return status;
}
