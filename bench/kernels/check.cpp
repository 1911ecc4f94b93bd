#include "check.hpp"

#include <array>
#include <cassert>

#include <fmt/format.h>

namespace ddlsim::kernels {
namespace {

constexpr int rank_period = 13;
constexpr std::size_t index_period = 251;

double index_part(std::size_t index) {
  return static_cast<double>(index % index_period) / 4.0;
}

// Sum over r < ranks of (1 + r mod 13).
double rank_part_sum(int ranks) {
  const int cycles = ranks / rank_period;
  const int rest = ranks % rank_period;
  const int full_cycle = rank_period * (rank_period + 1) / 2;  // 1 + 2 + ... + 13
  return static_cast<double>(cycles) * full_cycle + static_cast<double>(rest) * (rest + 1) / 2;
}

}  // namespace

float input_value(int rank, std::size_t index) {
  return static_cast<float>(1 + rank % rank_period + index_part(index));
}

void fill_input(int rank, std::span<float> buffer) {
  for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = input_value(rank, i);
}

double expected_sum(int contributors, std::size_t index) {
  return rank_part_sum(contributors) + contributors * index_part(index);
}

std::string find_mismatch(std::span<const float> output, int contributors, std::span<const float> reference) {
  assert(reference.size() >= output.size());
  // The closed form repeats with the index period; a table keeps this loop as fast as a memory scan,
  // which matters because every repetition is checked.
  std::array<float, index_period> expected{};
  for (std::size_t j = 0; j < index_period; ++j)
    expected[j] = static_cast<float>(expected_sum(contributors, j));
  std::size_t j = 0;
  for (std::size_t i = 0; i < output.size(); ++i) {
    // Exact comparisons on purpose: every correct order of additions gives exactly these values.
    if (output[i] != expected[j] || output[i] != reference[i]) {
      return fmt::format("element {} of {}: got {}, expected {} (closed form) and {} (MPI_Allreduce)", i,
                         output.size(), output[i], expected_sum(contributors, i), reference[i]);
    }
    if (++j == index_period) j = 0;
  }
  return {};
}

std::string find_echo_mismatch(std::span<const float> echo, int sender_rank) {
  for (std::size_t i = 0; i < echo.size(); ++i) {
    if (echo[i] != input_value(sender_rank, i)) {
      return fmt::format("element {} of {}: got {}, sent {}", i, echo.size(), echo[i],
                         input_value(sender_rank, i));
    }
  }
  return {};
}

}  // namespace ddlsim::kernels
