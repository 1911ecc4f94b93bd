#pragma once
// NCCL's protocols and its tuner. NCCL moves every collective with one of three protocols, chosen per call by
// a cost model of its own (src/graph/tuning.cc): time = base latency + per-step latency (by the hardware of
// each step: NVLink, PCIe or the network) + bytes / bus bandwidth, the bandwidth reduced by what the protocol
// puts on the wire and bounded by what a channel's GPU threads can drive. LL: 8-byte lines of 4 bytes of data
// and a 4-byte flag, lowest latency, half the bandwidth; LL128: 128-byte lines with 8 bytes of flags; Simple:
// the data alone, behind a memory fence per step, highest latency. With `comm.protocols: nccl` the tuner
// picks the protocol of each ring, double-tree and hierarchical allreduce as NCCL would, and its messages
// then cost that protocol's per-step latency and wire bytes in the simulation (MessageProtocol).
#include <string>
#include <vector>

#include "sim/net/cluster.hpp"
#include "sim/train/collective.hpp"

namespace ddlsim {

// One protocol's estimate by NCCL's own model for an allreduce of `bytes` per rank.
struct NcclEstimate {
  const char* protocol;
  double seconds;  // NCCL's predicted time; < 0: not available (disabled on this hardware)
  MessageProtocol messages;
};

// Every protocol's estimate for `shape` (a Ring or DoubleTree allreduce, or a Hierarchical one whose
// inter_node is Ring or DoubleTree: as NCCL's ring or tree over all its ranks) on `cluster`; empty when the
// cluster does not run NCCL's protocols (comm.protocols off, an AMD GPU, another algorithm).
std::vector<NcclEstimate> nccl_estimates(const CollectiveShape& shape, const Cluster& cluster);
// The protocol NCCL's tuner picks for `shape` (the fastest estimate); off when there is none.
MessageProtocol nccl_protocol(const CollectiveShape& shape, const Cluster& cluster);
// NVLS (NVLink SHARP) on one node whose NVSwitch reduces (`gpu_link: {kind: nvswitch, nvls: true}`, a Hopper
// or later GPU): NCCL's estimate and the protocol its messages run with; seconds < 0 where NCCL cannot run
// it.
NcclEstimate nccl_nvls_estimate(const CollectiveShape& shape, const Cluster& cluster);
// NVLSTree across nodes whose NVSwitches reduce: NVLS inside every node and NCCL's double binary tree between
// nodes, each GPU's slice on its own NIC. NCCL's estimate and its messages' protocol; seconds < 0 where NCCL
// cannot run it (one node, no NVSwitch that reduces, a GPU before Hopper).
NcclEstimate nccl_nvls_tree_estimate(const CollectiveShape& shape, const Cluster& cluster);
// CollNet Direct across nodes whose fabric switches reduce (`network: {sharp: true}`, InfiniBand SHARP) and
// whose GPUs meet at an NVSwitch: NCCL's estimate and its messages' protocol (Simple; the network latency
// spread over the hops of `shape.trees` when given); seconds < 0 (and the messages the comm model's) where
// NCCL cannot run it or the cluster does not run NCCL's protocols.
NcclEstimate nccl_collnet_estimate(const CollectiveShape& shape, const Cluster& cluster);
// NCCL's NVLS channels for the cluster's GPU (they set an NVLS plan's loop size); 0 where NVLS cannot run:
// no NVSwitch that reduces, or a GPU before Hopper.
uint32_t nvls_channels(const Cluster& cluster);
// For a Hierarchical `shape`: the algorithm between nodes, Ring or DoubleTree, whose estimate with its best
// protocol is the fastest, as NCCL's tuner picks algorithm and protocol together; Nvls on one node when NVLS
// beats both, NvlsTree or CollNet across nodes when NVLSTree or CollNet Direct does (the fastest of all);
// Auto when the cluster does not run NCCL's protocols.
Algorithm nccl_inter_node(CollectiveShape shape, const Cluster& cluster);

}  // namespace ddlsim
