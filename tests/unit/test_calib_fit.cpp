// The alpha-beta-gamma fit recovers known parameters from data the simulator itself generates, the
// calibration YAML round-trips, and the replay reproduces what it was fitted on.
//
// Synthetic data: one collective on an inline star of one-GPU nodes whose links never bind (1 TB/s, no
// latency), so the comm model alone sets the time. With alpha a, bandwidth 1/b and reduce bandwidth 1/g the
// simulator gives
//   one message (two-node broadcast):  a + n b
//   ring allreduce, p ranks:           2(p-1) a + 2(p-1)/p n b + (p-1)/p n g
//   rhd, p a power of two:             2 log2(p) a + 2(p-1)/p n b + (p-1)/p n g
// and the fit must return a, b, g. Parameters and sizes are chosen so every simulated time is a whole number
// of picoseconds (the simulator's one rounding point), which makes the data exact.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "sim/calib/calibration.hpp"
#include "sim/calib/fit.hpp"
#include "sim/calib/replay.hpp"
#include "sim/config/cluster.hpp"
#include "sim/config/scenario.hpp"
#include "sim/core/error.hpp"
#include "sim/train/collective_workload.hpp"

namespace ddlsim {
namespace {

struct Params {
  double alpha_us;
  double bandwidth_GBps;
};
constexpr double kReduceGBps = 20;  // gamma = 50 ps per byte

// `link_GBps`: each node's star link (1 TB/s never binds; the flow rate makes concurrent messages of a rank
// share it, as the replay assumes).
double simulate(const std::string& collective, const std::string& strategy, int64_t nodes, double bytes,
                Params p, double reduce_GBps = kReduceGBps, double link_GBps = 1000) {
  std::string text = fmt::format(
      "name: synthetic\n"
      "cluster:\n"
      "  nodes: {}\n"
      "  gpus_per_node: 1\n"
      "  gpu: a100-40gb\n"
      "  network: {{kind: star, link: {{bandwidth: {}GB/s, latency: 0us}}}}\n"
      "  comm: {{alpha_inter: {}us, bandwidth_inter: {}GB/s, reduce_bandwidth_gpu: {}GB/s, "
      "reduce_bandwidth_cpu: {}GB/s}}\n"
      "workload: {{collective: {}, bytes: {}B}}\n"
      "strategies: [{}]\n",
      nodes, link_GBps, p.alpha_us, p.bandwidth_GBps, reduce_GBps, reduce_GBps, collective, bytes, strategy);
  Scenario sc = parse_scenario(YamlNode::load_string(text, "synthetic.yaml"));
  return run_collective_workload(sc, sc.strategies[0], nodes).time_s;
}

Measurement make(MeasurementKind kind, const std::string& algorithm, int64_t ranks, double bytes, double t,
                 bool same_node) {
  Measurement m;
  m.file = "synthetic";
  m.tool = "ddlsim-kernels";
  m.kind = kind;
  m.algorithm = algorithm;
  m.ranks = ranks;
  m.ranks_per_node = same_node ? ranks : 1;
  m.nodes = same_node ? 1 : ranks;
  m.bytes = bytes;
  m.time_s = t;
  m.reps = {t};
  m.same_node = same_node;
  return m;
}

Measurement pingpong(double n, Params p, bool same_node) {
  return make(MeasurementKind::PingPong, "pingpong", 2, n, simulate("broadcast", "tree", 2, n, p), same_node);
}
Measurement allreduce(const std::string& algo, int64_t ranks, double n, Params p, bool same_node) {
  return make(MeasurementKind::Allreduce, algo, ranks, n, simulate("allreduce", algo, ranks, n, p),
              same_node);
}

void expect_rel(double got, double want, double tol, const char* what) {
  EXPECT_NEAR(got / want, 1.0, tol) << what << ": got " << got << ", want " << want;
}

// Every fitted range of a class, and the model's reduce ranges, carry one gamma.
void expect_gamma(const FitResult& fit, int link, double gamma) {
  for (const FittedRange& r : fit.link[link].ranges) expect_rel(r.gamma, gamma, 1e-6, "range gamma");
  for (const ReduceRange& r : fit.model.reduce) expect_rel(r.gamma_gpu, gamma, 1e-6, "model gamma");
}

TEST(CalibFit, RecoversAlphaBetaGammaFromSimulatedPingPongAndAllreduce) {
  const Params p{5, 10};  // alpha 5 us, beta 100 ps/B
  std::vector<Measurement> ms;
  for (double n = 1024; n <= 16 * 1048576.0; n *= 4) ms.push_back(pingpong(n, p, false));
  for (int64_t ranks : {2, 4, 8})
    for (double n = 65536; n <= 64 * 1048576.0; n *= 4) ms.push_back(allreduce("ring", ranks, n, p, false));
  for (int64_t ranks : {4, 8})
    for (double n = 65536; n <= 64 * 1048576.0; n *= 16) ms.push_back(allreduce("rhd", ranks, n, p, false));
  FitOptions o;
  o.single_range = true;
  FitResult fit = fit_comm_model(ms, o);
  ASSERT_TRUE(fit.link[kInterNode].measured);
  EXPECT_FALSE(fit.link[kIntraNode].measured);
  ASSERT_EQ(fit.link[kInterNode].ranges.size(), 1u);
  const FittedRange& r = fit.link[kInterNode].ranges[0];
  expect_rel(r.alpha, 5e-6, 1e-6, "alpha");
  expect_rel(r.beta, 1e-10, 1e-6, "beta");
  EXPECT_TRUE(fit.gamma_measured);
  EXPECT_FALSE(fit.gamma_folded);
  expect_gamma(fit, kInterNode, 1 / (kReduceGBps * 1e9));
  EXPECT_EQ(fit.fit_points, ms.size());
  EXPECT_LT(fit.residual_max, 1e-6);
  // The CommModel carries the same numbers.
  EXPECT_EQ(fit.model.inter.ranges.size(), 1u);
  EXPECT_EQ(fit.model.inter.ranges[0].alpha, Time::us(5));
  expect_rel(fit.model.inter.ranges[0].bandwidth, 1e10, 1e-6, "bandwidth");
}

// Eager (<= 64 KiB messages) and rendezvous ranges: each simulated case uses the range its messages fall in
// (every message of a ring or a ping-pong has one size), so the data are exactly the two-range model.
constexpr double kBreak = 65536;
const Params kEager{2, 4};           // 250 ps/B
const Params kRendezvous{10, 12.5};  // 80 ps/B
Params range_of(double message) {
  return message <= kBreak ? kEager : kRendezvous;
}

std::vector<Measurement> two_range_data() {
  std::vector<Measurement> ms;
  for (double n = 1024; n <= 16 * 1048576.0; n *= 2) ms.push_back(pingpong(n, range_of(n), true));
  for (int64_t ranks : {2, 4})
    for (double n = 4096; n <= 64 * 1048576.0; n *= 2)
      ms.push_back(allreduce("ring", ranks, n, range_of(n / static_cast<double>(ranks)), true));
  return ms;
}

void expect_two_ranges(const FitResult& fit) {
  const FittedClass& c = fit.link[kIntraNode];
  ASSERT_TRUE(c.measured);
  ASSERT_EQ(c.ranges.size(), 2u);
  EXPECT_EQ(c.ranges[0].max_bytes, kBreak);
  EXPECT_TRUE(std::isinf(c.ranges[1].max_bytes));
  expect_rel(c.ranges[0].alpha, 2e-6, 1e-6, "eager alpha");
  expect_rel(c.ranges[0].beta, 1 / 4e9, 1e-6, "eager beta");
  expect_rel(c.ranges[1].alpha, 10e-6, 1e-6, "rendezvous alpha");
  expect_rel(c.ranges[1].beta, 1 / 12.5e9, 1e-6, "rendezvous beta");
  expect_gamma(fit, kIntraNode, 1 / (kReduceGBps * 1e9));
  EXPECT_LT(fit.residual_max, 1e-6);
}

TEST(CalibFit, FindsTheBreakpointBetweenEagerAndRendezvous) {
  FitResult fit = fit_comm_model(two_range_data());
  expect_two_ranges(fit);
  ASSERT_EQ(fit.model.intra.ranges.size(), 2u);
  EXPECT_EQ(fit.model.intra.ranges[0].max_bytes, kBreak);
  EXPECT_EQ(fit.model.intra.lookup(kBreak + 1).alpha, Time::us(10));
}

// Hold-out by size: with hold_out_every k, the sizes at positions k-1, 2k-1, ... of each run (ping-pong; ring
// on 2 ranks; ring on 4 ranks) stay out of the fit, the rest fit, and the held-out rows are predicted. On
// exact two-range data, with k = 3, the fit still finds both ranges and predicts every held-out size to 1e-6.
TEST(CalibFit, HoldsOutEveryKthSizeOfARun) {
  std::vector<Measurement> ms = two_range_data();
  FitOptions o;
  o.hold_out_every = 3;
  FitResult fit = fit_comm_model(ms, o);
  expect_two_ranges(fit);
  std::map<std::pair<std::string, int64_t>, int> position;
  size_t held = 0;
  for (size_t i = 0; i < ms.size(); ++i) {
    int at = position[{ms[i].algorithm, ms[i].ranks}]++;  // (each run's sizes increase in the data)
    SCOPED_TRACE(fmt::format("{} p={} n={}", ms[i].algorithm, ms[i].ranks, ms[i].bytes));
    EXPECT_EQ(fit.points[i].in_fit, at % 3 != 2);
    if (fit.points[i].in_fit) continue;
    ++held;
    ASSERT_TRUE(fit.points[i].predicted);
    EXPECT_NEAR(fit.points[i].predicted_s / ms[i].time_s, 1, 1e-6);
  }
  EXPECT_EQ(held, 5u + 5u + 5u);  // 15 sizes per run: positions 2, 5, 8, 11, 14
}

TEST(CalibFit, UsesAGivenBreakpoint) {
  FitOptions o;
  o.breakpoints = {kBreak};
  expect_two_ranges(fit_comm_model(two_range_data(), o));
  // A wrong breakpoint cannot explain the data.
  o.breakpoints = {16384};
  EXPECT_GT(fit_comm_model(two_range_data(), o).residual_max, 1e-3);
}

// Three ranges, as on a CPU whose caches hold messages up to a few MiB: eager (<= 64 KiB), rendezvous from
// cache (<= 4 MiB) and rendezvous from memory, where copies and reductions run slower. Each case's messages
// and operands (n/p for a ring) have one size, so the data are exactly the three-range model with a gamma per
// range:
//   t = a_r + n b_r (ping-pong),  2(p-1) a_r + 2(p-1)/p n b_r + (p-1)/p n g_r (ring),  r = range of n/p.
constexpr double kCacheBreak = 4 * 1048576.0;
const Params kMemory{10, 6.25};  // 160 ps/B
constexpr double kMemoryReduceGBps = 5;
std::vector<Measurement> three_range_data() {
  auto params = [](double m) { return m <= kBreak ? kEager : m <= kCacheBreak ? kRendezvous : kMemory; };
  auto reduce = [](double m) { return m <= kCacheBreak ? kReduceGBps : kMemoryReduceGBps; };
  std::vector<Measurement> ms;
  for (double n = 1024; n <= 64 * 1048576.0; n *= 2) ms.push_back(pingpong(n, params(n), true));
  for (int64_t ranks : {2, 4})
    for (double n = 4096; n <= 256 * 1048576.0; n *= 2) {
      double m = n / static_cast<double>(ranks);
      ms.push_back(make(MeasurementKind::Allreduce, "ring", ranks, n,
                        simulate("allreduce", "ring", ranks, n, params(m), reduce(m)), true));
    }
  return ms;
}

TEST(CalibFit, FindsThreeRangesWithAGammaEach) {
  FitResult fit = fit_comm_model(three_range_data());
  const FittedClass& c = fit.link[kIntraNode];
  ASSERT_EQ(c.ranges.size(), 3u);
  EXPECT_EQ(c.ranges[0].max_bytes, kBreak);
  EXPECT_EQ(c.ranges[1].max_bytes, kCacheBreak);
  expect_rel(c.ranges[0].beta, 1 / 4e9, 1e-6, "eager beta");
  expect_rel(c.ranges[1].alpha, 10e-6, 1e-6, "cache alpha");
  expect_rel(c.ranges[1].beta, 1 / 12.5e9, 1e-6, "cache beta");
  expect_rel(c.ranges[2].alpha, 10e-6, 1e-6, "memory alpha");
  expect_rel(c.ranges[2].beta, 1 / 6.25e9, 1e-6, "memory beta");
  expect_rel(c.ranges[1].gamma, 1 / (kReduceGBps * 1e9), 1e-6, "cache gamma");
  expect_rel(c.ranges[2].gamma, 1 / (kMemoryReduceGBps * 1e9), 1e-6, "memory gamma");
  EXPECT_LT(fit.residual_max, 1e-6);
  // The model reduces by operand size; the replay, which simulates each case with all ranges, is exact.
  ASSERT_EQ(fit.model.reduce.size(), 3u);
  EXPECT_NEAR(fit.model.reduce_seconds(1e6, 1e6, false), 1e6 / (kReduceGBps * 1e9), 1e-15);
  EXPECT_NEAR(fit.model.reduce_seconds(1e8, 1e8, false), 1e8 / (kMemoryReduceGBps * 1e9), 1e-15);
  for (const Measurement& m : three_range_data()) {
    SCOPED_TRACE(fmt::format("{} p={} n={}", m.algorithm, m.ranks, m.bytes));
    ReplayResult r = replay_measurement(m, fit);
    ASSERT_TRUE(r.replayed) << r.note;
    EXPECT_NEAR(r.predicted_s / m.time_s, 1, 1e-8);
  }
  // Two-range data stay two ranges: a third must pay for its parameters (BIC), and exact data cannot.
  EXPECT_EQ(fit_comm_model(two_range_data()).link[kIntraNode].ranges.size(), 2u);
}

TEST(CalibFit, OneOutlierIsReportedAndDoesNotDragTheFit) {
  // Ping-pong t = a + n·b (a = 5 us, 1/b = 10 GB/s) over 12 sizes with ±1% deterministic noise, sin(7k), and
  // the largest point measured 10x too slow (a stalled run). Plain least squares on relative errors pull b
  // toward the outlier by far more than the noise; the robust fit keeps a and b within it, gives the point
  // weight 0 and names it (file:line) in the notes and as an outlier point.
  const Params p{5, 10};
  std::vector<Measurement> ms;
  int k = 0;
  for (double n = 1024; n <= 64 * 1048576.0; n *= 2.5, ++k) {
    Measurement m = pingpong(std::round(n), p, false);
    m.line = k + 1;
    m.time_s *= 1 + 0.01 * std::sin(7.0 * k);
    ms.push_back(m);
  }
  size_t bad = ms.size() - 1;
  ms[bad].time_s *= 10;
  FitOptions o;
  o.single_range = true;
  FitResult fit = fit_comm_model(ms, o);
  const FittedRange& r = fit.link[kInterNode].ranges.at(0);
  expect_rel(r.beta, 1e-10, 0.01, "beta");
  expect_rel(r.alpha, 5e-6, 0.03, "alpha");
  for (size_t i = 0; i < ms.size(); ++i) EXPECT_EQ(fit.points[i].outlier, i == bad) << i;
  bool named = false;
  for (const std::string& note : fit.notes)
    named = named || (note.find("1 outlier left out of the fit") != std::string::npos &&
                      note.find(fmt::format("synthetic:{}", ms[bad].line)) != std::string::npos);
  EXPECT_TRUE(named) << fmt::format("{}", fmt::join(fit.notes, "\n"));
  EXPECT_LT(fit.residual_max, 0.02);  // the outlier apart
}

TEST(CalibFit, AFoldedFitOnATopologyCountsTheReductionOnce) {
  // A calibration whose gamma was folded into beta (allreduce data alone) used on a topology that gives a GPU
  // reduction rate: the fitted bandwidth already holds the reduction, so the ring allreduce on p = 4 ranks is
  //   2(p-1)a + 2(p-1)/p n b  (a = 5 us, 1/b = 10 GB/s, n = 64 MiB), with no (p-1)/p n g term;
  // the same file without "gamma: folded" keeps the topology's gamma (1/g = 20 GB/s): + (p-1)/p n g.
  const double a = 5e-6, b = 1e-10, g = 1 / (kReduceGBps * 1e9), n = 64 * 1048576.0, p = 4;
  const std::filesystem::path dir = ::testing::TempDir();
  const std::string topo = (dir / fmt::format("ddlsim-folded-topo-{}.yaml", getpid())).string();
  std::ofstream(topo) << fmt::format(
      "name: star\ngpus_per_node: 1\ngpu: a100-40gb\n"
      "network: {{kind: star, link: {{bandwidth: 1000GB/s, latency: 0us}}}}\n"
      "comm: {{reduce_bandwidth_gpu: {}GB/s}}\n",
      kReduceGBps);
  for (bool folded : {true, false}) {
    SCOPED_TRACE(folded);
    std::string cal = (dir / fmt::format("ddlsim-folded-{}-{}.yaml", getpid(), folded)).string();
    std::ofstream(cal) << "comm:\n  inter:\n    - {alpha: 5us, bandwidth: 10GB/s}\n"
                       << (folded ? "fit: {points: 9, gamma: folded}\n" : "fit: {points: 9}\n");
    std::string text = fmt::format(
        "name: t\n"
        "cluster: {{topology: {}, nodes: 4, comm: {{calibration: {}}}}}\n"
        "workload: {{collective: allreduce, bytes: {}B}}\n"
        "strategies: [ring]\n",
        topo, cal, n);
    Scenario sc = parse_scenario(YamlNode::load_string(text, "t.yaml"));
    std::filesystem::remove(cal);
    double want = 2 * (p - 1) * a + 2 * (p - 1) / p * n * b + (folded ? 0 : (p - 1) / p * n * g);
    EXPECT_NEAR(run_collective_workload(sc, sc.strategies[0], 4).time_s, want, want * 1e-9);
  }
  std::filesystem::remove(topo);
}

TEST(CalibFit, ACalibrationPricesItsOwnMessagesUnderNcclProtocols) {
  // A topology that runs NCCL's protocols, with a calibration file (gamma folded): the fit already prices the
  // measured library's messages, protocols included, so the ring on p = 4 ranks is its closed form
  //   2(p-1)a + 2(p-1)/p n b  (a = 5 us, 1/b = 10 GB/s, n = 64 MiB),
  // not NCCL's step latencies; `protocols: nccl` beside the calibration turns them back on.
  const double a = 5e-6, b = 1e-10, n = 64 * 1048576.0, p = 4;
  const std::filesystem::path dir = ::testing::TempDir();
  const std::string topo = (dir / fmt::format("ddlsim-nccl-topo-{}.yaml", getpid())).string();
  std::ofstream(topo) << "name: star\ngpus_per_node: 1\ngpu: a100-40gb\n"
                         "network: {kind: star, link: {bandwidth: 1000GB/s, latency: 0us}}\n"
                         "comm: {protocols: nccl}\n";
  const std::string cal = (dir / fmt::format("ddlsim-nccl-cal-{}.yaml", getpid())).string();
  std::ofstream(cal)
      << "comm:\n  inter:\n    - {alpha: 5us, bandwidth: 10GB/s}\nfit: {points: 9, gamma: folded}\n";
  for (const char* beside : {"", ", protocols: nccl"}) {
    SCOPED_TRACE(beside);
    std::string text = fmt::format(
        "name: t\n"
        "cluster: {{topology: {}, nodes: 4, comm: {{calibration: {}{}}}}}\n"
        "workload: {{collective: allreduce, bytes: {}B}}\n"
        "strategies: [ring]\n",
        topo, cal, beside, n);
    Scenario sc = parse_scenario(YamlNode::load_string(text, "t.yaml"));
    const double want = 2 * (p - 1) * a + 2 * (p - 1) / p * n * b;
    const double got = run_collective_workload(sc, sc.strategies[0], 4).time_s;
    if (*beside == '\0')
      EXPECT_NEAR(got, want, want * 1e-9);
    else
      EXPECT_GT(std::abs(got - want), want * 1e-3);  // NCCL's step latencies, not a
  }
  std::filesystem::remove(cal);
  std::filesystem::remove(topo);
}

TEST(CalibFit, OneMessageSizeFitsAlphaWithBetaFromTheCluster) {
  // Ping-pong at one size n = 1 MiB, t = a + n·b (a = 5 us, 1/b = 10 GB/s), three repeats: a and b cannot
  // be told apart, so without a cluster the fit is refused, naming the cause; with the cluster's flow rate
  // 1/b given, a = t - n·b exactly.
  const Params p{5, 10};
  std::vector<Measurement> ms(3, pingpong(1048576, p, false));
  try {
    fit_comm_model(ms);
    ADD_FAILURE() << "a single message size was fitted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("one message size (1048576 B)"), std::string::npos) << e.what();
  }
  FitOptions o;
  o.bandwidth[kInterNode] = 10e9;
  FitResult fit = fit_comm_model(ms, o);
  const FittedRange& r = fit.link[kInterNode].ranges.at(0);
  expect_rel(r.beta, 1e-10, 1e-12, "beta");
  expect_rel(r.alpha, 5e-6, 1e-6, "alpha");
}

TEST(CalibFit, SeparatesLinkClasses) {
  const Params intra{1, 20}, inter{4, 5};  // 50 ps/B and 200 ps/B
  std::vector<Measurement> ms;
  for (double n = 1024; n <= 16 * 1048576.0; n *= 4) {
    ms.push_back(pingpong(n, intra, true));
    ms.push_back(pingpong(n, inter, false));
  }
  for (double n = 65536; n <= 64 * 1048576.0; n *= 4) {
    ms.push_back(allreduce("ring", 2, n, intra, true));
    ms.push_back(allreduce("ring", 4, n, inter, false));
  }
  FitOptions o;
  o.single_range = true;
  FitResult fit = fit_comm_model(ms, o);
  ASSERT_TRUE(fit.link[kIntraNode].measured && fit.link[kInterNode].measured);
  expect_rel(fit.link[kIntraNode].ranges[0].alpha, 1e-6, 1e-6, "intra alpha");
  expect_rel(fit.link[kIntraNode].ranges[0].beta, 1 / 20e9, 1e-6, "intra beta");
  expect_rel(fit.link[kInterNode].ranges[0].alpha, 4e-6, 1e-6, "inter alpha");
  expect_rel(fit.link[kInterNode].ranges[0].beta, 1 / 5e9, 1e-6, "inter beta");
  expect_gamma(fit, kIntraNode, 1 / (kReduceGBps * 1e9));
  expect_gamma(fit, kInterNode, 1 / (kReduceGBps * 1e9));
}

TEST(CalibFit, FoldsGammaWhenOnlyOneRankCountOfAllreduceIsKnown) {
  // Ring on p = 4: 6a + (3/2) n b + (3/4) n g = 6a + (3/2) n (b + g/2): b and g cannot be told apart, and the
  // fitted beta is the effective b + g/2.
  const Params p{5, 10};
  std::vector<Measurement> ms;
  for (double n = 4096; n <= 64 * 1048576.0; n *= 4) ms.push_back(allreduce("ring", 4, n, p, false));
  FitOptions o;
  o.single_range = true;
  FitResult fit = fit_comm_model(ms, o);
  EXPECT_TRUE(fit.gamma_folded);
  EXPECT_FALSE(fit.gamma_measured);
  EXPECT_EQ(fit.model.reduce.at(0).gamma_gpu, 0);
  const FittedRange& r = fit.link[kInterNode].ranges[0];
  expect_rel(r.alpha, 5e-6, 1e-6, "alpha");
  expect_rel(r.beta, 1e-10 + 0.5 / (kReduceGBps * 1e9), 1e-6, "effective beta");
  bool said = false;
  for (const std::string& n : fit.notes) said = said || n.find("gamma folded") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(CalibFit, SelectionDecidesTheFitSet) {
  std::vector<Measurement> ms = two_range_data();
  ms.push_back(allreduce("ring", 8, 1048576, kRendezvous, true));
  FitOptions o;
  o.max_bytes = 4 * 1048576.0;
  o.max_ranks = 2;
  FitResult fit = fit_comm_model(ms, o);
  for (size_t i = 0; i < ms.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(fit.points[i].in_fit, ms[i].bytes <= o.max_bytes && ms[i].ranks <= 2);
    EXPECT_TRUE(fit.points[i].predicted);
    EXPECT_NEAR(fit.points[i].rel_error, 0, 1e-6);  // held-out points of an exact model are exact too
  }
}

TEST(CalibFit, NothingToFitIsAnInputError) {
  Measurement step = make(MeasurementKind::Step, "step", 8, 0, 0.25, false);
  EXPECT_THROW(fit_comm_model({step}), InputError);
  FitOptions o;
  o.max_ranks = 1;
  EXPECT_THROW(fit_comm_model(two_range_data(), o), InputError);
}

TEST(CalibFit, StreamedBandwidthHasItsOwnGap) {
  // osu_bw: t = gap + n b per message; with ping-pong data a and b, the gap comes out on its own.
  std::vector<Measurement> ms;
  const Params p{3, 8};
  for (double n = 1024; n <= 4 * 1048576.0; n *= 4) {
    ms.push_back(pingpong(n, p, false));
    Measurement bw = make(MeasurementKind::Bandwidth, "osu_bw", 2, n, 0.5e-6 + n / 8e9, false);
    ms.push_back(bw);
  }
  FitOptions o;
  o.single_range = true;
  FitResult fit = fit_comm_model(ms, o);
  const FittedRange& r = fit.link[kInterNode].ranges[0];
  expect_rel(r.alpha, 3e-6, 1e-6, "alpha");
  expect_rel(r.beta, 1 / 8e9, 1e-6, "beta");
  ASSERT_TRUE(r.gap_measured);
  expect_rel(r.gap, 0.5e-6, 1e-6, "gap");
}

TEST(CalibReplay, ReproducesTheSimulatedRunsItWasFittedOn) {
  std::vector<Measurement> ms = two_range_data();
  FitResult fit = fit_comm_model(ms);
  for (const Measurement& m : ms) {
    SCOPED_TRACE(fmt::format("{} p={} n={}", m.algorithm, m.ranks, m.bytes));
    ReplayResult r = replay_measurement(m, fit);
    ASSERT_TRUE(r.replayed) << r.note;
    EXPECT_NEAR(r.predicted_s / m.time_s, 1, 1e-8);
  }
}

// Fitting through the cluster the data came from. Two nodes of four GPUs (NVLink mesh, two NICs, PCIe), a
// star of 25 GB/s links; every link has latency. Ring allreduces across both nodes simulated with alpha_inter
// 5 us and 10 GB/s per flow are the "measurements". The simulator's ring there runs two channels (one per
// NIC), each round's critical message an inter-node one of n/(2p) bytes behind the route's wire latency
// (PCIe 0.5 us + two star links 1 us + PCIe 0.5 us). Fitted through the cluster (its own inter class replaced
// by the fit: here none, alpha 0, no bound), the closed form with the offsets it finds equals every replay,
// alpha and beta come back, and a scenario with the fitted model replays the data. The closed-form fit alone
// (one ring of n/p messages, the wire latency inside alpha) replays the large sizes at half their time: the
// two channels carry the bytes in parallel.
TEST(CalibReplay, FitsThroughTheClusterItWasMeasuredOn) {
  auto cluster_yaml = [](const std::string& comm, const char* star = "25GB/s") {
    return fmt::format(
        "{{max_nodes: 2, gpu: a100-40gb, node: {{gpus: 4, nics: 2, gpu_link: {{kind: nvlink-mesh, bandwidth: "
        "100GB/s, latency: 1us}}, pcie: {{bandwidth: 31.5GB/s, latency: 0.5us}}}}, network: {{kind: star, "
        "link: {{bandwidth: {}, latency: 1us}}}}, comm: {}}}",
        star, comm);
  };
  const std::string truth = "{alpha_intra: 1us, alpha_inter: 5us, bandwidth_inter: 10GB/s}";
  ClusterConfig measured = parse_cluster(YamlNode::load_string(cluster_yaml(truth), "truth"), false);
  ClusterConfig topology =
      parse_cluster(YamlNode::load_string(cluster_yaml("{alpha_intra: 1us}"), "t"), false);
  Strategy ring;
  ring.name = ring.label = "ring";
  ring.options = AllreduceOptions{};
  std::vector<Measurement> ms;
  for (double n = 1024; n <= 256.0 * 1024 * 1024; n *= 8) {
    Measurement m =
        make(MeasurementKind::Allreduce, "nccl", 8, n,
             run_collective_workload(measured, {CollectiveKind::Allreduce, n}, ring, 2).time_s, false);
    m.tool = "nccl-tests";
    m.ranks_per_node = 4;
    m.nodes = 2;
    ms.push_back(m);
  }
  EXPECT_EQ(cluster_cost_terms(ms[0], topology).messages[0].bytes, 1024.0 / 16);  // n / (p x 2 channels)
  FitResult fit = fit_on_cluster(ms, {}, topology);
  ASSERT_TRUE(fit.link[kInterNode].measured);
  ASSERT_EQ(fit.link[kInterNode].ranges.size(), 1u);
  expect_rel(fit.link[kInterNode].ranges[0].alpha, 5e-6, 1e-6, "alpha");
  expect_rel(1 / fit.link[kInterNode].ranges[0].beta, 10e9, 1e-6, "bandwidth");
  EXPECT_EQ(fit.cluster, topology.name);
  const CommModel comm = calibrated_comm(topology.comm, fit);
  for (size_t i = 0; i < ms.size(); ++i) {
    SCOPED_TRACE(fmt::format("n={}", ms[i].bytes));
    ReplayResult r = replay_on_cluster(ms[i], topology, comm);
    ASSERT_TRUE(r.replayed) << r.note;
    EXPECT_NEAR(r.predicted_s / ms[i].time_s, 1, 1e-6);
    EXPECT_NEAR(fit.points[i].predicted_s / ms[i].time_s, 1, 1e-6);  // closed form + offset
  }
  FitResult alone = fit_comm_model(ms);
  double big = replay_on_cluster(ms.back(), topology, calibrated_comm(topology.comm, alone)).predicted_s;
  EXPECT_LT(big / ms.back().time_s, 0.6);
  // Through a cluster whose star links (5 GB/s) carry less than the data's 10 GB/s per flow, the notes say
  // that the fitted rate is above the route's, where the simulator caps it.
  ClusterConfig slow =
      parse_cluster(YamlNode::load_string(cluster_yaml("{alpha_intra: 1us}", "5GB/s"), "slow"), false);
  FitResult capped = fit_on_cluster(ms, {}, slow);
  bool said = false;
  for (const std::string& n : capped.notes)
    said = said || n.find("above what one flow gets") != std::string::npos;
  EXPECT_TRUE(said) << fmt::format("{}", fmt::join(capped.notes, "\n"));
  // A layout the cluster does not have is not replayed there, and says why.
  Measurement other = ms[0];
  other.ranks_per_node = 8;
  other.nodes = 1;
  ReplayResult no = replay_on_cluster(other, topology, comm);
  EXPECT_FALSE(no.replayed);
  EXPECT_NE(no.note.find("8 per node, where the cluster has 4 GPUs per node"), std::string::npos) << no.note;
}

TEST(CalibReplay, ParameterServerKernelsMapToWorkersAndServers) {
  // The kernels' ps on P = 4 ranks with k = 1 runs 3 workers and the last rank as server: ps dedicated, 3
  // nodes. The replay gives each rank a link at the fitted flow rate B, so the 3 pushes into the server share
  // it: push 3n/B, reduce 2n·g, pull 3n/B, plus overheads (simulated with such links here).
  const Params p{5, 10};
  std::vector<Measurement> ms;
  for (double n = 1024; n <= 16 * 1048576.0; n *= 4) ms.push_back(pingpong(n, p, false));
  for (double n = 65536; n <= 64 * 1048576.0; n *= 4) ms.push_back(allreduce("ring", 2, n, p, false));
  FitOptions o;
  o.single_range = true;
  FitResult fit = fit_comm_model(ms, o);
  const double n = 8 * 1048576.0;
  Measurement ps = make(MeasurementKind::Allreduce, "ps", 4, n,
                        simulate("allreduce", "{name: ps, servers: 1, placement: dedicated}", 3, n, p,
                                 kReduceGBps, p.bandwidth_GBps),
                        false);
  ps.servers = 1;
  ReplayResult r = replay_measurement(ps, fit);
  ASSERT_TRUE(r.replayed);
  EXPECT_NEAR(r.predicted_s / ps.time_s, 1, 1e-8);
  // Incast: the one server's link carries 3 pushes, so the bandwidth terms are 3x those of one transfer:
  // 2 * 3n/B + 2 * (2 alpha) <= T (alpha for push and pull; reductions and rounding add a little more).
  EXPECT_GT(ps.time_s, 2 * 3 * n / 10e9);
  Measurement colo = make(MeasurementKind::Allreduce, "ps-colocated", 4, n,
                          simulate("allreduce", "{name: ps, servers: 4, placement: colocated}", 4, n, p,
                                   kReduceGBps, p.bandwidth_GBps),
                          false);
  colo.servers = 4;
  r = replay_measurement(colo, fit);
  ASSERT_TRUE(r.replayed);
  EXPECT_NEAR(r.predicted_s / colo.time_s, 1, 1e-8);
  Measurement step = make(MeasurementKind::Step, "step", 8, 0, 0.25, false);
  EXPECT_FALSE(replay_measurement(step, fit).replayed);
}

TEST(CalibCalibration, YamlRoundTrips) {
  FitResult fit = fit_comm_model(two_range_data());
  std::string text = calibration_yaml(fit, {"a.json", "b.txt"}, "2026-01-01");
  EXPECT_EQ(text.rfind("# fitted by ddlsim calibrate from a.json, b.txt on 2026-01-01\n", 0), 0u) << text;
  YamlNode doc = YamlNode::load_string(text, "cal.yaml");
  ASSERT_TRUE(doc.has("fit"));
  EXPECT_EQ(doc["fit"]["points"].as_int(), static_cast<int64_t>(fit.fit_points));
  CommModel m = load_calibration(doc);
  ASSERT_EQ(m.intra.ranges.size(), 2u);
  EXPECT_EQ(m.inter.ranges.size(), 1u);  // not measured: the ideal default
  EXPECT_EQ(m.intra.ranges[0].max_bytes, kBreak);
  EXPECT_EQ(m.intra.ranges[0].alpha, Time::us(2));
  EXPECT_EQ(m.intra.ranges[1].alpha, Time::us(10));
  EXPECT_NEAR(m.intra.ranges[0].bandwidth / 4e9, 1, 1e-8);
  EXPECT_NEAR(m.intra.ranges[1].bandwidth / 12.5e9, 1, 1e-8);
  ASSERT_EQ(m.reduce.size(), 2u);  // a gamma per message-size range (here the same one)
  EXPECT_EQ(m.reduce[0].max_bytes, kBreak);
  for (const ReduceRange& r : m.reduce) {
    EXPECT_NEAR(r.gamma_gpu * kReduceGBps * 1e9, 1, 1e-6);
    EXPECT_NEAR(r.gamma_cpu * kReduceGBps * 1e9, 1, 1e-6);
  }
  // The comm map alone reads the same.
  EXPECT_EQ(load_calibration(doc["comm"]).intra.ranges.size(), 2u);
}

TEST(CalibCalibration, BadRangesNameTheKey) {
  struct Bad {
    std::string text, key, fragment;
  };
  const std::vector<Bad> cases = {
      {"comm:\n  intra:\n    - {max_bytes: 64KiB, alpha: 1us}\n    - {max_bytes: 1MiB, alpha: 2us}\n",
       "comm.intra[1].max_bytes", "last range"},
      {"comm:\n  intra:\n    - {max_bytes: 64KiB, alpha: 1us}\n    - {max_bytes: 4KiB, alpha: 1us}\n    - "
       "{alpha: 2us}\n",
       "comm.intra[1].max_bytes", "sorted"},
      {"comm:\n  inter:\n    - {alpha: 1us}\n    - {alpha: 2us}\n", "comm.inter[0]", "max_bytes"},
      {"comm:\n  inter:\n    - {alpha: 1us, bandwith: 5GB/s}\n", "comm.inter[0].bandwith",
       "did you mean \"bandwidth\""},
      {"comm:\n  inter:\n    - {alpha: 1, bandwidth: 5GB/s}\n", "comm.inter[0].alpha", "needs a unit"},
      {"comm:\n  reduce:\n    - {max_bytes: 1MiB, bandwidth_gpu: 5GB/s}\n    - {max_bytes: 64KiB}\n    - "
       "{bandwidth_gpu: 1GB/s}\n",
       "comm.reduce[1].max_bytes", "sorted"},
      {"comm:\n  reduce:\n    - {bandwidth_gpu: 5GB/s}\n    - {bandwidth_gpu: 1GB/s}\n", "comm.reduce[0]",
       "max_bytes"},
      {"comm:\n  reduce:\n    - {bandwith_gpu: 5GB/s}\n", "comm.reduce[0].bandwith_gpu", "did you mean"},
  };
  for (const Bad& b : cases) {
    SCOPED_TRACE(b.text);
    try {
      load_calibration(YamlNode::load_string(b.text, "bad.yaml"));
      ADD_FAILURE() << "expected InputError";
    } catch (const InputError& e) {
      EXPECT_EQ(e.key_path(), b.key) << e.what();
      EXPECT_NE(std::string(e.what()).find(b.fragment), std::string::npos) << e.what();
      EXPECT_GT(e.where().line, 0) << e.what();
    }
  }
}

TEST(CalibFit, PublishedFormatSamplesFit) {
  // nccl-tests on one node, one rank count: intra-node, gamma folded into the effective bandwidth.
  std::string dir = std::string(DDLSIM_SOURCE_DIR) + "/scenarios/measured/";
  FitResult nccl = fit_comm_model(read_measurements(dir + "nccl-tests-allreduce-dgx-a100.txt"));
  EXPECT_TRUE(nccl.link[kIntraNode].measured);
  EXPECT_FALSE(nccl.link[kInterNode].measured);
  EXPECT_TRUE(nccl.gamma_folded);
  // OSU across nodes: ping-pong, streaming and allreduce together separate alpha, beta, gap and gamma.
  ReaderOptions o;
  o.ranks = 16;
  o.ranks_per_node = 4;
  std::vector<Measurement> ms = read_measurements(dir + "osu-latency-sample.txt");
  for (const char* f : {"osu-bw-sample.txt", "osu-allreduce-sample.txt"}) {
    std::vector<Measurement> more = read_measurements(dir + f, o);
    ms.insert(ms.end(), more.begin(), more.end());
  }
  FitResult osu = fit_comm_model(ms);
  ASSERT_TRUE(osu.link[kInterNode].measured);
  EXPECT_FALSE(osu.link[kIntraNode].measured);
  EXPECT_TRUE(osu.gamma_measured);
  EXPECT_GT(osu.model.reduce.back().gamma_gpu, 0);
  for (const FittedRange& r : osu.link[kInterNode].ranges) {
    EXPECT_GT(r.beta, 0);
    EXPECT_GE(r.alpha, 0);
  }
  EXPECT_LT(osu.residual_median, 0.3);
}

}  // namespace
}  // namespace ddlsim
