#include <algorithm>

#include "kernels.hpp"

namespace ddlsim::kernels {

void add_into(std::span<float> output, std::span<const float> input) {
  assert(output.size() == input.size());
  float* out = output.data();
  const float* in = input.data();
  for (std::size_t i = 0; i < output.size(); ++i) out[i] += in[i];
}

void library_allreduce_in_place(MPI_Comm comm, std::span<float> output) {
  MPI_Allreduce(MPI_IN_PLACE, output.data(), mpi_count(output.size()), MPI_FLOAT, MPI_SUM, comm);
}

void library_allreduce(MPI_Comm comm, std::span<const float> input, std::span<float> output) {
  MPI_Allreduce(input.data(), output.data(), mpi_count(input.size()), MPI_FLOAT, MPI_SUM, comm);
}

}  // namespace ddlsim::kernels
