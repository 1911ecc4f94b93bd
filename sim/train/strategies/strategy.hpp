#pragma once
// Gradient-synchronisation strategies: their typed options, the step builders that turn one training step's
// gradients into tasks, and the registry from a strategy's name to both. A new strategy is one file in this
// folder (options, configure, builder) plus one line in registry.cpp.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/core/options.hpp"
#include "sim/net/cluster.hpp"
#include "sim/train/collective.hpp"
#include "sim/train/task_graph.hpp"
#include "sim/train/workload.hpp"

namespace ddlsim {

// Allreduce after backward, bucket by bucket (DDP, Horovod, or a flat algorithm).
struct AllreduceOptions {
  Algorithm algorithm = Algorithm::Ring;
  Algorithm inter_node = Algorithm::Ring;  // hierarchical: the allreduce between nodes
  double bucket = 0, first_bucket = 0;     // bytes; 0: one bucket after backward
  bool overlap = true;
  double cycle_time = 0;  // Horovod: background thread period (s)
  bool negotiation = false;
  uint32_t channels = 0;  // ring across nodes: rings in parallel (NCCL's channels); 0: one per NIC of a node
  // DDP and Horovod without `algorithm` (or `channels`): the allreduce NCCL runs when the cluster runs NCCL's
  // protocols (hierarchical with inter_node auto: NCCL's tuner picks ring, tree or NVLS), else `algorithm`.
  bool library_choice = false;
};

// ZeRO stages 1 and 2: reduce-scatter of gradients, a sharded update, all-gather of parameters.
struct ZeroOptions {
  int stage = 2;
  double bucket_elements = 5e8;  // DeepSpeed reduce_bucket_size default, in gradient elements
  double bucket = 0;             // bytes, when given (replaces bucket_elements)
};

// Where a parameter-server strategy's servers run: its `servers`, `placement` and `link` keys. `link` with
// colocated servers is an error: they use their node's NIC.
struct ServerPlacement {
  uint32_t servers = 1;
  bool dedicated = true;
  std::optional<LinkSpec> link;
  bool per_node = false;  // colocated, `servers: per-node`: one server on every node, whatever the node count
  ServerHosts hosts() const { return dedicated ? ServerHosts{servers, link} : ServerHosts{}; }
  // The servers of a run on `nodes` nodes.
  uint32_t count(size_t nodes) const { return per_node ? static_cast<uint32_t>(nodes) : servers; }
};
// Reads `servers`, `placement` and `link` (shared by training and collective workloads).
ServerPlacement parse_server_placement(const OptionReader& options);

enum class PsMode : uint8_t { Sync, Async, Ssp };
// How gradients map to server shards: `Range` splits every chunk evenly over all servers (MXNet kvstore's
// slicing of big arrays); `Partition` sends every chunk whole to one server, chunks round robin; `Byteps`
// cuts each layer into partitions of at most `chunk` bytes, each a key on the server its hash gives (BytePS's
// partitions of BYTEPS_PARTITION_BYTES); the others send each variable (a layer's
// parameters) whole to one server, as TensorFlow places variables on PS tasks: `RoundRobin` in creation
// order (replica_device_setter's default), `Greedy` to the server with the fewest bytes so far
// (GreedyLoadBalancingStrategy with byte sizes).
enum class PsSharding : uint8_t { Range, Partition, RoundRobin, Greedy, Mxnet, Byteps };

struct PsOptions {
  ServerPlacement placement;
  PsMode mode = PsMode::Sync;
  int staleness = 0;  // ssp: a worker may run this many steps ahead of the slowest
  double chunk = 8e6;
  PsSharding sharding = PsSharding::Range;
  // sharding: mxnet: a layer of at least this many parameters is sliced over all servers, a smaller one goes
  // whole to one (MXNet's kvstore, MXNET_KVSTORE_BIGARRAY_BOUND: 1000 * 1000 by default).
  int64_t bigarray_bound = 1'000'000;
  // sharding: byteps: how a key picks its server (BYTEPS_KEY_HASH_FN; byteps/common/global.cc): djb2 or sdbm
  // of the key's decimal digits, or naive, ((key >> 16) + key mod 65536)·9973 (BytePS's only placement
  // before Nov 2019).
  enum class KeyHash : uint8_t { Djb2, Sdbm, Naive } key_hash = KeyHash::Djb2;
  std::string transport = "ideal";  // a host transport of the cluster's comm model
  Where transport_where;
  Where chunk_where;  // `chunk_size`, or `sharding` without it (the model's partition count is checked later)
  int server_cores = 0;  // cores of a dedicated server host; 0: the cluster's host_cores
  // The GPUs of a node sum their gradients on its first GPU, which alone pushes and pulls, then hands the
  // pulled shards to the others (MXNet dist_device_sync); with aggregate_on_host, on the node's host CPU
  // instead: every GPU copies its gradients to host memory, the CPU sums them and pushes, and the pulled
  // shards are copied from host memory into every GPU (MXNet dist_sync; tf_cnn_benchmarks' distributed
  // parameter_server mode of 2017, whose tower averaging ran on the worker's CPU).
  bool local_aggregation = false;
  bool aggregate_on_host = false;
  // sync: no worker pulls a step's shards before every server updated its own (TensorFlow's
  // SyncReplicasOptimizer and its token queue); otherwise each shard is pulled once it is updated.
  bool global_barrier = false;
};

struct Strategy {
  std::string name;   // the registry name: ddp, horovod, zero, ps, ring, ...
  std::string label;  // name unless the scenario gives `label`
  Where where;        // the strategy's entry, for errors found later
  std::variant<AllreduceOptions, ZeroOptions, PsOptions> options;
  bool is_ps() const { return std::holds_alternative<PsOptions>(options); }
  ServerHosts server_hosts() const;  // dedicated PS hosts the cluster must add
};

// A strategy's inter_node option (the allreduce a hierarchical plan runs between nodes): ring, rhd, tree,
// double-tree or auto.
Algorithm parse_inter_node(const OptionReader& options, const std::string& key);

// The plan of an allreduce shape on `cluster` as the collective library runs it. A hierarchical shape with
// inter_node auto chooses its plan between nodes as NCCL's tuner does when the cluster runs NCCL's protocols
// (nccl_inter_node, which on one node of an NVSwitch that reduces may choose NVLS: `shape` then becomes an
// Nvls one), else from an α-β estimate with the cluster's inter-node message overhead and flow rate for its
// message size (n / p); `shape` keeps the choice. An Nvls shape needs such a node (else invalid_argument). A
// ring (and NCCL's tuner for a hierarchical one) gets its channels (ring_channels of `channels`), and the
// plan NCCL's protocol when the cluster runs them. Throws std::invalid_argument as make_plan.
std::unique_ptr<CollectivePlan> cluster_plan(CollectiveShape& shape, const Cluster& cluster,
                                             uint32_t channels);
// The vertices of a plan's members on `cluster` for a shape cluster_plan resolved: its GPUs, and for NVLS the
// node's NVSwitch after them (NVLSTree: every node's), for CollNet its trees' switches.
std::vector<VertexId> plan_members(const CollectiveShape& resolved, const Cluster& cluster);
// SHARP's aggregation trees for CollNet on `ranks` GPUs of `cluster`: one per local rank l, whose heads are
// GPU l of every node. Its root is the switch at the top of the route between the first and the last node's
// heads; every head joins it along its own route, switch by switch, up to the first switch already in the
// tree. Empty on one node.
std::shared_ptr<const std::vector<SwitchTree>> switch_trees(const Cluster& cluster, uint32_t ranks);
// A ring's channels on this cluster (CollectiveShape::channels): `requested`, or with 0 the rings the
// topology gives (NodeInterior::rings), else one per NIC the GPUs of a node leave it through (as NCCL builds
// at least one ring per NIC), at most the GPUs of a node.
uint32_t ring_channels(const Cluster& cluster, uint32_t requested);
// Whether a collective of this plan may be run by the engine's max-plus fast path (CollectiveTask::isolated):
// false when a bound on its standalone time (per round: the largest α and route latency, the most bytes one
// member sends over the slowest link, one flow's bound, the most bytes it reduces at the largest
// γ) passes a quarter of the simulated-time limit. The fast path adds picoseconds as raw int64 and would wrap
// past the limit; the flow model's Time arithmetic is checked and refuses such a run (TimeOverflow).
bool fast_path_safe(const CollectivePlan& plan, const Cluster& cluster);

// Gradients of one bucket: backward covers layers last..first (reverse order).
struct Bucket {
  size_t first_layer, last_layer;
  double bytes;
};
// Layers in reverse order, cut whenever a bucket reaches `cap` bytes (the first one at `first_cap`).
std::vector<Bucket> make_buckets(const Workload& wl, double cap, double first_cap);

// What a step builder gets from the training graph builder: the graph, the cluster and workload, the
// backward tasks that fill each bucket, and helpers for collectives and updates.
class StepContext {
 public:
  StepContext(TaskGraph& g, const Workload& wl, const Cluster& c) : graph(g), workload(wl), cluster(c) {}
  TaskGraph& graph;
  const Workload& workload;
  const Cluster& cluster;
  uint32_t workers = 0;
  double params = 0;            // parameters of the model
  std::vector<uint32_t> gpu;    // GPU resource per worker
  int step = 0;                 // the step being built
  std::vector<Bucket> buckets;  // the step builder's buckets, in backward order
  // [worker][bucket]: the backward task after which the bucket's gradients are ready.
  std::vector<std::vector<TaskId>> backward;
  // [worker]: in, the previous step's end (the initial broadcast for the first); out, this step's end.
  std::vector<TaskId> step_end;
  // [worker][bucket], for step builders whose pulls gate the next forward (StepBuilder::pulls_gate_forward):
  // out, the tasks after which the bucket's updated parameters are on the worker. The next step's forward
  // over the bucket's layers waits for them (and for nothing else of this step but the backward).
  std::vector<std::vector<std::vector<TaskId>>> pulled;
  // One isolated collective of all workers, launched per worker by `launch`; plans are cached per shape.
  TaskId collective(Algorithm a, double bytes, const char* label, std::vector<TaskId> launch,
                    Algorithm inter_node = Algorithm::Ring, uint32_t channels = 0);
  // One collective per bucket, in bucket order (each waits for the one before, `prev`, which it updates),
  // each launched on a worker when its backward for the bucket ends, or behind `gate(b)` when that gives a
  // task (Horovod's negotiation). Returns the last collective.
  TaskId bucket_collectives(Algorithm a, const char* label, TaskId& prev,
                            Algorithm inter_node = Algorithm::Ring,
                            const std::function<TaskId(size_t)>& gate = {}, uint32_t channels = 0);
  // Seconds of an SGD-momentum update of `fraction` of the parameters on a GPU.
  double update_time(double fraction) const;

