#pragma once
// Replays a measured kernel case in the simulator with a fitted model: a cluster built in code, an inline
// star of one-GPU nodes whose links are too fast and too short to matter (so alpha and beta come from the fit
// alone), the fitted link class of the measurement as the star's comm model, and the strategy matching the
// kernel:
//
//   ring -> ring, rhd -> rhd, direct -> direct, ps (k servers, the last k of P ranks) -> ps dedicated, P-k
//   workers, ps-colocated -> ps colocated with k = P, pingpong / osu_latency -> a two-node broadcast (one
//   message), mpi_allreduce / nccl / osu_allreduce -> ring (the library's own choice of algorithm is not
//   known).
//
// Every rank is its own node on the star, so the measurement's class (intra or inter) is given to the star's
// inter-node class; gamma goes to both GPU and CPU reductions (the kernels reduce on the host).
#include <string>

#include "sim/calib/fit.hpp"
#include "sim/calib/readers.hpp"

namespace ddlsim {

struct ReplayResult {
  bool replayed = false;
  std::string strategy;  // what the simulator ran
  double predicted_s = 0;
  std::string note;  // why not replayed, or how it was approximated
};

ReplayResult replay_measurement(const Measurement& m, const FitResult& fit);

}  // namespace ddlsim
