#pragma once
// Fits the alpha-beta-gamma network model (sim/net/comm_model.hpp) to measurements: per link class (inside
// a node / across nodes) and per message-size range (one to three: e.g. eager, rendezvous in cache,
// rendezvous from memory) a per-message overhead alpha, a per-byte cost beta = 1/bandwidth and a per-byte
// reduction cost gamma for operands of that size:
//
//   ping-pong (one way)      t = a + n b
//   ring allreduce, p ranks  t = 2(p-1) a + 2(p-1)/p n b + (p-1)/p n g        (messages and operands of n/p)
//   Rabenseifner (rhd)       t = 2 log2(p) a + 2(p-1)/p n b + (p-1)/p n g     (messages n/2, n/4, ..., n/p)
//   streaming (osu_bw)       t = gap + n b                                     (per message; gap: pipelined
//   overhead)
//
// Each message pays the alpha and beta of the range its own size falls in (a ring's messages are n/p, not n),
// each reduced operand the gamma of its range. Least squares weighted by 1/t^2 (relative errors), solved
// through the small normal equations; alpha, gap and gamma are kept >= 0 by fixing a negative one at 0 and
// refitting. The least squares are made robust by iterative reweighting (Huber, then Tukey's bisquare): a
// gross outlier gets weight 0 and is reported instead of dragging the fit. The number of ranges and their
// breakpoints (message sizes with three fit rows in every range) minimise the Bayesian information criterion,
// so a range is added only when it pays for its parameters. With ping-pong and allreduce data beta and gamma
// separate; with allreduce data alone (every row with the same gamma/beta ratio) gamma is folded into an
// effective beta, and the result says so. Allreduce results of nccl-tests and OSU are modelled as ring
// (NCCL's default; MPI libraries choose per size, which the fit cannot know).
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "sim/calib/readers.hpp"
#include "sim/net/comm_model.hpp"

namespace ddlsim {

constexpr int kIntraNode = 0;
constexpr int kMaxRanges = 3;  // message-size ranges per link class
constexpr int kInterNode = 1;
const char* link_class_name(int link);  // "intra", "inter"

// The messages one measurement puts on its critical path, in the model's terms.
struct CostTerms {
  struct Messages {
    double count = 0;
    double bytes = 0;  // each
  };
  bool modelled = false;  // false: no closed form here (kernels ps, direct, mpi_allreduce; step times; p < 2)
  int link = kInterNode;
  std::vector<Messages> messages;
  std::vector<Messages> reduces;  // operands reduced on the critical path (gamma), by size
  bool streamed = false;          // osu_bw: the per-message cost is a pipelined gap, not alpha
  // Time the cluster adds on that path that no fitted parameter covers (a fit through the simulator: the
  // routes' wire latency, a ring's pipeline fill); 0 for the closed forms alone.
  double offset_s = 0;
  std::string formula;  // human-readable, for the residual table
};
// `channels`: rings in parallel (a ring across nodes in the simulator, NCCL's channels), each carrying n /
// channels: messages of n / (p channels), and each round reduces `channels` operands of that size.
CostTerms cost_terms(const Measurement& m, uint32_t channels = 1);

struct FitOptions {
  std::vector<double> breakpoints;  // bytes, increasing: the largest message of each range but the last
  bool single_range = false;        // no breakpoint: one range per class
  double max_bytes =
      std::numeric_limits<double>::infinity();              // fit only measurements up to this per-rank size
  int64_t max_ranks = std::numeric_limits<int64_t>::max();  // ... and up to this many ranks
  std::vector<std::string> algorithms;                      // ... and only these algorithms (empty: all)
  // >= 2: hold out every k-th message size of each run (its sizes in increasing order, per algorithm, rank
  // count and kind: positions k-1, 2k-1, ...), a cross-validation of the fit between the sizes it saw.
  int hold_out_every = 0;
  // Per link class (intra, inter): one flow's rate on the cluster where the data were measured (bytes/s; 0:
  // unknown). Used as 1/beta where beta cannot be fitted (a single message size, or times that do not grow).
  double bandwidth[2] = {0, 0};
  // Per measurement, in order (empty: cost_terms(m) of each): the messages on its critical path and the
  // offset on the cluster the data came from (fit_on_cluster, sim/calib/replay).
  std::vector<CostTerms> terms;
};

struct FittedRange {
  double max_bytes = std::numeric_limits<double>::infinity();  // inclusive; infinity for the last range
  double alpha = 0;                                            // seconds per message
  double beta = 0;                                             // seconds per byte
  double gap = 0;                                              // seconds per streamed message (osu_bw only)
  double gamma = 0;  // seconds per byte reduced in operands of this size
  bool alpha_measured = false;
  bool gap_measured = false;
  bool gamma_measured = false;  // a reducing fit row had operands here (else borrowed from a neighbour)
  size_t points = 0;            // fit rows with a message in this range
};

struct FittedClass {
  bool measured = false;
  std::vector<FittedRange> ranges;  // sorted, last unbounded
  const FittedRange& lookup(double bytes) const;
};

struct FitPoint {
  bool modelled = false;   // a closed form exists
  bool in_fit = false;     // used by the fit
  bool outlier = false;    // in the fit's input, but the robust fit gave it weight 0 (see the notes)
  bool predicted = false;  // the fitted parameters cover it (its class was measured)
  double predicted_s = 0;
  double rel_error = 0;  // (predicted - measured) / measured
};

struct FitResult {
  FittedClass link[2];
  bool gamma_measured = false;   // separated from beta
  bool gamma_folded = false;     // allreduce data only: gamma is inside the fitted beta
  CommModel model;               // the fitted classes (unmeasured ones ideal), reduce ranges on GPU and CPU
  std::vector<FitPoint> points;  // one per input measurement, same order
  size_t fit_points = 0;
  double residual_median = 0;  // |relative error| over the fit points (outliers apart)
  double residual_max = 0;
  std::vector<std::string> notes;
  std::string cluster;  // the cluster the fit went through (fit_on_cluster), else empty
};

// Throws InputError when nothing can be fitted (no ping-pong or allreduce data in the selection, or too few
// sizes).
FitResult fit_comm_model(const std::vector<Measurement>& measurements, const FitOptions& options = {});

// Model time of a measurement under fitted parameters, its offset included (NaN when its class was not
// fitted).
double model_time(const CostTerms& terms, const FitResult& fit);

}  // namespace ddlsim
