#include <algorithm>
#include <array>
#include <vector>

#include "kernels.hpp"

namespace ddlsim::kernels {
namespace {

constexpr int push_tag = 104;
constexpr int pull_tag = 105;

// Server side of one shard: `sum` starts as the server's own contribution (colocated) or receives the
// first push directly (dedicated), absorbs the other pushes in arrival order, then goes back to every other
// worker. Two receive buffers let the next push arrive while the previous one is being added; with
// MPI_ANY_SOURCE, receives match in the order they were posted, so the first push lands in `sum`.
void serve_shard(MPI_Comm comm, const PsLayout& layout, int rank, std::span<float> sum, bool sum_has_own,
                 Scratch& scratch) {
  int pushes = layout.workers() - (layout.is_worker(rank) ? 1 : 0);
  const int count = mpi_count(sum.size());
  MPI_Request first = MPI_REQUEST_NULL;
  if (!sum_has_own && pushes > 0) {
    MPI_Irecv(sum.data(), count, MPI_FLOAT, MPI_ANY_SOURCE, push_tag, comm, &first);
    --pushes;
  }
  constexpr int depth = 2;
  std::array<std::span<float>, depth> slots{scratch.floats(1, sum.size()), scratch.floats(2, sum.size())};
  std::array<MPI_Request, depth> receives{MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  int posted = 0;
  for (int slot = 0; slot < depth && posted < pushes; ++slot, ++posted) {
    MPI_Irecv(slots[slot].data(), count, MPI_FLOAT, MPI_ANY_SOURCE, push_tag, comm, &receives[slot]);
  }
  MPI_Wait(&first, MPI_STATUS_IGNORE);
  for (int done = 0; done < pushes; ++done) {
    int slot = 0;
    MPI_Waitany(depth, receives.data(), &slot, MPI_STATUS_IGNORE);
    add_into(sum, slots[slot]);
    if (posted < pushes) {
      MPI_Irecv(slots[slot].data(), count, MPI_FLOAT, MPI_ANY_SOURCE, push_tag, comm, &receives[slot]);
      ++posted;
    }
  }
  std::vector<MPI_Request> pulls;
  for (int worker = 0; worker < layout.workers(); ++worker) {
    if (worker == rank) continue;
    pulls.emplace_back();
    MPI_Isend(sum.data(), count, MPI_FLOAT, worker, pull_tag, comm, &pulls.back());
  }
  MPI_Waitall(static_cast<int>(pulls.size()), pulls.data(), MPI_STATUSES_IGNORE);
}

}  // namespace

void ps_allreduce(MPI_Comm comm, const PsLayout& layout, std::span<const float> input,
                  std::span<float> output, Scratch& scratch) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const Partition shards(input.size(), static_cast<std::size_t>(layout.servers()));

  // Worker side: post the pull receives first, then push every shard. Worker w starts with server
  // w mod k so that the pushes of all workers do not queue at server 0 first.
  std::vector<MPI_Request> requests;
  requests.reserve(2 * static_cast<std::size_t>(layout.servers()));
  if (layout.is_worker(rank)) {
    for (int i = 0; i < layout.servers(); ++i) {
      const int shard = (rank + i) % layout.servers();
      const int server = layout.server_rank(shard);
      if (server == rank) continue;
      const std::size_t offset = shards.offset(shard);
      const int count = mpi_count(shards.size(shard));
      MPI_Request pull = MPI_REQUEST_NULL;
      MPI_Request push = MPI_REQUEST_NULL;
      MPI_Irecv(output.data() + offset, count, MPI_FLOAT, server, pull_tag, comm, &pull);
      MPI_Isend(input.data() + offset, count, MPI_FLOAT, server, push_tag, comm, &push);
      requests.push_back(pull);
      requests.push_back(push);
    }
  }

  if (const int shard = layout.shard_of(rank); shard >= 0) {
    const std::size_t size = shards.size(shard);
    if (layout.is_worker(rank)) {
      // Colocated: the shard is summed in place in the output, which starts as the own gradient.
      serve_shard(comm, layout, rank, output.subspan(shards.offset(shard), size), true, scratch);
    } else {
      serve_shard(comm, layout, rank, scratch.floats(0, size), false, scratch);
    }
  }
  MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
}

}  // namespace ddlsim::kernels
