#include <algorithm>

#include "kernels.hpp"

namespace ddlsim::kernels {

void ring_allreduce(MPI_Comm comm, std::span<float> output, Scratch& scratch) {
  int ranks = 0;
  int rank = 0;
  MPI_Comm_size(comm, &ranks);
  MPI_Comm_rank(comm, &rank);
  if (ranks == 1) return;

  constexpr int tag = 101;
  const int right = (rank + 1) % ranks;
  const int left = (rank + ranks - 1) % ranks;
  const Partition chunks(output.size(), static_cast<std::size_t>(ranks));
  const auto chunk = [&](int index) { return output.subspan(chunks.offset(index), chunks.size(index)); };
  const std::span<float> incoming = scratch.floats(0, chunks.max_size());

  // Reduce-scatter: in step s, send the partial sum of chunk (rank - s) and add the left neighbour's
  // partial sum of chunk (rank - s - 1). After p-1 steps chunk (rank + 1) holds all p contributions.
  for (int step = 0; step < ranks - 1; ++step) {
    const std::span<float> send = chunk((rank - step + ranks) % ranks);
    const std::span<float> receive = chunk((rank - step - 1 + 2 * ranks) % ranks);
    MPI_Sendrecv(send.data(), mpi_count(send.size()), MPI_FLOAT, right, tag, incoming.data(),
                 mpi_count(receive.size()), MPI_FLOAT, left, tag, comm, MPI_STATUS_IGNORE);
    add_into(receive, incoming.first(receive.size()));
  }
  // All-gather: in step s, pass on the finished chunk (rank + 1 - s), receive chunk (rank - s) in place.
  for (int step = 0; step < ranks - 1; ++step) {
    const std::span<float> send = chunk((rank + 1 - step + ranks) % ranks);
    const std::span<float> receive = chunk((rank - step + ranks) % ranks);
    MPI_Sendrecv(send.data(), mpi_count(send.size()), MPI_FLOAT, right, tag, receive.data(),
                 mpi_count(receive.size()), MPI_FLOAT, left, tag, comm, MPI_STATUS_IGNORE);
  }
}

}  // namespace ddlsim::kernels
