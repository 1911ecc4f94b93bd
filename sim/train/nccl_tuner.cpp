#include "sim/train/nccl_tuner.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "sim/net/topology.hpp"

namespace ddlsim {

namespace {

// NCCL's tuner constants (NVIDIA/nccl, src/graph/tuning.cc at commit 5067397c, ncclTunerConstantsDefaults):
// microseconds and GB/s. Protocols in NCCL's order LL, LL128, Simple; algorithms Tree, Ring.
enum Proto { kLL = 0, kLL128 = 1, kSimple = 2 };
enum Algo { kTree = 0, kRing = 1 };
enum Hw { kNvLink = 0, kPci = 1, kNet = 2 };
constexpr double kBaseLat[2][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}};
constexpr double kHwLat[3][2][3] = {{{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}},
                                    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}},
                                    {{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}}};
// By GPU generation (Volta, Ampere, Hopper, Blackwell) and node count (1, 2, more). llMaxBws: one node by GPU
// generation, several nodes by host CPU (row 0 Intel and Arm, row 1 AMD: the cluster's `host_cpu`).
constexpr double kLlMaxBw[4][3] = {
    {39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}};
constexpr double kRingLL128PerCh[4][3] = {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}, {40, 40, 40}};
constexpr double kTreeLL128PerCh[4][3] = {
    {20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
constexpr double kTreePerCh[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
// Trees fall short of the model at medium sizes: NCCL scales their bandwidth by size (powers of two, 64 B
// up).
constexpr double kTreeCorrection[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};
// Bytes on the wire per payload byte: LL sends 8-byte lines of 4 data bytes and a 4-byte flag, LL128 128-byte
// lines with 8 bytes of flags.
constexpr double kWire[3] = {2.0, 128.0 / 120.0, 1.0};
// NVLS (NVLink SHARP, Simple only): NCCL's efficiency of the switch's reductions relative to NVLink
// (nvlsEfficiency: Hopper 0.85, Blackwell 0.74; none before Hopper), its latency on one node (hwLatencies,
// NVLink row, NVLS Simple: 25 us, with base latency 0), and its channels (src/transport/nvls.cc:
// NVLS_NCHANNELS_SM90 16, NVLS_NCHANNELS_SM100 32).
constexpr double kNvlsEfficiency[4] = {0, 0, 0.85, 0.74};
constexpr double kNvlsLat = 25.0;
// NVLSTree (Simple only): its network step latency (hwLatencies, NET row, NVLSTree Simple: 20.9 us) and
// what a channel drives (perChMaxNVLSTreeBws, Hopper and Blackwell, 2 nodes and more).
constexpr double kNvlsTreeNetLat = 20.9;
constexpr double kNvlsTreePerCh[4][2] = {{0, 0}, {0, 0}, {57.7, 45.5}, {96.0, 80.0}};
constexpr uint32_t kNvlsChannels[4] = {0, 0, 16, 32};
// CollNet Direct (Simple only): its step latency inside a node (hwLatencies, NVLink and PCI rows: 3.7 us) and
// across the network (NET row: 31 us; base latency 0), the 0.4 us NCCL adds per local rank beyond the first
// ("arity serialization"), and the 0.85 it scales the bandwidth by from Hopper on.
constexpr double kCollNetIntraLat = 3.7, kCollNetNetLat = 31.0, kCollNetArity = 0.4, kCollNetHopper = 0.85;

// The GPU's generation (index into the tables above, and its compute capability), from its datasheet name;
// -1 for GPUs NCCL does not run on (AMD's use RCCL and its own tuning).
int generation(const std::string& gpu, int& compcap) {
  auto starts = [&](const char* p) { return gpu.rfind(p, 0) == 0; };
  if (starts("b200") || starts("gb200")) return compcap = 100, 3;
  if (starts("h100") || starts("h200") || starts("gh200")) return compcap = 90, 2;
  if (starts("a100") || starts("a40") || starts("a10")) return compcap = 80, 1;
  if (starts("v100")) return compcap = 70, 0;
  if (starts("p100")) return compcap = 60, 0;
  return -1;
}

// NVLS, NVLSTree and CollNet run Simple alone: without it (`nccl_proto`) NCCL leaves them out.
bool simple_on(const Cluster& c) {
  return !c.comm.nccl_proto || (*c.comm.nccl_proto)[kSimple];
}

double log2i(double v) {
  return v < 1 ? 0 : std::floor(std::log2(v));
}

}  // namespace

std::vector<NcclEstimate> nccl_estimates(const CollectiveShape& shape, const Cluster& c) {
  std::vector<NcclEstimate> out;
  if (!c.comm.nccl_protocols) return out;
  // A hierarchical allreduce is costed as the NCCL ring or double tree over all ranks that it runs between
  // nodes: NCCL's own ring and tree cross a node on a chain of its GPUs as well.
  const bool hierarchical = shape.algorithm == Algorithm::Hierarchical;
  const Algorithm algorithm = hierarchical ? shape.inter_node : shape.algorithm;
  if (algorithm != Algorithm::Ring && algorithm != Algorithm::DoubleTree) return out;
  int compcap = 0;
  const int gen = generation(c.gpu.name, compcap);
  if (gen < 0 || shape.ranks < 2) return out;
  const double p = shape.ranks;
  const uint32_t gpn = std::max<uint32_t>(1, std::min<uint32_t>(shape.ranks, c.gpus_per_node));
  const double nodes = std::ceil(p / gpn), ppn = p / nodes;
  const int n_idx = nodes <= 2 ? static_cast<int>(nodes) - 1 : 2;
  // NCCL's channels (at least one per NIC: the ring channels the cluster gives, see ring_channels) bound the
  // bandwidth its GPU threads drive; the plan's own messages in parallel from one GPU (rings across nodes,
  // the two trees; a hierarchical plan's GPU sends one message at a time, two in a double tree) share that
  // bound.
  const double ch = std::max<uint32_t>(1, shape.channels);
  // A hierarchical plan pipelined between two nodes runs its double tree as its ring: one message at a time.
  const double plan_channels =
      algorithm == Algorithm::DoubleTree && !(hierarchical && pipelined_as_ring(shape, algorithm))
          ? 2
          : (!hierarchical && gpn > 1 && nodes > 1 && shape.ranks % gpn == 0 ? std::min<double>(ch, gpn) : 1);
  // The hardware of a step inside a node (NVLink or PCIe) and the bus bandwidth the cluster gives a ring:
  // one GPU's link to the next inside a node, and across nodes each channel's NIC.
  Hw intra_hw = kPci;
  if (c.gpus.size() > 1 && gpn > 1) {
    Router router(c.topo);
    for (LinkId l : router.route(c.gpus[0], c.gpus[1]))
      if (c.topo.links()[l].cls == LinkClass::NvLink) intra_hw = kNvLink;
  }
  const double intra = gpn > 1 ? intra_node_cost(c, shape.bytes / p).rate : 0;
  const double inter = nodes > 1 ? inter_node_cost(c, shape.bytes / p).rate : 0;
  double bus = nodes == 1 ? intra : (gpn > 1 ? std::min(intra, ch * inter) : ch * inter);
  // On two nodes NCCL's tuner takes a graph's intra-node bandwidth (tuning.cc: nNodes <= 2 ? bwIntra :
  // bwInter), and its search lets a tree's be up to twice its inter-node one (search.cc: "increase bwIntra
  // for trees (2 nodes or collnet)") while a ring's stays equal to it: the tree, which sends each byte across
  // once each way, beats the NICs there.
  if (algorithm == Algorithm::DoubleTree && nodes == 2 && gpn > 1) bus = std::min(intra, 2 * ch * inter);
  bus /= 1e9;  // GB/s, as NCCL's constants
  // The protocols NCCL may pick: NCCL_PROTO's (`nccl_proto`) when given, else its defaults, LL128 only from
  // Volta on and over NVLink inside a node.
  const std::array<bool, 3> on = c.comm.nccl_proto.value_or(
      std::array<bool, 3>{true, compcap >= 70 && (gpn == 1 || intra_hw == kNvLink), true});
  const double ll_max = kLlMaxBw[nodes == 1 ? gen : (c.host_cpu == HostCpu::Amd ? 1 : 0)][n_idx];
  const Algo a = algorithm == Algorithm::Ring ? kRing : kTree;
  for (int pr = kLL; pr <= kSimple; ++pr) {
    NcclEstimate e{kNcclProtocolNames[pr], -1, {}};
    if (!on[pr]) {
      out.push_back(e);
      continue;
    }
    // GB/s: the bus bandwidth, and what the GPU threads of all channels can drive (0: no bound).
    double bw = bus, cap = 0;
    if (a == kRing) {
      if (pr == kLL) bw = std::min(ll_max, bw * .5), cap = ll_max;
      if (pr == kLL128) cap = ch * kRingLL128PerCh[gen][n_idx], bw = std::min(bw * .92, cap);
    } else {
      cap = ch * kTreePerCh[gen][n_idx], bw = std::min(bw * .92, cap);
      if (pr == kLL) bw = std::min(bw / 3.8, ll_max), cap = ll_max;
      if (pr == kLL128)
        cap = ch * kTreeLL128PerCh[gen][n_idx],
        bw = std::min(bw * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), cap);
    }
    // Latency: the call's base, then per step the step's hardware (across nodes NCCL also counts the
    // network proxy's post overhead, getNetOverhead: 1 us on Intel and Arm hosts, 2 us on AMD, three times
    // that with Simple; one GPU per node pays the tree's network latency), and across nodes the network
    // device's own latency (net_latency; twice with Simple).
    const double intra_lat = kHwLat[intra_hw][a][pr];
    const double inter_lat = (ppn == 1 ? kHwLat[kNet][kTree][pr] : kHwLat[kNet][a][pr]) +
                             (pr == kSimple ? 2 : 1) * c.comm.nccl_net_latency.seconds() * 1e6;
    double lat = kBaseLat[a][pr], alg = 0;
    if (a == kRing) {
      const double steps = 2 * (p - 1), inter_steps = nodes == 1 ? 0 : 2 * (nodes - 1);
      const double post = (c.host_cpu == HostCpu::Amd ? 2.0 : 1.0) * (pr == kSimple ? 3 : 1);
      const double step_lat = nodes > 1 ? std::max(intra_lat, post) : intra_lat;
      lat += (steps - inter_steps) * step_lat + inter_steps * inter_lat;
      if (pr == kSimple && nodes > 1 && shape.bytes / (ch * p) >= 64) lat *= compcap < 80 ? 1.9 : 1.4;
      alg = bw * p / steps;
    } else {
      lat += 2 * ((ppn - 1) * intra_lat + log2i(nodes) * inter_lat);
      int size_log = static_cast<int>(log2i(shape.bytes / 64));
      if (shape.bytes >= 64 && size_log < 23) bw *= kTreeCorrection[pr][size_log];
      alg = bw * .5;
    }
    e.seconds = (lat + shape.bytes / (1e3 * alg)) * 1e-6;
    e.messages = MessageProtocol{kNcclProtocolNames[pr],
                                 Time::from_seconds(intra_lat * 1e-6),
                                 Time::from_seconds(inter_lat * 1e-6),
                                 Time::from_seconds(kBaseLat[a][pr] * 1e-6),
                                 kWire[pr],
                                 cap * 1e9 / plan_channels};
    out.push_back(e);
  }
  return out;
}

uint32_t nvls_channels(const Cluster& c) {
  int compcap = 0;
  const int gen = generation(c.gpu.name, compcap);
  return c.nvls && gen >= 0 ? kNvlsChannels[gen] : 0;
}

NcclEstimate nccl_nvls_estimate(const CollectiveShape& shape, const Cluster& c) {
  NcclEstimate e{"NVLS", -1, {}};
  int compcap = 0;
  const int gen = generation(c.gpu.name, compcap);
  if (nvls_channels(c) == 0 || !simple_on(c) || shape.ranks < 2 ||
      shape.ranks != static_cast<uint32_t>(c.gpus_per_node))
    return e;
  // NCCL's model: the NVLS channels' NVLink bandwidth x nvlsEfficiency x (channels - 1) / channels, twice
  // for an allreduce (its reduce-scatter and all-gather halves pipeline), as bus bandwidth.
  const double ch = kNvlsChannels[gen], p = shape.ranks;
  const double bus =
      intra_node_cost(c, shape.bytes / p).rate / 1e9 * kNvlsEfficiency[gen] * (ch - 1) / ch * 2;
  e.seconds = (kNvlsLat + shape.bytes / (1e3 * bus * p / (2 * (p - 1)))) * 1e-6;
  // The simulation: the call's latency once; per loop (each message), Simple's NVLink step latency as NCCL
  // prices a ring's step (NVLS moves each loop's chunks through Simple's FIFO, one fence and flag per step);
  // and the switch's efficiency as NVLink bytes per payload byte.
  e.messages = MessageProtocol{"NVLS",
                               Time::from_seconds(kHwLat[kNvLink][kRing][kSimple] * 1e-6),
                               Time(),
                               Time::from_seconds(kNvlsLat * 1e-6),
                               1 / kNvlsEfficiency[gen],
                               0};
  return e;
}

NcclEstimate nccl_nvls_tree_estimate(const CollectiveShape& shape, const Cluster& c) {
  NcclEstimate e{"NVLS", -1, {}};
  int compcap = 0;
  const int gen = generation(c.gpu.name, compcap);
  const uint32_t g = static_cast<uint32_t>(c.gpus_per_node);
  if (nvls_channels(c) == 0 || !simple_on(c) || g < 2 || shape.ranks % g != 0 || shape.ranks / g < 2)
    return e;
  // NCCL's model (tuning.cc): per channel the smaller of NVLS's bandwidth (NVLink x nvlsEfficiency x
  // (channels - 1) / channels, twice for an allreduce) and the network's (twice on two nodes, as for its
  // tree), within what a channel drives; as bus bandwidth. Here, as for the ring: one GPU's NVLink, and the
  // node's NICs (the ring's channels).
  const double ch = kNvlsChannels[gen], p = shape.ranks, nodes = p / g;
  const double intra =
      intra_node_cost(c, shape.bytes / p).rate / 1e9 * kNvlsEfficiency[gen] * (ch - 1) / ch * 2;
  const double inter = inter_node_cost(c, shape.bytes / p).rate / 1e9 *
                       std::max<uint32_t>(1, shape.channels) * (nodes <= 2 ? 2 : 1);
  const double bus = std::min({intra, inter, ch * kNvlsTreePerCh[gen][nodes <= 2 ? 0 : 1]});
  // Latency: NVLS's inside the node once, and the tree's network steps up and down (the network's own
  // latency twice per step with Simple, as NCCL adds its flush).
  const double net_lat = kNvlsTreeNetLat + 2 * c.comm.nccl_net_latency.seconds() * 1e6;
  double alg = bus * p / (2 * (p - 1));
  // Blackwell on x86 scales NVLSTree by size as its trees (the cluster's CPU is taken as x86).
  const int size_log = static_cast<int>(log2i(shape.bytes / 64));
  if (compcap >= 100 && shape.bytes >= 64 && size_log < 23) alg *= kTreeCorrection[kSimple][size_log];
  e.seconds = (kNvlsLat + 2 * log2i(nodes) * net_lat + shape.bytes / (1e3 * alg)) * 1e-6;
  // The simulation: NVLS's messages as on one node (Simple's NVLink step latency each, the switch's
  // efficiency as NVLink bytes per payload byte); the tree's cost NCCL's network step latency and their bytes
  // alone on the wire; the call NCCL's NVLS latency once.
  e.messages = MessageProtocol{"NVLS",
                               Time::from_seconds(kHwLat[kNvLink][kRing][kSimple] * 1e-6),
                               Time::from_seconds(net_lat * 1e-6),
                               Time::from_seconds(kNvlsLat * 1e-6),
                               1 / kNvlsEfficiency[gen],
                               0};
  e.messages.wire_inter = 1;
  return e;
}

NcclEstimate nccl_collnet_estimate(const CollectiveShape& shape, const Cluster& c) {
  NcclEstimate e{"Simple", -1, {}};
  int compcap = 0;
  const int gen = generation(c.gpu.name, compcap);
  const uint32_t g = static_cast<uint32_t>(c.gpus_per_node);
  // CollNet Direct needs GPUs that meet at an NVSwitch (tuning.cc disables it elsewhere, where NCCL runs
  // CollNet Chain) and at most 8 of them (enqueue.cc: NCCL_MAX_DIRECT_ARITY + 1).
  if (!c.comm.nccl_protocols || !simple_on(c) || !c.sharp || gen < 0 || g > 8 || shape.ranks % g != 0 ||
      shape.ranks / g < 2 || (g > 1 && c.nvswitches.empty()))
    return e;
  // NCCL's model (tuning.cc): the graph's intra-node bandwidth at any node count (here one GPU's NVLink, as
  // for the ring), divided by the GPU:NIC ratio less half its excess over 1, x 0.85 from Hopper; as
  // algorithm bandwidth, half of it.
  const double ppn = g, nics = std::max<uint32_t>(1, shape.channels);
  double factor = std::max(1.0, ppn / nics);
  factor -= (factor - 1) / 2;
  const double nvlink = g > 1 ? intra_node_cost(c, shape.bytes / shape.ranks).rate : 0;
  double bus = (g > 1 ? nvlink : inter_node_cost(c, shape.bytes / shape.ranks).rate) / 1e9 / factor;
  if (compcap >= 90) bus *= kCollNetHopper;
  const double alg = bus * .5;
  // Latency: a step in and out of the node, the local ranks' serialisation, and the network's (with
  // Simple, the network device's latency twice, as NCCL adds its flush; one GPU per node: the tree's).
  const double intra_lat = g > 1 ? kCollNetIntraLat : 0;
  const double inter_lat =
      (g == 1 ? kHwLat[kNet][kTree][kSimple] : kCollNetNetLat) + 2 * c.comm.nccl_net_latency.seconds() * 1e6;
  const double base = 2 * (ppn - 1) * kCollNetArity;
  e.seconds = (2 * intra_lat + base + inter_lat + shape.bytes / (1e3 * alg)) * 1e-6;
  // The simulation: the step latency inside the node on the scatter and on the gather (each loop behind the
  // first streams), the serialisation once, and the network's latency over the tree's hops up and down
  // (SHARP's trees of height H: 2H messages on loop 0's way), so that loop 0 pays it once. A GPU drives its
  // NVLink at the rate NCCL gives it (the intra-node efficiency) in all, shared by its G-1 peers: each
  // message at most that share (the NICs bound the messages to the switches below it).
  uint32_t height = 1;
  if (shape.trees)
    for (const SwitchTree& t : *shape.trees)
      for (size_t v = 0; v < t.parent.size(); ++v) {
        uint32_t d = 0;
        for (size_t m = v; t.parent[m] != SwitchTree::kRoot; m = t.parent[m]) ++d;
        height = std::max(height, d);
      }
  e.messages = MessageProtocol{"Simple",
                               Time::from_seconds(intra_lat * 1e-6),
                               Time::from_seconds(inter_lat / (2 * height) * 1e-6),
                               Time::from_seconds(base * 1e-6),
                               1,
                               g > 1 ? nvlink / (g - 1) : 0};
  return e;
}

Algorithm nccl_inter_node(CollectiveShape shape, const Cluster& cluster) {
  Algorithm best = Algorithm::Auto;
  double fastest = 0;
  for (Algorithm a : {Algorithm::Ring, Algorithm::DoubleTree}) {
    shape.inter_node = a;
    for (const NcclEstimate& e : nccl_estimates(shape, cluster))
      if (e.seconds >= 0 && (best == Algorithm::Auto || e.seconds < fastest)) {
        best = a;
        fastest = e.seconds;
      }
  }
  if (best == Algorithm::Auto) return best;
  for (auto [a, e] : {std::pair{Algorithm::Nvls, nccl_nvls_estimate(shape, cluster)},
                      {Algorithm::NvlsTree, nccl_nvls_tree_estimate(shape, cluster)},
                      {Algorithm::CollNet, nccl_collnet_estimate(shape, cluster)}})
    if (e.seconds >= 0 && e.seconds < fastest) {
      best = a;
      fastest = e.seconds;
    }
  return best;
}

MessageProtocol nccl_protocol(const CollectiveShape& shape, const Cluster& cluster) {
  if (shape.algorithm == Algorithm::Nvls) return nccl_nvls_estimate(shape, cluster).messages;
  if (shape.algorithm == Algorithm::NvlsTree) return nccl_nvls_tree_estimate(shape, cluster).messages;
  if (shape.algorithm == Algorithm::CollNet) return nccl_collnet_estimate(shape, cluster).messages;
  MessageProtocol best;
  double fastest = 0;
  for (const NcclEstimate& e : nccl_estimates(shape, cluster))
    if (e.seconds >= 0 && (!best.on() || e.seconds < fastest)) {
      best = e.messages;
      fastest = e.seconds;
    }
  return best;
}

}  // namespace ddlsim
