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
#include <vector>

#include "sim/calib/fit.hpp"
#include "sim/calib/readers.hpp"
#include "sim/net/cluster.hpp"

namespace ddlsim {

struct ReplayResult {
  bool replayed = false;
  std::string strategy;  // what the simulator ran
  double predicted_s = 0;
  std::string note;  // why not replayed, or how it was approximated
};

ReplayResult replay_measurement(const Measurement& m, const FitResult& fit);

// On the cluster the data came from (`ddlsim calibrate --topology`).
//
// The comm model `comm: {calibration: FILE}` gives a cluster whose own model is `base`: each fitted class's
// ranges replace the base's (alpha, bandwidth 1/beta, efficiency 1); the fitted reduce ranges replace its
// reductions when gamma was measured; a gamma folded into the bandwidths zeroes its GPU reductions; NCCL's
// protocol model is off (the fit prices the measured library's messages, its protocols included).
CommModel calibrated_comm(const CommModel& base, const FitResult& fit);

// Why a measurement's rank layout is not one `cluster` has: ranks per node other than its GPUs per node,
// more nodes than it has, a ping-pong between nodes on a one-node cluster or inside a node of one GPU; ""
// when it has it.
std::string cluster_layout_mismatch(const Measurement& m, const ClusterConfig& cluster);

// The messages on a measurement's critical path on `cluster` (as many nodes as the measurement, its ranks
// per node the cluster's GPUs per node): cost_terms with the channels the simulator's ring runs across
// those nodes (one per distinct NIC of a node's GPUs, at most one per GPU); a ping-pong's offset is its
// route's wire latency. Offsets of collectives start at 0 (fit_on_cluster finds them).
CostTerms cluster_cost_terms(const Measurement& m, const ClusterConfig& cluster);

// A measurement replayed on `cluster` with `comm`: ring-modelled allreduces (ring, nccl-tests, OSU, MPI) as
// the ring strategy, rhd as rhd, over m.nodes nodes; a ping-pong as one message alone on its route (route
// latency + alpha, then the flow at its rate: what the engine gives one message). Not replayed: other
// algorithms, and a layout the cluster does not have (ranks per node other than its GPUs per node).
ReplayResult replay_on_cluster(const Measurement& m, const ClusterConfig& cluster, const CommModel& comm);

// Fit through the simulator: fit the closed forms of cluster_cost_terms, replay every fit row on the
// cluster with the result, take the difference (what the cluster adds: wire latency on every message,
// pipeline fill) as that row's offset, and refit, until the closed forms with their offsets equal the
// replays (to 1e-6 of the measured times; at most 12 passes). A file fitted so replays its own fit set in a
// scenario on that cluster as the fit's residuals say. The notes say how many passes it took, and where it
// did not converge (times below what the cluster's links allow).
FitResult fit_on_cluster(const std::vector<Measurement>& ms, FitOptions options,
                         const ClusterConfig& cluster);

}  // namespace ddlsim
