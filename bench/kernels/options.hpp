#pragma once
// Command-line options of ddlsim-kernels, parsed with Boost.Program_options (no MPI in here, so it stays
// testable).

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ddlsim::kernels {

enum class Algorithm { ring, ps, ps_colocated, rhd, direct, mpi_allreduce, pingpong };

// Every algorithm, in the order results are reported.
std::vector<Algorithm> all_algorithms();
std::string_view algorithm_name(Algorithm algorithm);

struct Options {
  std::vector<std::size_t> sizes_bytes;  // ascending, unique, multiples of 4 (float32 elements)
  int reps = 5;
  int warmup = 1;
  std::vector<Algorithm> algorithms;
  int servers = 1;
  std::string out_path;  // empty: no JSON, stdout summary only
  bool help = false;
  bool inject_error = false;  // self-test: corrupts one result element so the check must fail
};

// Bad command line: the message is for the user; the exit status is 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

Options parse_options(const std::vector<std::string>& args);
std::string usage_text();

// "64MiB" -> 67108864. Units: B, KiB, MiB, GiB (2^10 steps), KB, MB, GB (10^3 steps); a unit is required.
std::size_t parse_size(std::string_view text);
// "1KiB..16MiB" (powers of two from the first to at most the last) or a comma list, or both mixed.
std::vector<std::size_t> parse_sizes(std::string_view text);
std::vector<Algorithm> parse_algorithms(std::string_view text);

}  // namespace ddlsim::kernels
