#pragma once
// Communication patterns as round plans. A plan says, for every member r and round s, which messages r sends,
// how many it receives and how many bytes it then reduces (before it may start round s+1, or during that
// round where the library fuses the sum with the next send: fuses_reductions). The engine runs a plan either
// message by message on the flow network, or (when provably identical) with the closed max-plus recursion.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/core/units.hpp"

namespace ddlsim {

enum class Algorithm : uint8_t {
  Ring,               // ring allreduce: reduce-scatter + all-gather, n/p per step
  HalvingDoubling,    // Rabenseifner: recursive halving reduce-scatter + recursive doubling all-gather
  RecursiveDoubling,  // MPICH's short-message allreduce: the whole buffer to the partner 2^k away, log2 p
                      // rounds
  Mpich,         // MPICH's choice: recursive doubling up to 2 KiB or below one element per rank, else rhd
  OpenMpi,       // Open MPI 4.1's choice (coll/tuned's fixed decision): ring, recursive doubling, rhd or tree
  Tree,          // binary tree reduce to rank 0, then broadcast
  DoubleTree,    // NCCL's double binary tree: two pipelined in-order trees, half the buffer each
  Direct,        // every rank sends its whole buffer to every other rank: p(p-1) messages
  Hierarchical,  // intra-node ring reduce-scatter, an allreduce between nodes (one per local rank: ring,
                 // rhd or tree), intra-node all-gather
  ReduceScatter,    // ring reduce-scatter alone (ZeRO)
  AllGather,        // ring all-gather alone (ZeRO)
  Broadcast,        // binary-tree broadcast from rank 0 (initial weights)
  ParameterServer,  // workers push shards to k servers, servers aggregate, workers pull
  Nvls,      // NVLink SHARP inside one node: the NVSwitch (member `ranks`) sums in flight (NCCL's NVLS)
  NvlsTree,  // NVLS inside every node, a double binary tree between nodes on every GPU's NIC (NVLSTree)
  CollNet,   // in-network reduction between nodes (InfiniBand SHARP): NCCL's CollNet Direct
  Auto,      // inter_node only: ring or double-tree, whichever the α-β estimate finds faster
};
const char* algorithm_name(Algorithm a);

struct Send {
  uint32_t peer;  // member index
  double bytes;
  uint32_t channels = 1;  // the collective library's channels whose chunks this message carries together
  // Its data follows data of the same call that already paid this path's latency (a pipelined chunk behind
  // the first): it pays none.
  bool streamed = false;
};

// How the collective library moves a collective's messages, when it says (NCCL's protocols LL, LL128 and
// Simple, chosen per call by its tuner, see nccl_tuner): each message's latency in place of the comm model's
// α (inside a node, across nodes), the bytes on the wire per payload byte (LL: a 4-byte flag with every 4
// bytes of data; LL128: 8 bytes of flags per 128-byte line), a bound on one message's payload rate (0:
// none), and a fixed latency before the first round (the call's own cost). Off: the comm model alone.
struct MessageProtocol {
  const char* name = nullptr;  // nullptr: off
  Time alpha_intra, alpha_inter, base;
  double wire = 1;
  double rate_cap = 0;    // per message of one channel (Send::channels); 0: none
  bool streamed = false;  // this message pays no latency (Send::streamed), protocol or not
  double wire_inter = 0;  // across nodes, where it differs from `wire` (NVLS tree); 0: `wire`
  bool on() const { return name != nullptr; }
  double wire_for(bool same_node) const { return same_node || wire_inter <= 0 ? wire : wire_inter; }
  // The protocol of a message carrying `channels` channels' chunks together: each channel drives its own.
  MessageProtocol carrying(uint32_t channels) const {
    MessageProtocol p = *this;
    p.rate_cap *= channels;
    return p;
  }
};

class CollectivePlan {
 public:
  virtual ~CollectivePlan() = default;
  uint32_t members() const { return members_; }
  uint32_t rounds() const { return rounds_; }
  virtual void sends(uint32_t r, uint32_t s, std::vector<Send>& out) const = 0;
  virtual uint32_t receives(uint32_t r, uint32_t s) const = 0;
  virtual double reduce_bytes(uint32_t r, uint32_t s) const = 0;
  // Size of one operand of that reduction (what decides whether it runs from cache): by default each
  // received message is one operand.
  virtual double reduce_operand(uint32_t r, uint32_t s) const {
    uint32_t n = receives(r, s);
    return n > 0 ? reduce_bytes(r, s) / n : reduce_bytes(r, s);
  }
  // Rounds with the same class have the same messages for every member (used to skip periodic rounds).
  virtual uint32_t round_class(uint32_t s) const { return s; }
  // Bytes a member contributes (n): for reports (algbw = n / time).
  double bytes() const { return bytes_; }
  uint64_t message_count() const;
  const MessageProtocol& protocol() const { return protocol_; }
  void set_protocol(const MessageProtocol& p) { protocol_ = p; }
  // NCCL's kernels sum what a member received in round s as they send round s+1 (receive-reduce-send, one
  // pass over each slice): under NCCL's protocols that reduction overlaps round s+1 (RoundReduction::carry)
  // instead of delaying it. Other libraries, and every plan's last round, reduce between rounds.
  bool fuses_reductions() const { return protocol_.on(); }
  // The protocol of a message `snd` of a round that carries a fused reduction of `carry` seconds: its
  // channels' bound, no faster than that reduction (the data it sends is the data being summed), and no step
  // latency when it is streamed.
  MessageProtocol message_protocol(const Send& snd, double carry) const {
    MessageProtocol p = protocol_.carrying(snd.channels);
    p.streamed = snd.streamed;
    if (carry > 0) {
      double pace = snd.bytes / carry;
      p.rate_cap = p.rate_cap > 0 ? std::min(p.rate_cap, pace) : pace;
    }
    return p;
  }
  // round_class for the engine's skipping of repeated rounds: with fused reductions a round also depends on
  // its neighbours (the reduction it carries, whether a round takes its own over), so only a round between
  // two of its class keeps the class; the others get one of their own.
  uint32_t step_class(uint32_t s) const {
    uint32_t c = round_class(s);
    if (!fuses_reductions() ||
        (s > 0 && s + 1 < rounds_ && round_class(s - 1) == c && round_class(s + 1) == c))
      return c;
    return kEdgeClass + s;
  }

