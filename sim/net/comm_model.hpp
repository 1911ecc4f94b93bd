#pragma once
// The software side of communication, on top of the links: per-message overhead (alpha) and the rate one flow
// can reach (a bandwidth bound and/or a fraction of its route's bottleneck), by message-size range (eager vs
// rendezvous), for messages inside a node and across nodes; and the per-byte reduction cost (gamma) on GPUs
// and on parameter-server CPUs. Defaults are the ideal network (no overhead); calibration fits the numbers.
#include <array>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/units.hpp"
#include "sim/net/flow_network.hpp"

namespace ddlsim {

// NCCL's protocols in its own order (NCCL_PROTO_LL, NCCL_PROTO_LL128, NCCL_PROTO_SIMPLE).
inline constexpr std::array<const char*, 3> kNcclProtocolNames{"LL", "LL128", "Simple"};

struct CommRange {
  double max_bytes = std::numeric_limits<double>::infinity();  // messages up to this size (inclusive)
  Time alpha;                                                  // per-message overhead
  double bandwidth = 0;                                        // bytes/s bound on one flow; 0 = none
  double efficiency = 1;  // fraction of the route bottleneck one flow gets
};

struct CommClass {
  CommClass() : ranges(1) {}
  std::vector<CommRange> ranges;  // sorted by max_bytes, last one unbounded
  const CommRange& lookup(double bytes) const {
    for (const CommRange& r : ranges)
      if (bytes <= r.max_bytes) return r;
    return ranges.back();
  }
};

// Reduction cost by operand size: summing a 64 KiB chunk runs from cache, a 64 MiB one from memory.
struct ReduceRange {
  double max_bytes = std::numeric_limits<double>::infinity();  // operands up to this size (inclusive)
  double gamma_gpu = 0;                                        // seconds per byte reduced on a GPU
  double gamma_cpu = 0;  // seconds per byte aggregated on a CPU (parameter servers)
};

// The host side of a message transport: CPU time the sending and the receiving host each spend on one message
// (system calls, RPC framing, wake-ups) and per byte (serialisation, copies, the kernel's TCP/IP stack), on
// top of the wire. Charged to the hosts' cores by the strategies that move data through host software
// (parameter servers). `rdma`, `nccl` and `ideal` spend none: the NIC or the GPU moves the bytes.
// A transport may also carry bytes through serial stages, one message at a time whatever the host's cores:
// - per connection: gRPC processes the frames of one HTTP/2 connection on one thread at a time, so the
//   messages between one worker and one server queue behind each other, while other connections proceed;
// - per sending process: a process that serves every tensor it sends from one thread (TensorFlow up to 1.x:
//   one thread polls the worker service's completion queue, GrpcServer::Start in grpc_server_lib.cc), so
//   everything one process sends queues there, to whichever peer, while other processes proceed.
struct HostTransport {
  Time overhead;               // CPU time per message, at each end
  double cpu_rate = 0;         // bytes one core processes per second, at each end; 0: no per-byte cost
  double connection_rate = 0;  // bytes per second one connection's serial stage carries; 0: none
  double process_rate = 0;     // bytes per second one sending process's serial stage carries; 0: none
  double cpu_seconds(double bytes) const {
    return overhead.seconds() + (cpu_rate > 0 ? bytes / cpu_rate : 0);
  }
  bool spends_cpu() const { return overhead != Time() || cpu_rate > 0; }
  bool free() const { return !spends_cpu() && connection_rate == 0 && process_rate == 0; }
};

struct CommModel {
  CommClass intra;                                                // both ends in one node
  CommClass inter;                                                // across nodes
  std::vector<ReduceRange> reduce = std::vector<ReduceRange>(1);  // sorted by max_bytes, last one unbounded
  uint32_t multipath = 1;  // split each transfer over this many routes (1 = minimal only)
  // `protocols: nccl`: ring, double-tree and hierarchical allreduces run with the protocol NCCL's tuner picks
  // (LL, LL128, Simple; train/nccl_tuner), its per-step latencies in place of alpha and its bytes on the
  // wire.
  bool nccl_protocols = false;
  // `nccl_proto` (NCCL_PROTO): the protocols NCCL may pick, in NCCL's order (kNcclProtocolNames) and syntax:
  // a list ("LL,Simple") enables exactly those, ^ and a list ("^LL128") all the others. Unset: NCCL's
  // defaults, LL and Simple always, LL128 where its own rule allows (train/nccl_tuner). Set, it replaces that
  // rule, as in NCCL (src/graph/tuning.cc: parseList writes every protocol's enable flag).
  std::optional<std::array<bool, 3>> nccl_proto;
  // NCCL's network device latency (`net_latency`): what the network plugin reports
  // (ncclNetProperties.latency; NCCL's IB and socket transports report 0, plugins may set it). NCCL's tuner
  // adds it to every inter-node step's latency, twice with Simple (its flush), and so do the protocol's
  // messages here.
  Time nccl_net_latency;
  // `pipeline_chunk`: a hierarchical allreduce with a ring between nodes runs its phases pipelined, in chunks
  // of this many bytes per channel; 0 (`none`): the phases one after the other (Horovod's hierarchical
  // allreduce: NCCL inside nodes, MPI between them); unset (< 0): NCCL's own under `protocols: nccl` (NCCL
  // pipelines its algorithms across nodes; its Simple ring-allreduce chunk is NCCL_BUFFSIZE / NCCL_STEPS x
  // ALLREDUCE_CHUNKSTEPS = 4 MiB / 8 x 4 = 2 MiB: NVIDIA/nccl src/init.cc, src/include/device.h,
  // src/include/collectives.h), else none.
  double pipeline_chunk = -1;
  double pipeline_chunk_bytes() const {
    return pipeline_chunk >= 0 ? pipeline_chunk : nccl_protocols ? 2.0 * 1024 * 1024 : 0;
  }
  // NCCL's NVLS chunk (`nvls_chunk`, NCCL_NVLS_CHUNKSIZE): the most bytes a head moves per channel in one
  // loop of NVLS and NVLSTree; NCCL's default 128 KiB (src/transport/nvls.cc). `nvls_tree_max_chunk`
  // (NCCL_NVLSTREE_MAX_CHUNKSIZE) caps NVLSTree's; 0: NCCL's default, 64 KiB from 4 nodes and nvls_chunk
  // below. Both are set per platform (aws-ofi-nccl sets both to 512 KiB on AWS p5).
  double nvls_chunk = 128 * 1024;
  double nvls_tree_max_chunk = 0;
  // Share of a fabric link's line rate that carries payload, for all its flows together (framing and
  // protocol headers); the cluster's fabric links are built at line rate x this. One flow's `efficiency`
  // (inter) is a fraction of that.
  double goodput_inter = 1;
  // TCP incast (loss-based transports on shallow switch buffers): a fabric switch's port into a host carries
  // goodput_inter x this curve's goodput for the number of distinct senders with flows on it. Off by
  // default, and for RDMA or credit-based fabrics (InfiniBand, Slingshot), which do not drop on fan-in.
  IncastCurve incast;
  // Named host transports (`transport:` of a strategy): the built-in ones below, plus the comm map's
  // `transports:` (which may redefine them).
  //   ideal, rdma, nccl: no host CPU (the NIC or the GPU moves the bytes).
  //   grpc: TensorFlow's gRPC over kernel TCP. Biswas, Lu and Panda, "Designing a Micro-Benchmark Suite to
  //     Evaluate gRPC for TensorFlow: Early Experiences" (BPOE-9 at ASPLOS 2018, arXiv:1804.01138): large
  //     payloads reach ~2.4 GB/s over 40GbE and over IPoIB EDR alike (Fig. 11), so the host, not the wire,
  //     sets the rate: 2.4 GB/s per core at each end. A 64 KB echo takes ~102 us over 40GbE against ~58 us
  //     over their RDMA gRPC (Fig. 7): the kernel TCP path adds ~44 us per round trip, two messages of two
  //     ends each, so ~11 us per message at each end.
  //   tf13-grpc: TensorFlow's tensor path over gRPC up to TensorFlow 1.3, before TF moved to a gRPC release
  //     that stopped handling a large message's slices one by one (tensorflow/tensorflow#6116 and
  //     grpc/grpc#8975). One RecvTensor stream then carried ~0.2 GB/s: 196 MB/s with TF's own benchmark on
  //     the master of July 2017 (tensorflow/tensorflow#11261), "100-200 MB/s" before and 800 MB/s after the
  //     upgrade of August 2017 (#6116). Where that stage sits: a worker reading from 8 PS processes at once
  //     got 2.6 GB/s where one gave 0.9 (#6116, 2016), so not at the receiver; and TF 1.x serves every
  //     tensor a process sends from the one thread that polls its worker service's completion queue
  //     (GrpcServer::Start, thread "TF_worker_service"). So the stage is per sending process: a parameter
  //     server's pulls to all its workers queue there. gRPC's own costs as `grpc`; the process stage makes up
  //     the rest of one stream's time: 1/0.2 GB/s - 2/2.4 GB/s = 1/0.24 GB/s.
  //   tcp: plain kernel TCP sockets (Gloo, MPI over TCP): ~25 Gb/s = 3.1 GB/s per core ("DCTCP needs a
  //     minimum of 4 cores to saturate 100Gbps NIC", Agarwal et al., "Host Congestion Control", SIGCOMM
  //     2023); the per-message cost is not given there (0).
  std::map<std::string, HostTransport> transports = {
      {"ideal", {}},
      {"rdma", {}},
      {"nccl", {}},
      {"grpc", {Time::from_seconds(11e-6), 2.4e9}},
      {"tf13-grpc", {Time::from_seconds(11e-6), 2.4e9, 0, 0.24e9}},
      {"tcp", {Time(), 3.125e9}}};
  // Seconds to reduce `bytes` arriving in operands of `operand` bytes each, on a CPU or a GPU.
  double reduce_seconds(double bytes, double operand, bool cpu) const {
    for (const ReduceRange& r : reduce)
      if (operand <= r.max_bytes || &r == &reduce.back()) return bytes * (cpu ? r.gamma_cpu : r.gamma_gpu);
    return 0;
  }
};

}  // namespace ddlsim
