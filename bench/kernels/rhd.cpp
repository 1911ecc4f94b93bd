#include <algorithm>
#include <vector>

#include "kernels.hpp"

namespace ddlsim::kernels {
namespace {

struct Range {
  std::size_t begin;
  std::size_t end;
  std::size_t size() const { return end - begin; }
};

void exchange(MPI_Comm comm, int partner, std::span<const float> send, std::span<float> receive) {
  constexpr int tag = 102;
  MPI_Sendrecv(send.data(), mpi_count(send.size()), MPI_FLOAT, partner, tag, receive.data(),
               mpi_count(receive.size()), MPI_FLOAT, partner, tag, comm, MPI_STATUS_IGNORE);
}

}  // namespace

void rhd_allreduce(MPI_Comm comm, std::span<float> output, Scratch& scratch) {
  int ranks = 0;
  int rank = 0;
  MPI_Comm_size(comm, &ranks);
  MPI_Comm_rank(comm, &rank);
  assert((ranks & (ranks - 1)) == 0 && "recursive halving-doubling needs a power-of-two number of ranks");
  const auto part = [&](Range range) { return output.subspan(range.begin, range.size()); };
  const std::span<float> incoming = scratch.floats(0, (output.size() + 1) / 2);

  // Reduce-scatter by recursive halving: the partner at distance d holds the same range (both made the
  // same choices for the higher bits); the lower rank keeps the lower half, the upper rank the upper.
  std::vector<Range> enclosing;  // the range before each halving, to retrace while doubling
  Range mine{0, output.size()};
  for (int distance = ranks / 2; distance >= 1; distance /= 2) {
    const std::size_t middle = mine.begin + mine.size() / 2;
    const Range lower{mine.begin, middle};
    const Range upper{middle, mine.end};
    const bool keep_lower = (rank & distance) == 0;
    const Range keep = keep_lower ? lower : upper;
    const Range give = keep_lower ? upper : lower;
    exchange(comm, rank ^ distance, part(give), incoming.first(keep.size()));
    add_into(part(keep), incoming.first(keep.size()));
    enclosing.push_back(mine);
    mine = keep;
  }
  // All-gather by recursive doubling: retrace the halvings, swapping the finished halves.
  for (int distance = 1; distance < ranks; distance *= 2) {
    const Range whole = enclosing.back();
    enclosing.pop_back();
    const Range other =
        mine.begin == whole.begin ? Range{mine.end, whole.end} : Range{whole.begin, mine.begin};
    exchange(comm, rank ^ distance, part(mine), part(other));
    mine = whole;
  }
}

}  // namespace ddlsim::kernels
