#pragma once
// Deterministic gradients whose sums are exact in float32, and the check of a kernel's result.

#include <cstddef>
#include <span>
#include <string>

namespace ddlsim::kernels {

// Element i of rank r's gradient: 1 + (r mod 13) + (i mod 251)/4. All values and all partial sums are
// multiples of 1/4 below 76·p, exact in float32 (24-bit significand) for p up to 55,000 ranks in any
// order of addition, so a correct kernel matches the closed form bit for bit.
constexpr int max_exact_ranks = 55000;
float input_value(int rank, std::size_t index);
void fill_input(int rank, std::span<float> buffer);

// The sum of element i over ranks 0 .. contributors-1, in closed form.
double expected_sum(int contributors, std::size_t index);

// Describes the first element of `output` that differs from the closed form or from `reference`
// (the MPI_Allreduce result); empty when all match.
std::string find_mismatch(std::span<const float> output, int contributors, std::span<const float> reference);

// Describes the first element where a bounced message differs from `sender_rank`'s gradient; empty when
// equal.
std::string find_echo_mismatch(std::span<const float> echo, int sender_rank);

}  // namespace ddlsim::kernels