 private:
  // Plans by (algorithm, bytes), each with its members and whether the fast path may run it.
  struct CachedPlan {
    std::shared_ptr<const CollectivePlan> plan;
    std::vector<VertexId> members;
    bool safe;
  };
  std::map<std::pair<int, double>, CachedPlan> plans_;
};

class StepBuilder {
 public:
  virtual ~StepBuilder() = default;
  virtual std::vector<Bucket> buckets(const Workload& wl) const = 0;
  // A task the forward pass of `step` must wait for (bounded staleness), or kNoTask.
  virtual TaskId forward_gate(int /*step*/) const { return kNoTask; }
  // Whether the next step's forward waits layer by layer for the parameters this step pulls (StepContext::
  // pulled), as frameworks that fetch parameters from servers run it (a layer's kernels wait for their own
  // tensors only), instead of for the whole step's end.
  virtual bool pulls_gate_forward() const { return false; }
  virtual void build_step(StepContext& ctx) = 0;
  // Whether the strategy's communication runs as collective kernels (their busy share is reported), rather
  // than as host transfers.
  virtual bool collective_kernels() const { return true; }
};

struct StrategyEntry {
  const char* name;
  std::vector<std::string> keys;  // options besides name and label
  // Sets the strategy's defaults and reads its options (the keys were checked against `keys`).
  void (*configure)(Strategy& strategy, const OptionReader& options);
  std::unique_ptr<StepBuilder> (*builder)(const Strategy& strategy);
};

// Every training strategy, by name (registry.cpp).
const std::vector<StrategyEntry>& strategy_registry();
const StrategyEntry* find_strategy_entry(const std::string& name);
std::string strategy_names();  // "ddp, horovod, ..." for messages

// Reads a training strategy: its name picks the entry, whose keys and configure take the options.
Strategy configure_strategy(const std::string& name, const std::string& label, const OptionReader& options);

// The entries' functions, one file each.
void configure_ddp(Strategy& s, const OptionReader& o);
void configure_horovod(Strategy& s, const OptionReader& o);
void configure_flat_allreduce(Strategy& s, const OptionReader& o);
std::unique_ptr<StepBuilder> allreduce_builder(const Strategy& s);
// The allreduce an allreduce strategy runs on `cluster` and what it runs between nodes (library_choice
// resolved).
std::pair<Algorithm, Algorithm> allreduce_run(const AllreduceOptions& o, const Cluster& cluster);
void configure_zero(Strategy& s, const OptionReader& o);
std::unique_ptr<StepBuilder> zero_builder(const Strategy& s);
void configure_ps(Strategy& s, const OptionReader& o);
std::unique_ptr<StepBuilder> ps_builder(const Strategy& s);

}  // namespace ddlsim