 protected:
  static constexpr uint32_t kEdgeClass = 1u << 31;  // above every plan's own classes
  CollectivePlan(uint32_t members, uint32_t rounds, double bytes)
      : members_(members), rounds_(rounds), bytes_(bytes) {}
  uint32_t members_;
  uint32_t rounds_;
  double bytes_;
  MessageProtocol protocol_;
};

// An in-network reduction tree (InfiniBand SHARP, as NCCL's CollNet runs it): the heads, one GPU per node
// (tree members 0..nodes-1), and the fabric switches (members nodes.., `switches` their vertices) that sum
// what their children send on its way up to the root and send the sum back down the same cables.
struct SwitchTree {
  static constexpr uint32_t kRoot = UINT32_MAX;
  std::vector<uint32_t> parent;    // per tree member; kRoot for the root
  std::vector<uint32_t> switches;  // vertex ids, the root's first
};

// NCCL's Simple step, NCCL_BUFFSIZE / NCCL_STEPS = 4 MiB / 8 (NVIDIA/nccl src/init.cc, src/include/device.h):
// where the trees', CollNet's and NVLS's chunks start.
constexpr double kNcclSimpleStep = 512 * 1024;
// NCCL_NVLS_CHUNKSIZE's default (src/transport/nvls.cc); CommModel::nvls_chunk's too.
constexpr double kNcclNvlsChunk = 128 * 1024;

struct CollectiveShape {
  Algorithm algorithm = Algorithm::Ring;
  uint32_t ranks = 0;           // workers (GPUs)
  uint32_t ranks_per_node = 1;  // for Hierarchical
  uint32_t servers = 0;         // for ParameterServer: members ranks..ranks+servers-1 are the servers
  double bytes = 0;             // per-rank buffer n
  Algorithm inter_node = Algorithm::Ring;  // for Hierarchical: the allreduce between nodes
  // For inter_node Auto: one inter-node message's overhead (s) and one flow's rate (bytes/s).
  double alpha = 0, rate = 0;
  // For Ring across nodes: rings in parallel (NCCL's channels), n / channels each, channel c entering every
  // node at local rank c·G/channels (G = ranks_per_node) and leaving it from the rank before, so each channel
  // crosses between nodes through other GPUs and so other NICs. 1: one ring. For Hierarchical, NCCL's
  // channels for its tuner (the plan itself runs one ring or double tree per local rank between nodes). For
  // Nvls, NCCL's NVLS channels (they set its loop size).
  uint32_t channels = 1;
  // For Nvls and NvlsTree: NCCL's chunk and NVLSTree's cap on it (CommModel::nvls_chunk; 0: NCCL's default).
  double nvls_chunk = kNcclNvlsChunk, nvls_tree_max_chunk = 0;
  // For Hierarchical with a ring between nodes: chunks pipelined through its phases, as NCCL runs its
  // algorithms across nodes (at most kMaxPipelineChunks); 1: the phases one after the other.
  uint32_t chunks = 1;
  // For CollNet: one switch tree per local rank (the heads of slice l are GPU l of every node).
  std::shared_ptr<const std::vector<SwitchTree>> trees = nullptr;
  // For Ring: the orders in which the collective library's rings visit a node's ranks (a permutation of
  // 0..ranks_per_node-1 each; channel c takes order c mod their count), where the topology gives them
  // (NodeInterior::rings); none: channel c counts up from local rank c·G / channels.
  std::shared_ptr<const std::vector<std::vector<uint32_t>>> rings = nullptr;
};
constexpr uint32_t kMaxPipelineChunks = 63;

// α-β estimate of a plan: per round, the slowest member's α (when it sends a message that is not streamed)
// plus the larger of the bytes it sends and receives over `rate` (its messages share its NIC); summed over
// rounds. What NCCL does with its own tuning model to choose between ring and tree.
double estimate_seconds(const CollectivePlan& plan, double alpha, double rate);

// The allreduce algorithm a strategy names (ring, rhd or halving-doubling, tree, double-tree, direct,
// hierarchical); false for any other name.
bool allreduce_algorithm(const std::string& name, Algorithm& out);
// MPICH's allreduce algorithm for p ranks and a buffer of `bytes`: RecursiveDoubling or HalvingDoubling.
Algorithm mpich_allreduce(uint32_t p, double bytes);
// Open MPI 4.1's allreduce algorithm for p ranks and a buffer of `bytes` (a sum): Ring, RecursiveDoubling,
// HalvingDoubling (Rabenseifner) or Tree (its reduce-then-broadcast).
Algorithm open_mpi_allreduce(uint32_t p, double bytes);

// Throws std::invalid_argument when the shape does not fit the algorithm (e.g. hierarchical with ranks not a
// multiple of ranks_per_node or an inter-node algorithm other than ring, rhd, tree or double-tree; ps without
// servers).
std::unique_ptr<CollectivePlan> make_plan(const CollectiveShape& shape);

// The allreduce a Hierarchical shape runs between nodes: its inter_node, or for Auto the ring unless the
// double tree's α-β estimate (shape.alpha, shape.rate) is smaller; the ring with one node. Throws as
// make_plan.
Algorithm resolve_inter_node(const CollectiveShape& shape);

// Whether a Hierarchical shape running `between` between its nodes runs its phases pipelined in its chunks:
// with a ring or a double tree between nodes (between two, the double tree runs as the ring: it moves what a
// ring does, each node sending the other half the buffer up one tree and half down the other).
bool pipelined_hierarchical(const CollectiveShape& shape, Algorithm between);
// Whether it runs pipelined as the ring (PipelinedHierarchicalPlan): a ring, or a double tree between two
// nodes; a double tree between more runs as its trees (one message per tree and peer at a time).
bool pipelined_as_ring(const CollectiveShape& shape, Algorithm between);

}  // namespace ddlsim
