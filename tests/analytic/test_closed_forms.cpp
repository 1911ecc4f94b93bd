// Closed forms on one switch (the setting where nothing is shared but what the algorithm itself shares).
// Inline star, gpus_per_node 1: every GPU is its own host on a cable of bandwidth B and latency l, so every
// route is GPU → switch → GPU with latency 2l and bottleneck B. n bytes per rank, p ranks, γ = 1/reduce
// bandwidth, α = per-message software overhead. Every check is relative, to 1e-9 (picosecond rounding per
// message).
#include <gtest/gtest.h>
#include <unistd.h>

#include <fmt/format.h>
#include <bit>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "sim/config/cluster.hpp"
#include "sim/config/scenario.hpp"
#include "sim/train/collective_workload.hpp"
#include "sim/train/nccl_tuner.hpp"
#include "sim/train/strategies/strategy.hpp"

namespace ddlsim {
namespace {

constexpr double kB = 25e9;   // 25 GB/s
constexpr double kL = 1e-6;   // 1 us per cable
constexpr double kN = 100e6;  // 100 MB
constexpr double kRel = 1e-9;

Scenario scenario_from(const std::string& text) {
  static int counter = 0;
  std::string path = fmt::format("{}ddlsim_closed_{}_{}.yaml", ::testing::TempDir(), getpid(), counter++);
  {
    std::ofstream out(path);
    out << text;
  }
  Scenario s = load_scenario(path, {});
  std::remove(path.c_str());
  return s;
}

// One collective of kN bytes on p ranks of the star; `comm` is an optional comm: map. gpn GPUs form a "node"
// (for hierarchical plans); each is still its own host on its own cable.
CollectiveResult run(int p, const std::string& strategy, const std::string& comm = "",
                     const std::string& collective = "allreduce", bool fast = true, int gpn = 1,
                     const std::string& bytes = "100MB") {
  std::string text = fmt::format(
      "name: closed-form\n"
      "cluster:\n"
      "  nodes: {}\n"
      "  gpus_per_node: {}\n"
      "  gpu: a100-40gb\n"
      "  network: {{kind: star, link: {{bandwidth: 25GB/s, latency: 1us}}}}\n"
      "{}"
      "workload: {{collective: {}, bytes: {}}}\n"
      "strategies:\n  - {}\n",
      p / gpn, gpn, comm.empty() ? "" : "  comm: " + comm + "\n", collective, bytes, strategy);
  Scenario sc = scenario_from(text);
  return run_collective_workload(sc, sc.strategies.at(0), p / gpn, EngineOptions{fast});
}

void expect_rel(double got, double want) {
  EXPECT_NEAR(got, want, want * kRel)
      << "got " << got << " s, want " << want << " s (diff " << (got - want) * 1e12 << " ps)";
}

TEST(ClosedForm, RingAllreduce) {
  // T = 2(p−1)·(2l + n/(p·B))
  for (int p : {2, 3, 4, 5, 8, 16, 64}) {
    SCOPED_TRACE(p);
    double want = 2.0 * (p - 1) * (2 * kL + kN / (p * kB));
    expect_rel(run(p, "ring").time_s, want);
    expect_rel(run(p, "ring", "", "allreduce", false).time_s, want);  // and message by message
  }
}

TEST(ClosedForm, RingChannelsOnAStarChangeNothing) {
  // gpn = 4 GPUs per "node", each still its own host on its own cable: a ring of 4 channels (one per cable)
  // sends per round, from every GPU, (C−1)/C·n/p to the next GPU of its node and n/(pC) across, both over
  // the same cable, n/p in all, and receives n/p: the one ring's T = 2(p−1)·(2l + n/(p·B)).
  for (int p : {8, 16}) {
    SCOPED_TRACE(p);
    double want = 2.0 * (p - 1) * (2 * kL + kN / (p * kB));
    expect_rel(run(p, "ring", "", "allreduce", true, 4).time_s, want);
    expect_rel(run(p, "ring", "", "allreduce", false, 4).time_s, want);
    expect_rel(run(p, "{name: ring, channels: 1}", "", "allreduce", true, 4).time_s, want);
  }
}

// Two nodes of G = 4 GPUs behind 4 NICs (GPU i uses NIC i, through the PCIe switch) on a star of bandwidth
// B_nic, an NVSwitch of B_nvl per GPU, no latencies or overheads. A ring of C channels sends per round n/(pC)
// across nodes through each of C NICs and (C−1)·n/(pC) to the next GPU over NVLink; one ring sends n/p
// through one NIC. So
//   T = 2(p−1)·max(n/(pC·B_x), (C−1)·n/(pC·B_nvl)),  B_x = min(B_nic, B_pcie) on the way out
// and busbw = 2(p−1)/p·n/T = min(C·B_x, C/(C−1)·B_nvl): the NICs' sum, or NVLink when it binds.
TEST(ClosedForm, RingChannelsDriveEveryNic) {
  auto busbw = [](const std::string& nvl, const std::string& pcie, const std::string& nic,
                  const std::string& strategy) {
    std::string text = fmt::format(
        "name: channels\n"
        "cluster:\n"
        "  nodes: 2\n"
        "  gpu: a100-40gb\n"
        "  node: {{gpus: 4, nics: 4, gpu_link: {{kind: nvswitch, bandwidth: {}, latency: 0us}},\n"
        "         pcie: {{bandwidth: {}, latency: 0us}}}}\n"
        "  network: {{kind: star, link: {{bandwidth: {}, latency: 0us}}}}\n"
        "workload: {{collective: allreduce, bytes: 100MB}}\n"
        "strategies: [{}]\n",
        nvl, pcie, nic, strategy);
    Scenario sc = scenario_from(text);
    return run_collective_workload(sc, sc.strategies.at(0), 2, EngineOptions{true}).busbw;
  };
  // NIC-bound: B_nic = 25 GB/s, PCIe and NVLink far faster: C·B_nic, one channel per NIC by default.
  const double nic = 25e9;
  expect_rel(busbw("1000GB/s", "10000GB/s", "25GB/s", "ring"), 4 * nic);
  expect_rel(busbw("1000GB/s", "10000GB/s", "25GB/s", "{name: ring, channels: 2}"), 2 * nic);
  expect_rel(busbw("1000GB/s", "10000GB/s", "25GB/s", "{name: ring, channels: 1}"), nic);
  // NVLink-bound: B_nvl = 25 GB/s, B_pcie = 20 GB/s (slower, so GPU-to-GPU traffic takes NVLink), B_nic far
  // faster: with 4 channels 4/3·B_nvl = 33.3 GB/s (the crossing needs only n/(4p·B_pcie)); one ring's n/p
  // crossing through PCIe binds instead: B_pcie.
  expect_rel(busbw("25GB/s", "20GB/s", "1000GB/s", "ring"), 4.0 / 3.0 * 25e9);
  expect_rel(busbw("25GB/s", "20GB/s", "1000GB/s", "{name: ring, channels: 1}"), 20e9);
}

// One node of G = 4 GPUs on a point-to-point mesh (gpu_link pairs): 0-1 and 2-3 joined by two links of B,
// 1-2 and 3-0 by one, no latencies or overheads. A ring whose message to the next GPU crosses one directed
// link per hop (PCIe far slower, so GPU-to-GPU traffic takes the mesh) sends n/(pC) per channel per round, so
//   T = 2(p−1)·n/(pC·B_min),  busbw = 2(p−1)/p·n/T = C·B_min
// with B_min the slowest hop of a channel's ring (here B on every ring: each has a single-link hop). Two
// rings the topology gives one way round and the other use every directed link once: C = 2, busbw = 2B. The
// simulator's own ring (0, 1, 2, 3 and back) is one: busbw = B. The same order twice is one ring in two
// channels, merged into one message per hop: B again. Hierarchical's intra-node phases take the same rings.
// Across two such nodes, with GPUs 0-1 on NIC 0 and 2-3 on NIC 1, NICs of B_nic far below the mesh: rings
// entering a node at GPU 0 and at GPU 2 leave it from GPU 3 and GPU 1, each NIC carrying one stream out and
// one in: busbw = 2·B_nic; the same ring twice crosses one NIC only: B_nic.
TEST(ClosedForm, RingsFollowTheTopologysOrders) {
  auto busbw = [](int nodes, const std::string& mesh, const std::string& pcie, const std::string& nic,
                  const std::string& rings, const std::string& strategy, bool fast = true) {
    std::string text = fmt::format(
        "name: rings\n"
        "cluster:\n"
        "  nodes: {}\n"
        "  gpu: a100-40gb\n"
        "  node: {{gpus: 4, nics: 2, pcie: {{bandwidth: {}, latency: 0us}},{}\n"
        "         gpu_link: {{kind: infinity-fabric, bandwidth: {}, latency: 0us,\n"
        "                    pairs: [[0, 1, 2], [1, 2], [2, 3, 2], [3, 0]]}}}}\n"
        "  network: {{kind: star, link: {{bandwidth: {}, latency: 0us}}}}\n"
        "workload: {{collective: allreduce, bytes: 100MB}}\n"
        "strategies: [{}]\n",
        nodes, pcie, rings.empty() ? "" : " rings: " + rings + ",", mesh, nic, strategy);
    Scenario sc = scenario_from(text);
    return run_collective_workload(sc, sc.strategies.at(0), nodes, EngineOptions{fast}).busbw;
  };
  const double b = 25e9;
  const std::string both = "[[0, 1, 2, 3], [0, 3, 2, 1]]";
  expect_rel(busbw(1, "25GB/s", "1GB/s", "25GB/s", both, "ring"), 2 * b);
  expect_rel(busbw(1, "25GB/s", "1GB/s", "25GB/s", both, "ring", false), 2 * b);  // message by message
  expect_rel(busbw(1, "25GB/s", "1GB/s", "25GB/s", "", "ring"), b);
  expect_rel(busbw(1, "25GB/s", "1GB/s", "25GB/s", "[[0, 1, 2, 3], [0, 1, 2, 3]]", "ring"), b);
  expect_rel(busbw(1, "25GB/s", "1GB/s", "25GB/s", both, "hierarchical"), 2 * b);
  expect_rel(busbw(1, "25GB/s", "1GB/s", "25GB/s", "", "hierarchical"), b);
  // (PCIe now as fast as the mesh, far above the NICs: a GPU's hop to the next one is still its direct link.)
  expect_rel(busbw(2, "1000GB/s", "1000GB/s", "25GB/s", "[[0, 1, 2, 3], [2, 3, 0, 1]]", "ring"), 2 * b);
  expect_rel(busbw(2, "1000GB/s", "1000GB/s", "25GB/s", "[[0, 1, 2, 3], [2, 3, 0, 1]]", "ring", false),
             2 * b);
  expect_rel(busbw(2, "1000GB/s", "1000GB/s", "25GB/s", "[[0, 1, 2, 3], [0, 1, 2, 3]]", "ring"), b);
}

TEST(ClosedForm, RingAllreduceWithGamma) {
  // γ = 1/R with R = reduce_bandwidth_gpu = 50 GB/s; the p−1 reduce-scatter steps each reduce n/p bytes:
  // T = 2(p−1)·(2l + n/(p·B)) + (p−1)·(n/p)·γ
  const double gamma = 1 / 50e9;
  for (int p : {2, 4, 7, 16}) {
    SCOPED_TRACE(p);
    double want = 2.0 * (p - 1) * (2 * kL + kN / (p * kB)) + (p - 1) * (kN / p) * gamma;
    expect_rel(run(p, "ring", "{reduce_bandwidth_gpu: 50GB/s}").time_s, want);
    expect_rel(run(p, "ring", "{reduce_bandwidth_gpu: 50GB/s}", "allreduce", false).time_s, want);
  }
}

TEST(ClosedForm, RingAllreduceWithAlpha) {
  // Every one of the 2(p−1) steps pays α once: T = 2(p−1)·(α + 2l + n/(p·B)), α = 5 us.
  const double alpha = 5e-6;
  for (int p : {3, 16}) {
    SCOPED_TRACE(p);
    double want = 2.0 * (p - 1) * (alpha + 2 * kL + kN / (p * kB));
    expect_rel(run(p, "ring", "{alpha_inter: 5us}").time_s, want);
  }
}

TEST(ClosedForm, ReduceScatterAndAllGather) {
  // Half a ring each: T = (p−1)·(2l + n/(p·B)) (+ (p−1)·(n/p)·γ for reduce-scatter).
  const double gamma = 1 / 50e9;
  for (int p : {4, 16}) {
    SCOPED_TRACE(p);
    double half = (p - 1) * (2 * kL + kN / (p * kB));
    expect_rel(run(p, "ring", "", "reduce-scatter").time_s, half);
    expect_rel(run(p, "ring", "", "all-gather").time_s, half);
    expect_rel(run(p, "ring", "{reduce_bandwidth_gpu: 50GB/s}", "reduce-scatter").time_s,
               half + (p - 1) * (kN / p) * gamma);
    expect_rel(run(p, "ring", "{reduce_bandwidth_gpu: 50GB/s}", "all-gather").time_s,
               half);  // nothing to reduce
  }
}

TEST(ClosedForm, RecursiveHalvingDoubling) {
  // p a power of two: T = 2·log2(p)·2l + 2(p−1)/p·n/B
  for (int p : {2, 4, 8, 16, 32}) {
    SCOPED_TRACE(p);
    double lg = std::log2(p);
    double want = 2 * lg * 2 * kL + 2.0 * (p - 1) / p * kN / kB;
    expect_rel(run(p, "rhd").time_s, want);
    expect_rel(run(p, "rhd", "", "allreduce", false).time_s, want);
  }
}

TEST(ClosedForm, RecursiveHalvingDoublingWithGamma) {
  // + (p−1)/p·n·γ: the halving steps reduce n/2 + n/4 + ... + n/p bytes.
  const double gamma = 1 / 50e9;
  for (int p : {4, 16}) {
    SCOPED_TRACE(p);
    double want = 2 * std::log2(p) * 2 * kL + 2.0 * (p - 1) / p * kN / kB + (p - 1.0) / p * kN * gamma;
    expect_rel(run(p, "rhd", "{reduce_bandwidth_gpu: 50GB/s}").time_s, want);
  }
}

TEST(ClosedForm, RecursiveDoubling) {
  // p a power of two: log2 p rounds, each the whole buffer to a partner and back over the two ends' cables,
  // then its sum: T = log2(p)·(2l + n/B + n·γ).
  const double gamma = 1 / 50e9;
  for (int p : {2, 4, 8, 16}) {
    SCOPED_TRACE(p);
    double lg = std::log2(p);
    expect_rel(run(p, "recursive-doubling").time_s, lg * (2 * kL + kN / kB));
    expect_rel(run(p, "recursive-doubling", "", "allreduce", false).time_s, lg * (2 * kL + kN / kB));
    expect_rel(run(p, "recursive-doubling", "{reduce_bandwidth_gpu: 50GB/s}").time_s,
               lg * (2 * kL + kN / kB + kN * gamma));
  }
  // Not a power of two (q = 4 of p = 6, 8 of 12): the even ranks below 2(p - q) hand their buffer to the next
  // rank first and get the result last; every rank ends, and the fast path agrees with the flow model (the
  // extra ranks' messages share cables with the doubling rounds, so there is no simple closed form), and the
  // time lies between log2(q)+2 rounds alone and those rounds with every cable shared by two messages.
  for (int p : {6, 12}) {
    SCOPED_TRACE(p);
    double fast = run(p, "recursive-doubling").time_s,
           flow = run(p, "recursive-doubling", "", "allreduce", false).time_s;
    expect_rel(fast, flow);
    double rounds = std::log2(std::bit_floor(static_cast<unsigned>(p))) + 2;
    EXPECT_GE(fast, rounds * (2 * kL + kN / kB) * (1 - kRel));
    EXPECT_LE(fast, rounds * (2 * kL + 2 * kN / kB));
  }
}

TEST(ClosedForm, MpichChoosesByMessageSize) {
  // MPICH's allreduce: recursive doubling up to MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE = 2048 bytes, or while the
  // buffer holds fewer 4-byte elements than the largest power of two <= p; Rabenseifner (rhd) above.
  for (const char* bytes : {"2048B", "2049B", "1MB"}) {
    SCOPED_TRACE(bytes);
    std::string want = std::string(bytes) == "2048B" ? "recursive-doubling" : "rhd";
    expect_rel(run(8, "mpich", "", "allreduce", true, 1, bytes).time_s,
               run(8, want, "", "allreduce", true, 1, bytes).time_s);
  }
  // 1024 ranks, 3000 bytes = 750 elements < 1024: recursive doubling, 10 rounds of 2l + 3000/B.
  expect_rel(run(1024, "mpich", "", "allreduce", true, 1, "3000B").time_s, 10 * (2 * kL + 3000 / kB));
}

TEST(ClosedForm, OpenMpiChoosesBySizeAndRanks) {
  // Open MPI 4.1's coll/tuned fixed decision for a commutative allreduce (coll_tuned_decision_fixed.c):
  // p < 4: ring below 8 B, recursive doubling below 4 KiB, ring below 8 KiB, recursive doubling below 16 KiB,
  // (segmented) ring below 256 KiB, Rabenseifner (rhd) above; p < 8: ring below 16 B, recursive doubling
  // below 8 KiB, rhd above; 128 <= p < 256: reduce + broadcast (the binary tree here) below 128 KiB,
  // recursive doubling below 256 KiB, rhd above. Each is the plan of that algorithm, to the picosecond. (At
  // p = 2 the ring and rhd move the same messages, so those two rows cannot tell them apart; p = 4 can.)
  struct Case {
    int p;
    const char* bytes;
    const char* want;
  };
  const Case cases[] = {{2, "4B", "ring"},
                        {2, "1KiB", "recursive-doubling"},
                        {2, "4KiB", "ring"},
                        {2, "8KiB", "recursive-doubling"},
                        {2, "100KiB", "ring"},
                        {2, "1MB", "rhd"},
                        {4, "8B", "ring"},
                        {4, "4KiB", "recursive-doubling"},
                        {4, "1MB", "rhd"},
                        {200, "64KiB", "tree"},
                        {200, "200KiB", "recursive-doubling"},
                        {200, "1MB", "rhd"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(fmt::format("p={} {}", c.p, c.bytes));
    EXPECT_EQ(run(c.p, "openmpi", "", "allreduce", true, 1, c.bytes).time_s,
              run(c.p, c.want, "", "allreduce", true, 1, c.bytes).time_s);
  }
}

// NCCL's protocols (comm.protocols: nccl) with NCCL's tuner constants (NVIDIA/nccl src/graph/tuning.cc at
// 5067397c): per call a base latency (ring: LL 6.6 us, LL128 14, Simple 8.4), per step the hardware's latency
// (here one GPU per node, so every step crosses the network at the tree's network latency: LL 5.0 us, LL128
// 8.5, Simple 14) in place of the route latency and α, and the protocol's bytes on the wire (LL 2 per byte,
// LL128 128/120). Bounds on what a channel's threads drive: LL 20.4 GB/s for 4 nodes, LL128 20 GB/s per
// channel (Ampere), one channel (one NIC per node). A ring of p = 4 on the 25 GB/s star, m = n/4 per message:
//   LL:     T = 6.6 us + 6·(5.0 us + 2m/B)          (the wire, 2m at B, binds before LL's 20.4 GB/s)
//   LL128:  T = 14 us + 6·(8.5 us + m/20 GB/s)       (20 GB/s of payload binds before B·120/128)
//   Simple: T = 8.4 us + 6·(14 us + m/B)
double nccl_ll(double n) {
  return 6.6e-6 + 6 * (5.0e-6 + 2 * (n / 4) / kB);
}
double nccl_ll128(double n) {
  return 14e-6 + 6 * (8.5e-6 + (n / 4) / 20e9);
}
double nccl_simple(double n) {
  return 8.4e-6 + 6 * (14e-6 + (n / 4) / kB);
}

TEST(ClosedForm, NcclProtocolsOnAStar) {
  const std::string nccl = "{protocols: nccl}";
  for (bool fast : {true, false}) {
    SCOPED_TRACE(fast);
    expect_rel(run(4, "ring", nccl, "allreduce", fast, 1, "8B").time_s, nccl_ll(8));
    expect_rel(run(4, "ring", nccl, "allreduce", fast, 1, "1MB").time_s, nccl_ll128(1e6));
    expect_rel(run(4, "ring", nccl, "allreduce", fast, 1, "100MB").time_s, nccl_simple(100e6));
  }
  // Off (the default), the same ring pays route latency and α per step, payload only: 6·(2l + m/B).
  expect_rel(run(4, "ring", "", "allreduce", true, 1, "8B").time_s, 6 * (2 * kL + 2 / kB));
}

TEST(ClosedForm, NcclFusesTheRingsReductionWithItsNextStep) {
  // NCCL's kernels sum what a rank received as they send it on (receive-reduce-send), so a reduce-scatter
  // step's sum overlaps the next step instead of delaying it: steps 1..p−1 each last max(m/B, m·γ) after
  // their latency, the sum of step p−1 being the all-gather's first send. The ring of the test above with
  // Simple (m = n/4 = 25 MB), γ = 1/R:
  //   R = 10 GB/s (sums slower than the link): T = 8.4 us + 6·14 us + 3·m/B + 3·m/R
  //   R = 50 GB/s (faster): the sums hide,     T = nccl_simple(n)
  // Without NCCL's protocols the ring sums between steps (RingAllreduceWithGamma): 6·m/B + 3·m/R.
  const double m = kN / 4;
  for (bool fast : {true, false}) {
    SCOPED_TRACE(fast);
    expect_rel(run(4, "ring", "{protocols: nccl, reduce_bandwidth_gpu: 10GB/s}", "allreduce", fast).time_s,
               8.4e-6 + 6 * 14e-6 + 3 * m / kB + 3 * m / 10e9);
    expect_rel(run(4, "ring", "{protocols: nccl, reduce_bandwidth_gpu: 50GB/s}", "allreduce", fast).time_s,
               nccl_simple(kN));
  }
}

TEST(ClosedForm, NcclNetworkDeviceLatencyAddsToEveryStepAcrossNodes) {
  // net_latency L: the latency the network plugin reports, which NCCL's tuner adds to each step across nodes,
  // twice with Simple (its flush). The ring of the test above, every step across nodes:
  //   LL:     T = 6.6 us + 6·(5.0 us + L + 2m/B)
  //   Simple: T = 8.4 us + 6·(14 us + 2L + m/B)
  const double l = 10e-6;
  const std::string comm = "{protocols: nccl, net_latency: 10us}";
  for (bool fast : {true, false}) {
    SCOPED_TRACE(fast);
    expect_rel(run(4, "ring", comm, "allreduce", fast, 1, "8B").time_s, nccl_ll(8) + 6 * l);
    expect_rel(run(4, "ring", comm, "allreduce", fast, 1, "100MB").time_s, nccl_simple(100e6) + 6 * 2 * l);
  }
}

TEST(ClosedForm, NcclTunerSwitchesWhereItsCostModelCrosses) {
  // NCCL's estimates for the ring above (us, n in bytes): bus bandwidth 25 GB/s, algorithm bandwidth x
  // p/(2(p-1)) = x 2/3, latency base + 6 steps x the network's step latency (Simple also x 1.4, NCCL's
  // "plateau" factor for rings across nodes, once n/(channels·p) >= 64 B):
  //   LL     36.6   + n / (1e3 · min(20.4, 0.5·25) · 2/3)
  //   LL128  65.0   + n / (1e3 · min(0.92·25, 20) · 2/3)
  //   Simple 129.36 + n / (1e3 · 25 · 2/3)
  // LL gives way to LL128 at n1 and LL128 to Simple at n2, where the lines cross; the simulated time follows.
  auto inv = [](double gbps) { return 1 / (1e3 * gbps * 2 / 3); };
  const double n1 = (65.0 - 36.6) / (inv(12.5) - inv(20)), n2 = (129.36 - 65.0) / (inv(20) - inv(25));
  const std::string nccl = "{protocols: nccl}";
  auto at = [&](double n) {
    return run(4, "ring", nccl, "allreduce", true, 1, fmt::format("{}B", std::llround(n))).time_s;
  };
  // (each of the 6 messages' durations is rounded to the picosecond: 6 ps)
  auto n = [](double v) { return static_cast<double>(std::llround(v)); };
  EXPECT_NEAR(at(0.98 * n1), nccl_ll(n(0.98 * n1)), 6e-12);
  EXPECT_NEAR(at(1.02 * n1), nccl_ll128(n(1.02 * n1)), 6e-12);
  EXPECT_NEAR(at(0.98 * n2), nccl_ll128(n(0.98 * n2)), 6e-12);
  EXPECT_NEAR(at(1.02 * n2), nccl_simple(n(1.02 * n2)), 6e-12);
}

TEST(ClosedForm, NcclProtoLeavesProtocolsOut) {
  // nccl_proto (NCCL_PROTO): a list enables exactly its protocols, ^ and a list all the others (any case).
  // The ring of the tests above without LL128 (^LL128): LL until its line crosses Simple's,
  //   n3 = (129.36 - 36.6) / (inv(12.5) - inv(25)) = 1.546 MB,
  // Simple above; 1 MB, LL128's above, runs LL. With Simple alone, 8 B pays Simple's latency; with LL128
  // alone, 100 MB runs LL128.
  auto inv = [](double gbps) { return 1 / (1e3 * gbps * 2 / 3); };
  const double n3 = (129.36 - 36.6) / (inv(12.5) - inv(25));
  auto at = [&](const std::string& proto, double n, bool fast = true) {
    return run(4, "ring", "{protocols: nccl, nccl_proto: '" + proto + "'}", "allreduce", fast, 1,
               fmt::format("{}B", std::llround(n)))
        .time_s;
  };
  auto n = [](double v) { return static_cast<double>(std::llround(v)); };
  for (bool fast : {true, false}) {
    SCOPED_TRACE(fast);
    expect_rel(at("^LL128", 1e6, fast), nccl_ll(1e6));
    expect_rel(at("Simple", 8, fast), nccl_simple(8));
    expect_rel(at("ll128", 100e6, fast), nccl_ll128(100e6));
  }
  EXPECT_NEAR(at("^ll128", 0.98 * n3), nccl_ll(n(0.98 * n3)), 6e-12);
  EXPECT_NEAR(at("LL, Simple", 1.02 * n3), nccl_simple(n(1.02 * n3)), 6e-12);
}

TEST(ClosedForm, NcclProtocolsInAHierarchicalAllreduce) {
  // A hierarchical allreduce runs with the protocol NCCL's tuner picks for its ring over all p = g·N ranks:
  // N = 4 nodes of g = 2 A100s joined by NVLink at B, each GPU with its own NIC and cable (B) to the switch.
  // Every message pays its hardware's per-step latency in place of route latency and α: inside a node NVLink
  // (ring: LL 0.6 us, Simple 3.4), across nodes the network (LL 2.7 us, Simple 14); the call its base latency
  // once (LL 6.6 us, Simple 8.4); LL puts 2 bytes on the wire per byte (its 20.4 GB/s bound for 4 nodes does
  // not bind: 2m at B does first). Intra-node reduce-scatter and all-gather g−1 rounds of n/g each, the ring
  // between nodes 2(N−1) rounds of n/(g·N), the phases one after the other (pipeline_chunk: none; NCCL's
  // pipelining, on by default under its protocols, has its own test below):
  //   T = base + 2(g−1)·(lat_nvlink + w·n/(g·B)) + 2(N−1)·(lat_net + w·n/(g·N·B))
  const int g = 2, nodes = 4;
  auto want = [&](double base, double nvlink, double net, double wire, double n) {
    return base + 2 * (g - 1) * (nvlink + wire * n / (g * kB)) +
           2 * (nodes - 1) * (net + wire * n / (g * nodes * kB));
  };
  auto run_nodes = [&](const std::string& strategy, const std::string& bytes, bool fast) {
    Scenario sc = scenario_from(fmt::format(
        "name: closed-form\n"
        "cluster:\n"
        "  nodes: {}\n"
        "  gpu: a100-40gb\n"
        "  node: {{gpus: {}, nics: {}, gpu_link: {{kind: nvlink-mesh, bandwidth: 25GB/s, latency: 1us}},\n"
        "         pcie: {{bandwidth: 100GB/s, latency: 1us}}}}\n"
        "  network: {{kind: star, link: {{bandwidth: 25GB/s, latency: 1us}}}}\n"
        "  comm: {{protocols: nccl, pipeline_chunk: none}}\n"
        "workload: {{collective: allreduce, bytes: {}}}\n"
        "strategies:\n  - {}\n",
        nodes, g, g, bytes, strategy));
    return run_collective_workload(sc, sc.strategies.at(0), nodes, EngineOptions{fast}).time_s;
  };
  for (bool fast : {true, false}) {
    SCOPED_TRACE(fast);
    // 8 B: LL; 100 MB: Simple. (auto between nodes: the ring at 4 nodes, as in the test below.)
    for (const char* st : {"{name: hierarchical, inter_node: ring}", "hierarchical"}) {
      SCOPED_TRACE(st);
      expect_rel(run_nodes(st, "8B", fast), want(6.6e-6, 0.6e-6, 2.7e-6, 2, 8));
      expect_rel(run_nodes(st, "100MB", fast), want(8.4e-6, 3.4e-6, 14e-6, 1, kN));
    }
  }
}

TEST(ClosedForm, NcclProtocolBoundIsPerChannel) {
  // NCCL's LL128 bound on a ring is per channel (Ampere, 2 nodes: 20 GB/s each). 2 nodes of 4 A100s, 4 NICs:
  // 4 channels, m = n/(p·4) bytes per chunk (PCIe at 500 GB/s: slower than NVLink, so GPUs talk over NVLink).
  // Per round a GPU sends one chunk across nodes (its NIC at B = 25 GB/s carries 128/120 wire bytes per byte,
  // so the bound binds: m / 20 GB/s, after 4.0 us of network step latency) and 3 channels' chunks merged in
  // one message to the next GPU over NVLink (1000 GB/s, so the 3 channels' bound binds: 3m / 60 GB/s,
  // after 1.9 us). Every round is alike:
  //   T = 14 us + 2(p−1)·max(4.0 us + m/20 GB/s, 1.9 us + 3m/60 GB/s)
  // (one bound for the merged message would give 1.9 us + 3m/20 GB/s per round).
  const int p = 8;
  const double n = 4 * 1048576.0, m = n / (p * 4);  // LL128 from 2 to 16 MiB here (ddlsim describe)
  Scenario sc = scenario_from(fmt::format(
      "name: channels\n"
      "cluster:\n"
      "  nodes: 2\n"
      "  gpu: a100-40gb\n"
      "  node: {{gpus: 4, nics: 4, gpu_link: {{kind: nvswitch, bandwidth: 1000GB/s, latency: 0us}},\n"
      "         pcie: {{bandwidth: 500GB/s, latency: 0us}}}}\n"
      "  network: {{kind: star, link: {{bandwidth: 25GB/s, latency: 0us}}}}\n"
      "  comm: {{protocols: nccl}}\n"
      "workload: {{collective: allreduce, bytes: {}B}}\n"
      "strategies: [ring]\n",
      n));
  Cluster cluster = build_cluster(sc.cluster, 2);
  CollectiveShape shape{Algorithm::Ring, p, 4, 0, n};
  shape.channels = 4;
  ASSERT_STREQ(nccl_protocol(shape, cluster).name, "LL128");  // the tuner's choice at 4 MiB
  const double want = 14e-6 + 2 * (p - 1) * std::max(4.0e-6 + m / 20e9, 1.9e-6 + 3 * m / 60e9);
  for (bool fast : {true, false})
    expect_rel(run_collective_workload(sc, sc.strategies.at(0), 2, EngineOptions{fast}).time_s, want);
}

TEST(ClosedForm, NcclTunerTakesTheTreeOnTwoNodes) {
  // NCCL's tuner costs a graph by its intra-node bandwidth on two nodes and by its inter-node one beyond,
  // and its search lets a tree's intra-node bandwidth be up to twice the inter-node one (a ring's stays equal
  // to it). Nodes of 8 A100s over 4 EFA NICs (aws-p4de-efa), 1 GiB: on two nodes the tree's bus bandwidth is
  // min(NVLink, 2 x 4 NICs) against the ring's 4 NICs, so NCCL takes the tree (which sends each byte across
  // once each way, and beats the NICs there); on three nodes both get the NICs' and the ring, with
  // p/(2(p-1)) of it as algorithm bandwidth against the tree's 1/2, wins.
  for (int nodes : {2, 3}) {
    Scenario sc =
        scenario_from(fmt::format("name: tree\ncluster: {{topology: aws-p4de-efa, nodes: {}}}\n"
                                  "workload: {{collective: allreduce, bytes: 1GiB}}\nstrategies: [ring]\n",
                                  nodes));
    Cluster cluster = build_cluster(sc.cluster, nodes);
    CollectiveShape shape{Algorithm::Hierarchical, static_cast<uint32_t>(8 * nodes), 8, 0, 1073741824.0,
                          Algorithm::Auto};
    shape.channels = ring_channels(cluster, 0);
    EXPECT_EQ(nccl_inter_node(shape, cluster), nodes == 2 ? Algorithm::DoubleTree : Algorithm::Ring) << nodes;
  }
}

TEST(ClosedForm, NcclTunerPicksTheHierarchicalAlgorithmBetweenNodes) {
  // With NCCL's protocols, `inter_node: auto` takes ring or double tree as NCCL's tuner does: the algorithm
  // of its fastest estimate over both algorithms and every protocol (without them, the α-β estimate of the
  // two plans decides). Nodes of 2 A100s on NVLink, one NIC each at 25 GB/s, α 20 us across nodes: for every
  // size and node count below, auto takes exactly the time of the algorithm the tuner names, and for some of
  // them that is not the one the α-β estimate would take.
  auto scenario = [](int nodes, const std::string& bytes, const std::string& strategy) {
    return scenario_from(fmt::format(
        "name: auto\n"
        "cluster:\n"
        "  nodes: {}\n"
        "  gpu: a100-40gb\n"
        "  node: {{gpus: 2, nics: 1, gpu_link: {{kind: nvlink-mesh, bandwidth: 100GB/s, latency: 1us}},\n"
        "         pcie: {{bandwidth: 50GB/s, latency: 1us}}}}\n"
        "  network: {{kind: star, link: {{bandwidth: 25GB/s, latency: 1us}}}}\n"
        "  comm: {{protocols: nccl, alpha_inter: 20us}}\n"
        "workload: {{collective: allreduce, bytes: {}}}\n"
        "strategies: [{}]\n",
        nodes, bytes, strategy));
  };
  int differs = 0;
  for (int nodes : {4, 16, 64})
    for (const char* bytes : {"64kB", "4MB", "64MB"}) {
      SCOPED_TRACE(fmt::format("{} nodes, {}", nodes, bytes));
      Scenario sc = scenario(nodes, bytes, "{name: hierarchical, inter_node: auto}");
      Cluster cluster = build_cluster(sc.cluster, nodes);
      CollectiveShape shape{Algorithm::Hierarchical, static_cast<uint32_t>(2 * nodes), 2, 0,
                            sc.collective->bytes};
      shape.channels = 1;
      Algorithm tuner = Algorithm::Auto;
      double fastest = 0;
      for (Algorithm a : {Algorithm::Ring, Algorithm::DoubleTree}) {
        shape.inter_node = a;
        for (const NcclEstimate& e : nccl_estimates(shape, cluster))
          if (e.seconds >= 0 && (tuner == Algorithm::Auto || e.seconds < fastest))
            tuner = a, fastest = e.seconds;
      }
      ASSERT_NE(tuner, Algorithm::Auto);
      shape.inter_node = Algorithm::Auto;
      MessageCost cost = inter_node_cost(cluster, shape.bytes / shape.ranks);
      shape.alpha = cost.alpha;
      shape.rate = cost.rate;
      differs += resolve_inter_node(shape) != tuner;
      Scenario named = scenario(nodes, bytes,
                                fmt::format("{{name: hierarchical, inter_node: {}}}",
                                            tuner == Algorithm::Ring ? "ring" : "double-tree"));
      expect_rel(run_collective_workload(sc, sc.strategies.at(0), nodes).time_s,
                 run_collective_workload(named, named.strategies.at(0), nodes).time_s);
    }
  EXPECT_GT(differs, 0);
}

TEST(ClosedForm, NvlsAllreduceOnOneNode) {
  // NVLS on one node of G = 4 H100s whose NVSwitch reduces (links B = 100 GB/s each way, efficiency 1): each
  // GPU moves n(1 + 1/G) bytes each way at B·0.85 (NCCL's Hopper NVLS efficiency, as wire bytes 1/0.85 per
  // byte), in NCCL's loops of L = 16 channels x G heads x chunk bytes (n = 64 MiB < 64·16·G·128 KiB: 64 KiB
  // chunks, L = 4 MiB, k = 16 loops). Loop l goes up in round l and comes down in round l + 1, so k + 1
  // rounds of one loop each way, each message after Simple's NVLink step latency s = 3.4 us, NCCL's 25 us
  // once:
  //   T = 25 us + (k + 1) · (s + L(1 + 1/G) / (0.85·B))
  // With a 2.5 MiB short last loop (n = 62.5 MiB, k = 16 loops, 15 full) every round moves a full loop one
  // way or the other except the last, which brings the short one down:
  //   T = 25 us + (k + 1)·s + (k + 2.5/4) · L(1 + 1/G) / (0.85·B)
  // (each round's time rounds to the picosecond: 17 rounds, within 20 ps).
  const double G = 4, B = 100e9, L = 16 * G * 65536, k = 16;
  auto run_nvls = [&](double n, bool fast, const std::string& strategy, const std::string& comm = "") {
    Scenario sc =
        scenario_from(fmt::format("name: nvls\n"
                                  "cluster:\n"
                                  "  nodes: 1\n"
                                  "  gpu: h100\n"
                                  "  node: {{gpus: 4, nics: 1, gpu_link: {{kind: nvswitch, bandwidth: "
                                  "100GB/s, latency: 1us, nvls: true}},\n"
                                  "         pcie: {{bandwidth: 50GB/s, latency: 1us}}}}\n"
                                  "  network: {{kind: star, link: {{bandwidth: 25GB/s, latency: 1us}}}}\n"
                                  "  comm: {{protocols: nccl{}}}\n"
                                  "workload: {{collective: allreduce, bytes: {}B}}\n"
                                  "strategies:\n  - {}\n",
                                  comm, n, strategy));
    return run_collective_workload(sc, sc.strategies.at(0), 1, EngineOptions{fast}).time_s;
  };
  const double per_loop = L * (1 + 1 / G) / (0.85 * B), step = 3.4e-6;
  for (bool fast : {true, false}) {
    SCOPED_TRACE(fast);
    EXPECT_NEAR(run_nvls(64 * 1048576.0, fast, "nvls"), 25e-6 + (k + 1) * (step + per_loop), 20e-12);
    EXPECT_NEAR(run_nvls(62.5 * 1048576.0, fast, "nvls"), 25e-6 + (k + 1) * step + (k + 2.5 / 4) * per_loop,
                20e-12);
    // NCCL's tuner runs NVLS here too (its estimate 658 us against the ring's 1035 us with Simple).
    EXPECT_NEAR(run_nvls(64 * 1048576.0, fast, "{name: hierarchical, inter_node: auto}"),
                25e-6 + (k + 1) * (step + per_loop), 20e-12);
  }
  // NCCL_NVLS_CHUNKSIZE = 512 KiB: from 64 loops' worth (n = 64 · 16·G·512 KiB = 2 GiB) the chunk stays
  // 512 KiB, loops of 8L: k' = 2 GiB / 8L = 64 loops, T = 25 us + (k' + 1)·(s + 8L(1 + 1/G)/(0.85·B)). A
  // larger setting changes nothing: NVLS's chunk starts from Simple's 512 KiB step, which the setting only
  // caps.
  const double two_gib = 2.0 * (1 << 30);
  EXPECT_NEAR(run_nvls(two_gib, true, "nvls", ", nvls_chunk: 512KiB"), 25e-6 + 65 * (step + 8 * per_loop),
              70e-12);
  EXPECT_EQ(run_nvls(two_gib, true, "nvls", ", nvls_chunk: 4MiB"),
            run_nvls(two_gib, true, "nvls", ", nvls_chunk: 512KiB"));
  // 64 TiB: NCCL's full 128 KiB chunks, loops of 2L, 8,388,608 of them, 42 MB per round from the switch. The
  // plan's bound on its time stays below the fast path's limit (the PS host transports, 0.24 GB/s per
  // process, do not price a plan's messages), so it runs there, its steady loops skipped, and equals the
  // closed form with 2L per loop.
  const double big_loops = 8388608, huge = big_loops * 2 * L;
  Scenario sc =
      scenario_from(fmt::format("name: nvls\n"
                                "cluster:\n"
                                "  nodes: 1\n"
                                "  gpu: h100\n"
                                "  node: {{gpus: 4, nics: 1, gpu_link: {{kind: nvswitch, bandwidth: 100GB/s, "
                                "latency: 1us, nvls: true}},\n"
                                "         pcie: {{bandwidth: 50GB/s, latency: 1us}}}}\n"
                                "  network: {{kind: star, link: {{bandwidth: 25GB/s, latency: 1us}}}}\n"
                                "workload: {{collective: allreduce, bytes: {}B}}\n"
                                "strategies: [nvls]\n",
                                huge));
  CollectiveResult r = run_collective_workload(sc, sc.strategies.at(0), 1, EngineOptions{true});
  EXPECT_EQ(r.stats.fast_messages, r.stats.messages);
  EXPECT_NEAR(r.time_s, 25e-6 + (big_loops + 1) * (step + 2 * per_loop),
              (big_loops + 1) * 1e-12);  // 1 ps a round
}

// A shipped topology (topologies/NAME.yaml) on `nodes` nodes: the DGX H100 and the DGX A100 ones; and what a
// hierarchical allreduce with inter_node auto runs on every GPU of a cluster built from one (NCCL's tuner:
// the algorithm the plan resolves to).
ClusterConfig shipped(const std::string& name, int nodes) {
  YamlNode root =
      YamlNode::load_string(std::string("cluster: {topology: ") + DDLSIM_SOURCE_DIR + "/topologies/" + name +
                                ".yaml, nodes: " + std::to_string(nodes) + "}\n",
                            name + ".yaml");
  return parse_cluster(root["cluster"], false);
}
ClusterConfig dgx_h100(int nodes) {
  return shipped("dgx-h100-ndr-fattree", nodes);
}
ClusterConfig dgx_a100(int nodes) {
  return shipped("dgx-a100-hdr-fattree", nodes);
}
Algorithm nccl_choice(const Cluster& cl, double bytes) {
  CollectiveShape shape;
  shape.algorithm = Algorithm::Hierarchical;
  shape.inter_node = Algorithm::Auto;
  shape.ranks = static_cast<uint32_t>(cl.gpus.size());
  shape.ranks_per_node = static_cast<uint32_t>(cl.gpus_per_node);
  shape.bytes = bytes;
  cluster_plan(shape, cl, 0);
  return shape.algorithm;
}

TEST(ClosedForm, NvlsTreeAcrossNodes) {
  // NVLSTree on N nodes of G = 4 H100s whose NVSwitch reduces (B = 100 GB/s each way), a NIC per GPU on a
  // star of C per link. NCCL's loops: L = 16 channels x G heads x 128 KiB = 8 MiB (n of at least 4 loops; 64
  // KiB chunks from 4 nodes). Per loop, each GPU moves L(1 + 1/G) each way over NVLink (its loop up and the
  // sums of its slice's two halves back into the switch; its slice's node sum and the nodes' sums down) and,
  // on two nodes, L/G each way through its NIC (half its slice up one tree, the other half's sum down the
  // other, both to the peer node's head of that slice). Once the pipeline is full every round moves one whole
  // loop through each phase, so each further loop adds one round:
  //   NVLink-bound (C = 100 GB/s):  dT = s + L(1 + 1/G) / (0.85·B)  (s = 3.4 us: Simple's NVLink step,
  //                                 0.85: NCCL's NVLS efficiency on Hopper, as wire bytes 1/0.85 per byte)
  //   NIC-bound (C = 5 GB/s):       dT = L / (G·C)  (the two halves share the NIC; streamed behind loop 0)
  // The fast path and the flow model (--no-fast) give the same time to the picosecond, on 2 to 8 nodes.
  const double G = 4, B = 100e9, L = 16 * G * 131072, s = 3.4e-6;
  auto run_tree = [&](int nodes, double loops, const char* nic, bool fast, const std::string& chunks = "",
                      double loop = 16 * 4 * 131072) {
    Scenario sc =
        scenario_from(fmt::format("name: nvls-tree\n"
                                  "cluster:\n"
                                  "  nodes: {}\n"
                                  "  gpu: h100\n"
                                  "  node: {{gpus: 4, nics: 4, gpu_link: {{kind: nvswitch, bandwidth: "
                                  "100GB/s, latency: 1us, nvls: true}},\n"
                                  "         pcie: {{bandwidth: 200GB/s, latency: 1us}}}}\n"
                                  "  network: {{kind: star, link: {{bandwidth: {}, latency: 1us}}}}\n"
                                  "  comm: {{protocols: nccl{}}}\n"
                                  "workload: {{collective: allreduce, bytes: {}B}}\n"
                                  "strategies: [nvls-tree]\n",
                                  nodes, nic, chunks, loops * loop));
    return run_collective_workload(sc, sc.strategies.at(0), nodes, EngineOptions{fast}).time_s;
  };
  for (bool fast : {true, false}) {
    SCOPED_TRACE(fast);
    EXPECT_NEAR(run_tree(2, 16, "100GB/s", fast) - run_tree(2, 8, "100GB/s", fast),
                8 * (s + L * (1 + 1 / G) / (0.85 * B)), 1e-9);
    EXPECT_NEAR(run_tree(2, 16, "5GB/s", fast) - run_tree(2, 8, "5GB/s", fast), 8 * L / (G * 5e9), 1e-9);
  }
  for (int nodes : {2, 3, 8})
    for (const char* nic : {"100GB/s", "5GB/s"}) {
      SCOPED_TRACE(fmt::format("{} nodes, {}", nodes, nic));
      EXPECT_EQ(run_tree(nodes, 12.5, nic, true), run_tree(nodes, 12.5, nic, false));
    }
  // NCCL_NVLS_CHUNKSIZE = NCCL_NVLSTREE_MAX_CHUNKSIZE = 512 KiB (aws-ofi-nccl's p5 setting): loops of
  // L' = 16 x G x 512 KiB = 4L, whole from 32 loops' worth (below that NCCL cuts the chunk to 256 KiB), so
  //   dT = 64 · (s + L'(1 + 1/G) / (0.85·B))  from 64 to 128 loops of L',
  // a quarter of the step latencies of the same bytes in 128 KiB loops. The cap alone (512 KiB chunk, 128
  // KiB cap) gives NCCL's default loops back, and from 4 nodes NCCL's own cap (64 KiB) holds whatever the
  // chunk.
  const std::string big = ", nvls_chunk: 512KiB, nvls_tree_max_chunk: 512KiB";
  const double L4 = 4 * L;
  EXPECT_NEAR(run_tree(2, 128, "100GB/s", true, big, L4) - run_tree(2, 64, "100GB/s", true, big, L4),
              64 * (s + L4 * (1 + 1 / G) / (0.85 * B)), 1e-9);
  EXPECT_EQ(run_tree(2, 12.5, "100GB/s", true, ", nvls_chunk: 512KiB, nvls_tree_max_chunk: 128KiB"),
            run_tree(2, 12.5, "100GB/s", true));
  EXPECT_EQ(run_tree(4, 12.5, "100GB/s", true, ", nvls_chunk: 512KiB"), run_tree(4, 12.5, "100GB/s", true));
}

TEST(ClosedForm, NcclTunerReadsTheHostCpu) {
  // Two DGX H100 nodes (16 GPUs, 8 per node) as NCCL's tuner sees them with Intel hosts (as shipped) and with
  // AMD hosts (tuning.cc): across nodes the LL protocol's bandwidth bound is llMaxBws of the CPU's row, 39
  // GB/s on Intel and 22.5 on AMD at 2 nodes, and a ring step's floor is the network proxy's post overhead,
  // 1 us on Intel and 2 us on AMD (getNetOverhead). With LL the ring's NVLink step (0.6 us) is below both,
  // so its 2(p − 1) − 2(N − 1) = 28 steps inside the nodes cost 28 us more on AMD; at 8 B the bandwidth
  // terms differ by under a nanosecond.
  ClusterConfig intel = dgx_h100(2), amd = intel;
  amd.host_cpu = HostCpu::Amd;
  auto ll = [](const ClusterConfig& config, Algorithm between, double bytes) {
    Cluster c = build_cluster(config, 2);
    CollectiveShape shape;
    shape.algorithm = Algorithm::Hierarchical;
    shape.inter_node = between;
    shape.ranks = 16;
    shape.ranks_per_node = 8;
    shape.bytes = bytes;
    shape.channels = ring_channels(c, 0);
    for (const NcclEstimate& e : nccl_estimates(shape, c))
      if (e.messages.name == std::string("LL")) return e;
    ADD_FAILURE() << "no LL estimate";
    return NcclEstimate{};
  };
  EXPECT_NEAR(ll(amd, Algorithm::DoubleTree, 1 << 20).messages.rate_cap /
                  ll(intel, Algorithm::DoubleTree, 1 << 20).messages.rate_cap,
              22.5 / 39.0, 1e-12);
  EXPECT_NEAR(ll(amd, Algorithm::Ring, 8).seconds - ll(intel, Algorithm::Ring, 8).seconds, 28e-6, 1e-9);
}

TEST(ClosedForm, NcclTunerPicksNvlsTreeAcrossNodesForLargeSizes) {
  // Two DGX H100 nodes: NCCL's tuner weighs NVLSTree (NVLS in each node, the trees between them) against its
  // ring and tree. NVLSTree's latency (25 us + 2 network steps) loses to the tree with LL at small sizes; its
  // bandwidth (NVLink's 370 GB/s x 0.85 x 15/16 x 2 = 590 GB/s bus, the NICs doubled on two nodes) wins from
  // 16 MiB on
  // (`ddlsim describe`). Without nvls in the topology the same nodes run the tree or ring.
  ClusterConfig config = dgx_h100(2);
  Cluster c = build_cluster(config, 2);
  EXPECT_EQ(nccl_choice(c, 4096), Algorithm::Hierarchical);
  EXPECT_EQ(nccl_choice(c, 16 * 1048576.0), Algorithm::NvlsTree);
  EXPECT_EQ(nccl_choice(c, 1 << 30), Algorithm::NvlsTree);
  config.node->nvls = false;
  EXPECT_EQ(nccl_choice(build_cluster(config, 2), 1 << 30), Algorithm::Hierarchical);
}

TEST(ClosedForm, CollNetOnAStar) {
  // SHARP in the star's one switch, every rank its own node: each sends its loops (c = 512 KiB: n = 100 MB is
  // at least 128 of them) up its cable, the switch sums them at line rate and sends the sum down every cable.
  // Loop i goes up in round i+1 and comes down in round i+2, on the cable's other direction; loop 0 pays the
  // cable's latency l each way, the loops behind it stream, and the last loop (n - (K-1)c) comes down alone:
  //   T = 2l + (n + c)/B, whatever p. The fast path and the flow model agree to the picosecond.
  const double c = 512 * 1024;
  for (int p : {2, 4, 16})
    for (bool fast : {true, false}) {
      SCOPED_TRACE(fmt::format("{} ranks, fast {}", p, fast));
      Scenario sc = scenario_from(
          fmt::format("name: collnet\ncluster:\n  nodes: {}\n  gpu: a100-40gb\n"
                      "  network: {{kind: star, link: {{bandwidth: 25GB/s, latency: 1us}}, sharp: true}}\n"
                      "workload: {{collective: allreduce, bytes: 100MB}}\nstrategies: [collnet]\n",
                      p));
      CollectiveResult r = run_collective_workload(sc, sc.strategies.at(0), p, EngineOptions{fast});
      EXPECT_EQ(r.algorithm, "collnet");
      expect_rel(r.time_s, 2 * kL + (kN + c) / kB);
    }
}

TEST(ClosedForm, CollNetAcrossNodes) {
  // CollNet Direct on 2 nodes of G = 4 GPUs on an NVSwitch (B = 100 GB/s each way), a NIC per GPU on a star
  // of C per link whose switch sums (SHARP), under NCCL's protocols. NCCL's loops: L = 4 channels (one per
  // NIC) x G heads x 128 KiB (n of 128 to 192 loops' worth of 512 and 256 KiB chunks halves them to 128 KiB).
  // Per loop each GPU sends every other GPU of its node its slice (L/G) and, as that slice's head, the
  // slice's sum over all nodes (L/G): 2(G-1)L/G over NVLink, at most B/(G-1) to each peer (a GPU drives its
  // NVLink at B in all); and L/G up its NIC to the switch, and L/G down. Once the pipeline is full each
  // further loop adds one round, streamed behind loop 0:
  //   NVLink-bound (C = 100 GB/s):  dT = 2(G-1)L / (G·B)
  //   NIC-bound (C = 5 GB/s):       dT = L / (G·C)
  // The fast path and the flow model (--no-fast) give the same time to the picosecond.
  const double G = 4, B = 100e9, L = 4 * G * 131072;
  auto run_collnet = [&](double loops, const char* nic, bool fast) {
    Scenario sc = scenario_from(fmt::format(
        "name: collnet\n"
        "cluster:\n"
        "  nodes: 2\n"
        "  gpu: h100\n"
        "  node: {{gpus: 4, nics: 4, gpu_link: {{kind: nvswitch, bandwidth: 100GB/s, latency: 1us}},\n"
        "         pcie: {{bandwidth: 200GB/s, latency: 1us}}}}\n"
        "  network: {{kind: star, link: {{bandwidth: {}, latency: 1us}}, sharp: true}}\n"
        "  comm: {{protocols: nccl}}\n"
        "workload: {{collective: allreduce, bytes: {}B}}\n"
        "strategies: [collnet]\n",
        nic, loops * L));
    return run_collective_workload(sc, sc.strategies.at(0), 2, EngineOptions{fast}).time_s;
  };
  for (bool fast : {true, false}) {
    SCOPED_TRACE(fast);
    EXPECT_NEAR(run_collnet(24, "100GB/s", fast) - run_collnet(16, "100GB/s", fast),
                8 * 2 * (G - 1) * L / (G * B), 1e-12);
    EXPECT_NEAR(run_collnet(24, "5GB/s", fast) - run_collnet(16, "5GB/s", fast), 8 * L / (G * 5e9), 1e-12);
  }
}

TEST(CollNet, SwitchTreesFollowTheRoutesToTheTopOfTheFabric) {
  // DGX A100 nodes on a 2-level fat-tree of 20-port leaves: with 2 nodes (16 NICs) on one leaf every slice's
  // tree is that leaf alone; with 6 nodes across leaves its root is a spine and every head's parent is the
  // leaf its NIC is cabled to.
  for (int nodes : {2, 6}) {
    SCOPED_TRACE(nodes);
    Cluster c = build_cluster(dgx_a100(nodes), nodes);
    auto trees = switch_trees(c, static_cast<uint32_t>(c.gpus.size()));
    ASSERT_EQ(trees->size(), 8u);
    for (uint32_t l = 0; l < 8; ++l) {
      const SwitchTree& t = (*trees)[l];
      const VertexId top = t.switches[0];  // the root comes first
      EXPECT_EQ(t.parent[nodes], SwitchTree::kRoot);
      EXPECT_EQ(c.topo.vertex(top).name.rfind(nodes == 2 ? "leaf" : "spine", 0), 0u)
          << c.topo.vertex(top).name;
      for (int i = 0; i < nodes; ++i) {
        const VertexId nic = c.topo.vertex(c.gpus[static_cast<size_t>(i) * 8 + l]).nic;
        const VertexId leaf = t.switches[t.parent[i] - nodes];
        bool cabled = false;
        for (LinkId k : c.topo.out_links(nic)) cabled = cabled || c.topo.links()[k].to == leaf;
        EXPECT_TRUE(cabled) << "node " << i << " slice " << l;
      }
    }
  }
}

TEST(CollNet, EveryRoundReceivesWhatWasSentAndEveryCableCarriesASlice) {
  // CollNet on 3 and 6 DGX A100 nodes (trees with heads at different depths where nodes straddle leaves): in
  // every round each member receives as many messages as were sent to it; over the whole call each GPU sends
  // 2(G-1)/G·n to the GPUs of its node and n/G up its tree, every switch n/G up (but the root) and n/G down
  // to each child; the fast path and the flow model agree to the picosecond.
  for (int nodes : {3, 6}) {
    SCOPED_TRACE(nodes);
    ClusterConfig config = dgx_a100(nodes);
    config.network.sharp = true;
    Cluster c = build_cluster(config, nodes);
    const double n = 96 * 1048576.0, G = 8;
    const uint32_t p = static_cast<uint32_t>(c.gpus.size());
    CollectiveShape shape{Algorithm::CollNet, p, 8, 0, n};
    std::unique_ptr<CollectivePlan> plan = cluster_plan(shape, c, 0);
    const std::vector<VertexId> members = plan_members(shape, c);
    ASSERT_EQ(members.size(), plan->members());
    std::vector<uint32_t> got(plan->members());
    std::vector<double> local(plan->members(), 0), up(plan->members(), 0);
    std::vector<Send> out;
    for (uint32_t t = 0; t < plan->rounds(); ++t) {
      std::fill(got.begin(), got.end(), 0u);
      for (uint32_t r = 0; r < plan->members(); ++r) {
        out.clear();
        plan->sends(r, t, out);
        for (const Send& m : out) {
          ++got[m.peer];
          (r < p && m.peer < p ? local : up)[r] += m.bytes;
        }
      }
      for (uint32_t r = 0; r < plan->members(); ++r) ASSERT_EQ(got[r], plan->receives(r, t)) << r << " " << t;
    }
    for (uint32_t r = 0; r < p; ++r) {
      EXPECT_NEAR(local[r], 2 * (G - 1) / G * n, 1e-6 * n) << r;
      EXPECT_NEAR(up[r], n / G, 1e-6 * n) << r;
    }
    // A switch sends n/G to its parent and n/G to each child: a multiple of n/G.
    for (uint32_t r = p; r < plan->members(); ++r) {
      const double slices = up[r] / (n / G);
      EXPECT_NEAR(slices, std::round(slices), 1e-6) << r;
      EXPECT_GE(slices, 2) << r;
    }
    Scenario sc = scenario_from(fmt::format(
        "name: collnet\ncluster:\n  topology: {}/topologies/dgx-a100-hdr-fattree.yaml\n  nodes: {}\n"
        "  network: {{kind: fat-tree, levels: 2, hosts_per_leaf: 20, link: {{bandwidth: 200Gb/s, latency: "
        "130ns}}, sharp: true}}\n"
        "workload: {{collective: allreduce, bytes: 96MiB}}\nstrategies: [collnet]\n",
        DDLSIM_SOURCE_DIR, nodes));
    EXPECT_EQ(run_collective_workload(sc, sc.strategies.at(0), nodes, EngineOptions{true}).time_s,
              run_collective_workload(sc, sc.strategies.at(0), nodes, EngineOptions{false}).time_s);
  }
}

TEST(ClosedForm, NcclTunerPicksCollNetWhereTheFabricReduces) {
  // Four DGX A100 on HDR whose switches sum (SHARP): NCCL's CollNet Direct estimate (one GPU's NVLink at
  // NCCL's 240 GB/s, 8 GPUs on 8 NICs, halved: 120 GB/s; latency 2 x 3.7 + 14 x 0.4 + 31 = 44 us) loses to
  // the double tree with LL at small sizes and beats the ring and the tree from 256 KiB on (`ddlsim
  // describe`). Without sharp the same nodes run the ring or the tree; so do nodes without an NVSwitch (NCCL
  // runs CollNet Direct only on NVSwitch nodes). The simulation of 1 GiB is NVLink-bound: 2(G-1)/G·n at 240
  // GB/s each way per GPU (7.83 ms), 8.00 ms with the pipeline's fill and its latencies; the ring across the
  // NICs takes 9.6.
  ClusterConfig config = dgx_a100(4);
  config.network.sharp = true;
  Cluster c = build_cluster(config, 4);
  EXPECT_EQ(nccl_choice(c, 4096), Algorithm::Hierarchical);
  EXPECT_EQ(nccl_choice(c, 256 * 1024.0), Algorithm::CollNet);
  EXPECT_EQ(nccl_choice(c, 1 << 30), Algorithm::CollNet);
  CollectiveShape shape{Algorithm::CollNet, 32, 8, 0, 1 << 30};
  std::unique_ptr<CollectivePlan> plan = cluster_plan(shape, c, 0);
  EXPECT_STREQ(plan->protocol().name, "Simple");
  config.network.sharp = false;
  EXPECT_EQ(nccl_choice(build_cluster(config, 4), 1 << 30), Algorithm::Hierarchical);
  config.network.sharp = true;
  config.node->gpu_link_kind = GpuLinkKind::NvlinkMesh;
  EXPECT_EQ(nccl_choice(build_cluster(config, 4), 1 << 30), Algorithm::Hierarchical);
  auto run_1gib = [&](const char* strategy) {
    Scenario sc = scenario_from(fmt::format(
        "name: collnet\ncluster:\n  topology: {}/topologies/dgx-a100-hdr-fattree.yaml\n  nodes: 4\n"
        "  network: {{kind: fat-tree, levels: 2, hosts_per_leaf: 20, link: {{bandwidth: 200Gb/s, latency: "
        "130ns}}, sharp: true}}\n"
        "workload: {{collective: allreduce, bytes: 1GiB}}\nstrategies: [{}]\n",
        DDLSIM_SOURCE_DIR, strategy));
    return run_collective_workload(sc, sc.strategies.at(0), 4);
  };
  const CollectiveResult collnet = run_1gib("{name: hierarchical, inter_node: auto}");
  EXPECT_EQ(collnet.algorithm, "collnet");
  const double bound = 2 * 7.0 / 8 * (1 << 30) / 240e9;
  EXPECT_GT(collnet.time_s, bound);
  EXPECT_LT(collnet.time_s, 1.03 * bound);
  EXPECT_LT(collnet.time_s, run_1gib("{name: hierarchical, inter_node: ring}").time_s);
}

TEST(ClosedForm, NcclTunerPicksNvlsAboveItsLatency) {
  // One DGX H100 (NVSwitches that reduce): NCCL's tuner runs the ring with LL where its 15 us beat NVLS's 25
  // us, and NVLS from where NVLS's bandwidth repays its latency (between 256 KiB and 2 MiB, `ddlsim describe`
  // on scenarios/dgx-h100-nccl-tests.yaml). Without nvls in the topology the same node runs the ring.
  ClusterConfig config = dgx_h100(1);
  Cluster c = build_cluster(config, 1);
  EXPECT_EQ(nccl_choice(c, 256 * 1024.0), Algorithm::Hierarchical);
  EXPECT_EQ(nccl_choice(c, 2 * 1048576.0), Algorithm::Nvls);
  EXPECT_EQ(nccl_choice(c, 1 << 30), Algorithm::Nvls);
  // NVLS runs Simple alone: without Simple (nccl_proto: LL,LL128) NCCL leaves it out too.
  ClusterConfig no_simple = config;
  no_simple.comm.nccl_proto = std::array<bool, 3>{true, true, false};
  EXPECT_EQ(nccl_choice(build_cluster(no_simple, 1), 1 << 30), Algorithm::Hierarchical);
  config.node->nvls = false;
  EXPECT_EQ(nccl_choice(build_cluster(config, 1), 1 << 30), Algorithm::Hierarchical);
}

TEST(ClosedForm, RhdMatchesTheRingBandwidthTerm) {
  // Both reach the bandwidth lower bound 2(p−1)/p·n/B (Patarasuk & Yuan); they differ only in latency terms:
  // ring − rhd = (2(p−1) − 2·log2 p)·2l.
  int p = 16;
  double diff = run(p, "ring").time_s - run(p, "rhd").time_s;
  EXPECT_NEAR(diff, (2.0 * (p - 1) - 2 * std::log2(p)) * 2 * kL, 1e-9 * run(p, "ring").time_s);
}

TEST(ClosedForm, HierarchicalWithEachInterNodeAlgorithm) {
  // N nodes of g ranks: intra-node ring reduce-scatter and all-gather, g−1 rounds of n/g each, around an
  // allreduce of the node's n/g slice between nodes (local rank l of every node in one group; the g groups
  // run at once on their own cables):
  //   T = 2(g−1)·(2l + n/(g·B)) + T_inter(N, n/g)
  //   ring: 2(N−1)·(2l + n/(g·N·B));  rhd (N a power of two): 2·log2(N)·2l + 2(N−1)/N·n/(g·B)
  const int g = 2;
  for (int nodes : {2, 4, 8}) {
    SCOPED_TRACE(nodes);
    int p = g * nodes;
    double intra = 2.0 * (g - 1) * (2 * kL + kN / (g * kB));
    double ring = 2.0 * (nodes - 1) * (2 * kL + kN / (g * nodes * kB));
    double rhd = 2 * std::log2(nodes) * 2 * kL + 2.0 * (nodes - 1) / nodes * kN / (g * kB);
    for (bool fast : {true, false}) {
      expect_rel(run(p, "hierarchical", "", "allreduce", fast, g).time_s, intra + ring);
      expect_rel(run(p, "{name: hierarchical, inter_node: ring}", "", "allreduce", fast, g).time_s,
                 intra + ring);
      expect_rel(run(p, "{name: hierarchical, inter_node: rhd}", "", "allreduce", fast, g).time_s,
                 intra + rhd);
    }
  }
}

TEST(ClosedForm, PipelinedHierarchicalOverlapsItsPhases) {
  // comm.pipeline_chunk: 2 nodes of g = 2 GPUs (NVLink between them, B_i = 100 GB/s; a NIC each behind PCIe
  // to a 10 GB/s star, B_e; every link latency 0, α_intra = 2 us, α_inter = 5 us), n = 8 MiB. Two channels
  // (a NIC per GPU) of 1 MiB chunks: K = n / (2·1 MiB) = 4 chunks, each the hierarchical schedule of n/K (D =
  // 4 steps: intra reduce-scatter, a = n/(K·g) = 1 MiB to the other GPU; inter reduce-scatter and all-gather,
  // b = n/(K·g·N) = 0.5 MiB to the other node; intra all-gather, a), chunk c starting in round c. A round's
  // NVLink message carries its chunks' intra steps, its NIC message their inter steps, in parallel; only a
  // message with chunk 0 in it pays its α (the chunks behind it stream). By round (chunk@step):
  //   0: 0@0               T0 = α_i + a/B_i
  //   1: 0@1 1@0           T1 = max(a/B_i, α_e + b/B_e)
  //   2: 0@2 1@1 2@0       T2 = max(a/B_i, α_e + 2b/B_e)
  //   3: 0@3 1@2 2@1 3@0   T3 = max(α_i + 2a/B_i, 2b/B_e)
  //   4: 1@3 2@2 3@1       T4 = max(a/B_i, 2b/B_e)
  //   5: 2@3 3@2           T5 = max(a/B_i, b/B_e)
  //   6: 3@3               T6 = a/B_i
  // plus each round's sums after it at γ = 1/R, R = 50 GB/s: the reduce-scatter steps, 4a + 4b in all.
  // Without pipeline_chunk the phases run one after the other on the whole buffer (4a and 4b per step):
  //   2(α_i + 4a/B_i) + 2(α_e + 4b/B_e) + (4a + 4b)/R
  const double a = 1048576, b = a / 2, Bi = 100e9, Be = 10e9, ai = 2e-6, ae = 5e-6, R = 50e9;
  auto run_hier = [&](const std::string& pipeline, bool fast) {
    Scenario sc = scenario_from(fmt::format(
        "name: pipelined\n"
        "cluster:\n"
        "  nodes: 2\n"
        "  gpu: a100-40gb\n"
        "  node: {{gpus: 2, nics: 2, gpu_link: {{kind: nvlink-mesh, bandwidth: 100GB/s, latency: 0us}},\n"
        "         pcie: {{bandwidth: 50GB/s, latency: 0us}}}}\n"
        "  network: {{kind: star, link: {{bandwidth: 10GB/s, latency: 0us}}}}\n"
        "  comm: {{alpha_intra: 2us, alpha_inter: 5us, reduce_bandwidth_gpu: 50GB/s{}}}\n"
        "workload: {{collective: allreduce, bytes: 8MiB}}\n"
        "strategies:\n  - {{name: hierarchical, inter_node: ring}}\n",
        pipeline));
    return run_collective_workload(sc, sc.strategies.at(0), 2, EngineOptions{fast}).time_s;
  };
  const double pipelined = (ai + a / Bi) + std::max(a / Bi, ae + b / Be) + std::max(a / Bi, ae + 2 * b / Be) +
                           std::max(ai + 2 * a / Bi, 2 * b / Be) + std::max(a / Bi, 2 * b / Be) +
                           std::max(a / Bi, b / Be) + a / Bi + (4 * a + 4 * b) / R;
  const double phases = 2 * (ai + 4 * a / Bi) + 2 * (ae + 4 * b / Be) + (4 * a + 4 * b) / R;
  for (bool fast : {true, false}) {
    SCOPED_TRACE(fast);
    expect_rel(run_hier(", pipeline_chunk: 1MiB", fast), pipelined);
    expect_rel(run_hier("", fast), phases);
  }
  // The NIC phase bounds both; the pipeline hides most of the NVLink phases, 2(α_i + 4a/B_i) = 88 us of them.
  EXPECT_LT(pipelined, phases - 0.5 * 2 * (ai + 4 * a / Bi));
}

TEST(ClosedForm, PipelinedHierarchicalTreeAcrossNodes) {
  // comm.pipeline_chunk with NCCL's double binary tree between N = 4 nodes of g = 2 GPUs (NVLink 100 GB/s, a
  // NIC per GPU behind 50 GB/s of PCIe to a star of B_e = 10 GB/s; α_intra 2 us, α_inter 5 us), chunks of C =
  // 1 MiB per channel, two channels: n = 2KC. Chunk c runs from round c: the intra reduce-scatter (part C to
  // the other GPU), the trees on each GPU's slice (halves h = C/2), each half's intra all-gather once the
  // node has its sum. The trees over positions 0..3 (tree 1 mirrored): nodes 1 and 2 are inner in one tree
  // (up h, down 2h) and leaves in the other (up h), so their NICs carry 4h = 2C each way per round, nodes 0
  // and 3 (the roots) 2C/2. Once the pipeline is full every round moves one chunk through each phase, so each
  // further chunk adds one round, bound by those NICs and, where sums cost γ = 1/R (R = 50 GB/s), by what
  // nodes 1 and 2 sum after it (their reduce-scatter part C and their two children's halves, C):
  //   dT = 2C/B_e  (sums free);   dT = 2C/B_e + 2C/R
  // The fast path and the flow model agree to the picosecond, and the pipeline beats the phases one after
  // the other (pipeline_chunk: none).
  const double C = 1048576, Be = 10e9, R = 50e9;
  auto run_tree = [&](double chunks, const std::string& comm, bool fast) {
    Scenario sc = scenario_from(fmt::format(
        "name: pipelined-tree\n"
        "cluster:\n"
        "  nodes: 4\n"
        "  gpu: a100-40gb\n"
        "  node: {{gpus: 2, nics: 2, gpu_link: {{kind: nvlink-mesh, bandwidth: 100GB/s, latency: 0us}},\n"
        "         pcie: {{bandwidth: 50GB/s, latency: 0us}}}}\n"
        "  network: {{kind: star, link: {{bandwidth: 10GB/s, latency: 0us}}}}\n"
        "  comm: {{alpha_intra: 2us, alpha_inter: 5us{}}}\n"
        "workload: {{collective: allreduce, bytes: {}B}}\n"
        "strategies:\n  - {{name: hierarchical, inter_node: double-tree}}\n",
        comm, 2 * chunks * C));
    return run_collective_workload(sc, sc.strategies.at(0), 4, EngineOptions{fast}).time_s;
  };
  const std::string piped = ", pipeline_chunk: 1MiB", summed = piped + ", reduce_bandwidth_gpu: 50GB/s";
  for (bool fast : {true, false}) {
    SCOPED_TRACE(fast);
    EXPECT_NEAR(run_tree(16, piped, fast) - run_tree(8, piped, fast), 8 * 2 * C / Be, 1e-9);
    EXPECT_NEAR(run_tree(16, summed, fast) - run_tree(8, summed, fast), 8 * (2 * C / Be + 2 * C / R), 1e-9);
    EXPECT_LT(run_tree(8, piped, fast), run_tree(8, ", pipeline_chunk: none", fast));
  }
  EXPECT_EQ(run_tree(8, summed, true), run_tree(8, summed, false));
}

TEST(ClosedForm, ParameterServerDedicated) {
  // p workers, k dedicated servers, equal links. Push: worker uplinks carry n (k flows of n/k), each server
  // downlink carries p·n/k; pull mirrors it. T = 2·max(n/B, p·n/(k·B)) + 2·2l
  int p = 16;
  for (int k : {1, 4, 16}) {
    SCOPED_TRACE(k);
    double want = 2 * std::max(kN / kB, p * kN / (k * kB)) + 2 * 2 * kL;
    std::string st = fmt::format("{{name: ps, servers: {}, placement: dedicated}}", k);
    expect_rel(run(p, st).time_s, want);
    expect_rel(run(p, st, "", "allreduce", false).time_s, want);
  }
}

TEST(ClosedForm, ParameterServerDedicatedWithCpuGamma) {
  // Each server sums p shards of n/k on its CPU between push and pull: p−1 additions per element, +
  // (p−1)·(n/k)·γ_cpu with γ_cpu = 1/(10 GB/s) (γ per byte of one addition, as in ring's (p−1)/p·n·γ).
  int p = 16;
  const double gamma_cpu = 1 / 10e9;
  for (int k : {1, 4}) {
    SCOPED_TRACE(k);
    double want = 2 * std::max(kN / kB, p * kN / (k * kB)) + 2 * 2 * kL + (p - 1) * (kN / k) * gamma_cpu;
    expect_rel(run(p, fmt::format("{{name: ps, servers: {}, placement: dedicated}}", k),
                   "{reduce_bandwidth_cpu: 10GB/s}")
                   .time_s,
               want);
  }
}

TEST(ClosedForm, ParameterServerColocated) {
  // k = p servers on the workers themselves: the shard a worker owns never crosses a link.
  // T = 2(p−1)/p·n/B + 2·2l (the ring's bandwidth term)
  for (int p : {4, 16}) {
    SCOPED_TRACE(p);
    double want = 2.0 * (p - 1) / p * kN / kB + 2 * 2 * kL;
    expect_rel(run(p, fmt::format("{{name: ps, servers: {}, placement: colocated}}", p)).time_s, want);
  }
}

TEST(ClosedForm, GoodputBoundsEveryFlowOnALinkTogether) {
  // goodput_inter g: every fabric link carries g·B for all its flows together; one flow gets e of that.
  // Ring (one flow per link at a time): T = 2(p−1)·(2l + n/(p·e·g·B)).
  // PS with one dedicated server (the server's downlink carries p flows of n, each wanting e·g·B > g·B/p):
  // T = 2·p·n/(g·B) + 2·2l, the same for every e ≥ 1/p: the single-flow efficiency never reaches an incast.
  const int p = 8;
  const double g = 0.941;
  for (double e : {0.5, 0.8, 1.0}) {
    SCOPED_TRACE(e);
    std::string comm = fmt::format("{{goodput_inter: {}, efficiency_inter: {}}}", g, e);
    expect_rel(run(p, "ring", comm).time_s, 2.0 * (p - 1) * (2 * kL + kN / (p * e * g * kB)));
    double ps = 2 * p * kN / (g * kB) + 2 * 2 * kL;
    expect_rel(run(p, "{name: ps, servers: 1, placement: dedicated}", comm).time_s, ps);
    expect_rel(run(p, "{name: ps, servers: 1, placement: dedicated}", comm, "allreduce", false).time_s, ps);
  }
}

TEST(ClosedForm, DirectAllreduce) {
  // Every rank sends its whole buffer to the p−1 others at once: each uplink carries (p−1)·n.
  // T = (p−1)·n/B + 2l
  for (int p : {2, 4, 16}) {
    SCOPED_TRACE(p);
    expect_rel(run(p, "direct").time_s, (p - 1) * kN / kB + 2 * kL);
  }
}

TEST(ClosedForm, DirectAllreduceUnderIncast) {
  // With a TCP incast curve g on the ports into hosts, each port takes p−1 senders at once: its capacity is
  // g(p−1)·B, below the uplinks' B, so T = (p−1)·n/(g(p−1)·B) + 2l, on the fast path (which must decline:
  // the standalone rates overfill the port) and on the flow model alike. g(1) = 1, g(3) = 0.5, g(15) = 0.2.
  const std::string comm = "{incast: {curve: [[1, 1], [3, 0.5], [15, 0.2]]}}";
  for (int p : {2, 4, 16}) {
    SCOPED_TRACE(p);
    double g = p == 2 ? 1.0 : p == 4 ? 0.5 : 0.2;
    double want = (p - 1) * kN / (g * kB) + 2 * kL;
    expect_rel(run(p, "direct", comm).time_s, want);
    expect_rel(run(p, "direct", comm, "allreduce", false).time_s, want);
  }
  // Flows capped at c = 5 GB/s (bandwidth_inter): p−1 = 3 standalone rates fill 15 GB/s of a 25 GB/s port,
  // which fits its line rate but not its incast capacity g(3)·B = 12.5 GB/s, where each gets 12.5/3 < c:
  // T = 3n/(g(3)·B) + 2l (a fast path checking the line rate alone would give n/c + 2l: 20 ms instead of 24).
  const std::string capped = "{bandwidth_inter: 5GB/s, incast: {curve: [[1, 1], [3, 0.5], [15, 0.2]]}}";
  expect_rel(run(4, "direct", capped).time_s, 3 * kN / (0.5 * kB) + 2 * kL);
}

TEST(CollectiveMemory, MessagesInFlightFollowThePlan) {
  // Direct allreduce: every rank sends to the p-1 others in its one round, p(p-1) messages at once; a ring
  // sends one message per rank and round, p. bytes = 20 MB + 1.4 kB·p + 600 B·messages (the measured
  // constants in collective_workload.cpp).
  for (uint32_t p : {10u, 100u, 1000u}) {
    SCOPED_TRACE(p);
    auto direct = make_plan(CollectiveShape{Algorithm::Direct, p, 1, 0, 1e6});
    auto ring = make_plan(CollectiveShape{Algorithm::Ring, p, 1, 0, 1e6});
    CollectiveMemory d = collective_memory(*direct, p), r = collective_memory(*ring, p);
    EXPECT_DOUBLE_EQ(d.messages, double(p) * (p - 1));
    EXPECT_DOUBLE_EQ(r.messages, double(p));
    EXPECT_DOUBLE_EQ(d.bytes, 20e6 + 1.4e3 * p + 600.0 * p * (p - 1));
  }
}

TEST(ClosedForm, BinaryTreeAllreduce) {
  // Full binary tree, p = 2^(h+1) − 1 (height h): at every level two children send n to one parent at once,
  // sharing its downlink (2n/B), and in the broadcast a parent sends n to two children at once, sharing its
  // uplink (2n/B). 2h levels in all: T = 2h·(2n/B + 2l)
  for (int h : {1, 2, 3}) {
    int p = (2 << h) - 1;
    SCOPED_TRACE(p);
    double level = 2 * kN / kB + 2 * kL;
    expect_rel(run(p, "tree").time_s, 2 * h * level);
    // Broadcast alone: the h downward levels, T = h·(2n/B + 2l)
    expect_rel(run(p, "tree", "", "broadcast").time_s, h * level);
  }
  // p = 2: a chain, one message up and one down: T = 2·(n/B + 2l)
  expect_rel(run(2, "tree").time_s, 2 * (kN / kB + 2 * kL));
}

TEST(ClosedForm, DoubleTreeOnTwoRanks) {
  // p = 2: tree 1 has rank 0 as root and rank 1 as its child, tree 2 the mirror. Each carries n/2 in C chunks
  // of c = n/(2C), with c = 512 KiB (C ≥ 8·depth = 8 already holds, so no halving): C = ceil(n/2 / 512 KiB).
  // Round 0: each rank sends chunk 0 up its child tree (c/B); rounds 1..C-1: chunk s up one tree and chunk
  // s-1 down the other, both on the rank's uplink (2c/B); round C: the last chunk down (c/B). Chunk 0 pays
  // the path's latency 2l up (round 0) and down (round 1), where it passes while the uplink carries chunk 1
  // up; the chunks behind it stream on the path it opened. The root of each tree sums one chunk in rounds
  // 0..C-1 (C·c = n/2 at rate R):
  //   T = 2l + 2C·c/B [= n/B] + n/(2R)
  // Each of the C+1 rounds rounds its transfer and its sum to the picosecond: to 2(C+1) ps.
  const double c_chunks = std::ceil(kN / 2 / (512 * 1024.0));
  const double gamma = 1 / 50e9, tol = 2 * (c_chunks + 1) * 1e-12;
  for (bool fast : {true, false}) {
    EXPECT_NEAR(run(2, "double-tree", "", "allreduce", fast).time_s, 2 * kL + kN / kB, tol);
    EXPECT_NEAR(run(2, "double-tree", "{reduce_bandwidth_gpu: 50GB/s}", "allreduce", fast).time_s,
                2 * kL + kN / kB + kN / 2 * gamma, tol);
  }
}

TEST(ClosedForm, HierarchicalAutoTakesTheFasterOfRingAndDoubleTree) {
  // inter_node: auto builds both inter-node plans and keeps the one with the smaller α-β estimate (each
  // message that is not streamed pays its route's latency and α); on an idle star (α = 6 us) that is the
  // faster one wherever they differ by more than 5%: the ring for large buffers on few nodes, the double
  // tree for small buffers on many (ring latency grows as 2(N-1)α, the tree's as the depth, its chunks
  // behind the first streaming). Where they are within 5% (two or three nodes: both send each byte across
  // once each way) the estimate may take either, within 3% of the faster.
  const int g = 2;
  const std::string comm = "{alpha_inter: 6us}";
  int ring_wins = 0, tree_wins = 0;
  for (int nodes : {2, 4, 8, 32, 128})
    for (const char* bytes : {"1MB", "64MB", "256MB"}) {
      SCOPED_TRACE(fmt::format("{} nodes, {}", nodes, bytes));
      auto time = [&](const char* inter) {
        std::string text = fmt::format(
            "name: auto\ncluster:\n  nodes: {}\n  gpus_per_node: {}\n  gpu: a100-40gb\n"
            "  network: {{kind: star, link: {{bandwidth: 25GB/s, latency: 1us}}}}\n  comm: {}\n"
            "workload: {{collective: allreduce, bytes: {}}}\n"
            "strategies:\n  - {{name: hierarchical, inter_node: {}}}\n",
            nodes, g, comm, bytes, inter);
        Scenario sc = scenario_from(text);
        return run_collective_workload(sc, sc.strategies.at(0), nodes).time_s;
      };
      const double ring = time("ring"), tree = time("double-tree"), best = std::min(ring, tree);
      const double chosen = time("auto");
      EXPECT_LE(chosen, best * 1.03);
      if (std::abs(ring - tree) > 0.05 * best) {
        EXPECT_EQ(chosen, best);
      }
      (ring < tree ? ring_wins : tree_wins)++;
    }
  EXPECT_GE(ring_wins, 3);  // both choices were made
  EXPECT_GE(tree_wins, 3);
}

TEST(ClosedForm, BusBandwidth) {
  // nccl-tests: algbw = n / T, busbw = algbw·2(p−1)/p for allreduce.
  int p = 16;
  CollectiveResult r = run(p, "ring");
  expect_rel(r.algbw, kN / r.time_s);
  expect_rel(r.busbw, r.algbw * 2.0 * (p - 1) / p);
  // For the ring the bus bandwidth approaches B as the latency share vanishes: busbw = B·(1 − latency share).
  double t_bw = 2.0 * (p - 1) / p * kN / kB;
  expect_rel(r.busbw, kB * t_bw / r.time_s);
  // reduce-scatter / all-gather: (p−1)/p
  CollectiveResult rs = run(p, "ring", "", "reduce-scatter");
  expect_rel(rs.busbw, rs.algbw * (p - 1.0) / p);
  EXPECT_EQ(r.gpus, p);
  EXPECT_EQ(r.bytes, kN);
}

TEST(ClosedForm, BusFactor) {
  // allreduce 2(p−1)/p; reduce-scatter and all-gather (p−1)/p; broadcast 1; a single rank moves nothing: 0.
  for (int64_t p : {2, 3, 8, 16, 1024}) {
    double pd = static_cast<double>(p);
    EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::Allreduce, p), 2 * (pd - 1) / pd);
    EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::ReduceScatter, p), (pd - 1) / pd);
    EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::AllGather, p), (pd - 1) / pd);
    EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::Broadcast, p), 1.0);
  }
  EXPECT_EQ(bus_factor(CollectiveKind::Allreduce, 1), 0.0);
  EXPECT_EQ(bus_factor(CollectiveKind::Allreduce, 2), 1.0);
}

TEST(ClosedForm, ShippedScenarioMatches) {
  // scenarios/star-ps-vs-ring.yaml is this very setting with p = 16: ring = 2·15·(2 us + 100 MB/(16·25
  // GB/s)).
  Scenario sc = load_scenario(std::string(DDLSIM_SOURCE_DIR) + "/scenarios/star-ps-vs-ring.yaml", {});
  ASSERT_EQ(sc.strategies.at(0).name, "ring");
  CollectiveResult r = run_collective_workload(sc, sc.strategies[0], 16);
  expect_rel(r.time_s, 2.0 * 15 * (2 * kL + kN / (16 * kB)));
}

}  // namespace
}  // namespace ddlsim
