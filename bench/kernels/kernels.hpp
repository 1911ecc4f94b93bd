#pragma once
// The communication kernels. Allreduce kernels work in place, like the allreduce on gradient buckets in
// PyTorch-DDP and Horovod (MPI_IN_PLACE): `output` holds this rank's gradient when the kernel starts (the
// caller copies it there before the clock starts) and the element-wise float sum over the contributing ranks
// when it returns. `input` is the same gradient, read-only, for kernels that must send the original after
// they started summing into `output` (direct, the parameter-server push).

#include <algorithm>
#include <cassert>
#include <climits>
#include <cstddef>
#include <span>

#include <mpi.h>

#include "scratch.hpp"

namespace ddlsim::kernels {

// Ring allreduce (Patarasuk & Yuan): p-1 reduce-scatter steps then p-1 all-gather steps, each moving
// one of p nearly equal chunks to the right neighbour. Any p; the count need not divide by p.
void ring_allreduce(MPI_Comm comm, std::span<float> output, Scratch& scratch);

// Rabenseifner: reduce-scatter by recursive halving, all-gather by recursive doubling. p must be a
// power of two.
void rhd_allreduce(MPI_Comm comm, std::span<float> output, Scratch& scratch);

// Naive direct allreduce: every rank sends its whole buffer to every other rank (p(p-1) messages), in
// p-1 pairwise-exchange rounds, and sums what it receives.
void direct_allreduce(MPI_Comm comm, std::span<const float> input, std::span<float> output, Scratch& scratch);

// The library's own MPI_Allreduce, as the reference: out of place (for the untimed reference sums) and in
// place (MPI_IN_PLACE on `output`, the timed kernel).
void library_allreduce(MPI_Comm comm, std::span<const float> input, std::span<float> output);
void library_allreduce_in_place(MPI_Comm comm, std::span<float> output);

// Who is worker and who serves which shard in a parameter-server exchange.
class PsLayout {
 public:
  // Dedicated: the last `servers` ranks only serve, the others only work.
  static PsLayout dedicated(int ranks, int servers) { return PsLayout(ranks, servers, false); }
  // Colocated: every rank works and serves the shard numbered like itself (servers = ranks).
  static PsLayout colocated(int ranks) { return PsLayout(ranks, ranks, true); }

  int ranks() const { return ranks_; }
  int servers() const { return servers_; }
  int workers() const { return colocated_ ? ranks_ : ranks_ - servers_; }
  bool is_worker(int rank) const { return rank < workers(); }
  int server_rank(int shard) const { return colocated_ ? shard : workers() + shard; }
  // The shard a rank serves, or -1.
  int shard_of(int rank) const {
    if (colocated_) return rank;
    return rank >= workers() ? rank - workers() : -1;
  }

 private:
  PsLayout(int ranks, int servers, bool colocated)
      : ranks_(ranks), servers_(servers), colocated_(colocated) {}
  int ranks_;
  int servers_;
  bool colocated_;
};

// Parameter server push/pull: each worker pushes shard j of its gradient to server j; a server sums
// the shards of all workers as they arrive and sends the sum back to every worker. Only workers'
// `input` and `output` are used; the result is the sum over workers.
void ps_allreduce(MPI_Comm comm, const PsLayout& layout, std::span<const float> input,
                  std::span<float> output, Scratch& scratch);

// Ranks 0 and 1 bounce `buffer` once (0 sends, 1 echoes into `echo` and back); other ranks idle.
// On rank 0, `echo` receives the returned message.
void pingpong(MPI_Comm comm, std::span<const float> buffer, std::span<float> echo);

// n elements split into `parts` contiguous chunks whose sizes differ by at most one.
class Partition {
 public:
  Partition(std::size_t count, std::size_t parts) : count_(count), parts_(parts) {}
  std::size_t offset(std::size_t part) const {
    return part * (count_ / parts_) + std::min(part, count_ % parts_);
  }
  std::size_t size(std::size_t part) const { return count_ / parts_ + (part < count_ % parts_ ? 1 : 0); }
  std::size_t max_size() const { return size(0); }

 private:
  std::size_t count_;
  std::size_t parts_;
};

// output[i] += input[i]
void add_into(std::span<float> output, std::span<const float> input);

// Element counts travel as MPI int counts; the option parser keeps sizes below INT_MAX elements.
inline int mpi_count(std::size_t count) {
  assert(count <= static_cast<std::size_t>(INT_MAX));
  return static_cast<int>(count);
}

}  // namespace ddlsim::kernels
