// Training steps where the answer is a formula. Star of p = 4 GPUs (each its own host), links B = 25 GB/s
// with 1 us latency (route host-switch-host: l = 2 us), no software overhead, A100 FP32 peak 19.5 TFLOP/s at
// efficiency 1, batch 1, synthetic data, no jitter. Model: 4 layers of P = 2.5e6 parameters (10 MB of FP32
// gradients each) and 19.5 GFLOP forward per sample each, so forward = 1 ms and backward = 2 ms per layer.
// Optimizer update: 16 bytes per parameter through 1555 GB/s of HBM: 4P·16 / 1555e9.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <unistd.h>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "sim/config/scenario.hpp"
#include "sim/net/cluster.hpp"
#include "sim/train/training.hpp"

using namespace ddlsim;

namespace {

constexpr double kLink = 2e-6, kB = 25e9, kP = 2.5e6, kLayerGrad = kP * 4;
constexpr double kForward = 4e-3, kBackward = 8e-3, kUpdate = 4 * kP * 16 / 1555e9;

double ring(double p, double n) {
  return 2 * (p - 1) * (kLink + n / (p * kB));
}

TrainingResult run(const std::string& strategies, const std::string& extra_workload = "", int nodes = 4,
                   const std::vector<std::string>& overrides = {}) {
  // One file per process: ctest runs the tests of this file in parallel processes.
  std::string path =
      (std::filesystem::temp_directory_path() / ("ddlsim-training-" + std::to_string(getpid()) + ".yaml"))
          .string();
  std::ofstream(path) << "name: t\n"
                         "cluster: {nodes: "
                      << nodes
                      << ", gpus_per_node: 1, gpu: a100-40gb,\n"
                         "  network: {kind: star, link: {bandwidth: 25GB/s, latency: 1us}}}\n"
                         "workload:\n"
                         "  model:\n"
                         "    name: four-layers\n"
                         "    layers:\n"
                         "      - {name: l0, params: 2500000, forward_flops: 19.5GFLOP}\n"
                         "      - {name: l1, params: 2500000, forward_flops: 19.5GFLOP}\n"
                         "      - {name: l2, params: 2500000, forward_flops: 19.5GFLOP}\n"
                         "      - {name: l3, params: 2500000, forward_flops: 19.5GFLOP}\n"
                         "  batch_per_gpu: 1\n"
                         "  precision: fp32\n"
                         "  steps: 3\n"
                      << (extra_workload.find("compute:") == std::string::npos
                              ? "  compute: {efficiency: 1}\n"
                              : "")
                      << extra_workload << "strategies: " << strategies << "\n";
  Scenario sc = load_scenario(path, overrides);
  std::filesystem::remove(path);
  return run_training(sc, {nodes}, TrainingOptions{})[0];
}

}  // namespace

TEST(TrainingClosedForms, NoOverlapIsComputePlusAllreducePlusUpdate) {
  // `ring` synchronises once after backward: step = forward + backward + ring(4 x 10 MB) + update.
  TrainingResult r = run("[ring]");
  double want = kForward + kBackward + ring(4, 4 * kLayerGrad) + kUpdate;
  EXPECT_NEAR(r.step_time_s, want, want * 1e-6);
}

TEST(TrainingClosedForms, DdpHidesEveryBucketButTheLast) {
  // One 10 MB bucket per layer; each allreduce (ring(4, 10 MB) = 612 us) finishes during the next layer's 2
  // ms of backward, so only the last bucket's allreduce is exposed: step = forward + backward + ring(10 MB) +
  // update.
  TrainingResult r = run("[{name: ddp, bucket_size: 10MB, first_bucket: 10MB}]");
  double want = kForward + kBackward + ring(4, kLayerGrad) + kUpdate;
  EXPECT_NEAR(r.step_time_s, want, want * 1e-6);
  // ...and DDP's default 25 MB buckets (1 MB first): layer 3 alone, then layers 0-2 together (30 MB) after
  // the whole backward: step = forward + backward + ring(30 MB) + update (the 10 MB one hides behind layer
  // 2).
  TrainingResult d = run("[ddp]");
  double want_default = kForward + kBackward + ring(4, 3 * kLayerGrad) + kUpdate;
  EXPECT_NEAR(d.step_time_s, want_default, want_default * 1e-6);
}

TEST(TrainingClosedForms, BucketSizeWithoutOverlapIsStillOneAllreduceAfterBackward) {
  // overlap: false synchronises once after backward, so a bucket size changes nothing:
  // step = forward + backward + ring(4 x 10 MB) + update, as for `[ring]`.
  TrainingResult r = run("[{name: ring, bucket_size: 10MB, overlap: false}]");
  double want = kForward + kBackward + ring(4, 4 * kLayerGrad) + kUpdate;
  EXPECT_NEAR(r.step_time_s, want, want * 1e-6);
}

TEST(TrainingClosedForms, ZeroBucketSizeIsInBytes) {
  // ZeRO stage 2 with bucket_size 10 MB (bytes, like every size key): one reduce-scatter per layer,
  // RS(n) = (p−1)·(l + n/(p·B)) = 306 us, each hidden behind the next layer's 2 ms of backward but the last;
  // then every rank updates its quarter, and the 40 MB of parameters are all-gathered, AG(n) = RS(n):
  // step = forward + backward + RS(10 MB) + update / 4 + AG(40 MB).
  auto rs = [](double n) { return 3 * (kLink + n / (4 * kB)); };
  TrainingResult r = run("[{name: zero, stage: 2, bucket_size: 10MB}]");
  double want = kForward + kBackward + rs(kLayerGrad) + kUpdate / 4 + rs(4 * kLayerGrad);
  EXPECT_NEAR(r.step_time_s, want, want * 1e-6);
}

TEST(TrainingClosedForms, PublishedThroughputIsTheDefaultComputeRate) {
  // One A100 (40 GB) alone, batch 1, no compute rate in the scenario: the model's published rate on that GPU
  // and precision, R samples/s, sets forward + backward = 1/R; then the optimizer update. fp16 and bf16
  // serve each other; a given efficiency overrides the table; no entry for the GPU: efficiency 0.4.
  const std::string table =
      "workload.model.throughput=[{gpu: a100-40gb, precision: fp32, samples_per_s: 500, batch_per_gpu: 64, "
      "source: test}, {gpu: a100-40gb, precision: fp16, samples_per_s: 1000, batch_per_gpu: 64, source: "
      "test}, {gpu: v100, precision: fp32, samples_per_s: 1, batch_per_gpu: 1, source: test}]";
  const std::string no_rate = "  compute: {backward_factor: 2}\n";
  TrainingResult fp32 = run("[ddp]", no_rate, 1, {table});
  EXPECT_NEAR(fp32.step_time_s, 1.0 / 500 + kUpdate, 1e-9);
  TrainingResult bf16 = run("[ddp]", no_rate, 1, {table, "workload.precision=bf16"});
  EXPECT_NEAR(bf16.step_time_s, 1.0 / 1000 + kUpdate, 1e-9);
  TrainingResult given = run("[ddp]", "  compute: {efficiency: 1}\n", 1, {table});
  EXPECT_NEAR(given.step_time_s, kForward + kBackward + kUpdate, 1e-9);
  // tf32 has no entry on the A100 here: 0.4 of the TF32 peak (156 TFLOP/s): 4 layers x 19.5 GFLOP x 3 /
  // (156e12 x 0.4).
  TrainingResult tf32 = run("[ddp]", no_rate, 1, {table, "workload.precision=tf32"});
  EXPECT_NEAR(tf32.step_time_s, 4 * 19.5e9 * 3 / (156e12 * 0.4) + kUpdate, 1e-9);
}

TEST(TrainingClosedForms, SyncParameterServerSumsAndUpdatesOnItsCpu) {
  // One dedicated server, one 40 MB chunk after backward (chunk_size 100 MB), CPU reduction rate R = 10 GB/s.
  // The 4 pushes share the server's link: 4·40 MB / B + l. The server's CPU applies them one by one, 4 sums
  // of 40 MB at R, then the momentum update, 16 bytes of traffic per parameter where a sum moves 12: 4/3 · 40
  // MB / R. The 4 pulls share the link again. step = forward + backward + 2·(4·40 MB / B + l) + 4·40 MB / R +
  // 4/3·40 MB / R.
  const double n = 4 * kLayerGrad, R = 10e9;
  TrainingResult r = run("[{name: ps, servers: 1, placement: dedicated, chunk_size: 100MB}]", "", 4,
                         {"cluster.comm={reduce_bandwidth_cpu: 10GB/s}"});
  double want = kForward + kBackward + 2 * (4 * n / kB + kLink) + 4 * n / R + 4.0 / 3.0 * n / R;
  EXPECT_NEAR(r.step_time_s, want, want * 1e-6);
}

TEST(TrainingClosedForms, IncastSlowsThePushesIntoTheServerNotThePulls) {
  // The sync PS step above with TCP incast on the star's ports into hosts, goodput g(n) = 1 for one sender
  // and 0.5 from 4: the 4 pushes converge on the server's port at B·g(4) = B/2, the 4 pulls leave it to
  // 4 ports with one sender each at B:
  //   step = forward + backward + (4n / (B/2) + l) + (4n / B + l) + 4n/R + 4/3·n/R.
  const double n = 4 * kLayerGrad, R = 10e9;
  TrainingResult r =
      run("[{name: ps, servers: 1, placement: dedicated, chunk_size: 100MB}]", "", 4,
          {"cluster.comm={reduce_bandwidth_cpu: 10GB/s, incast: {curve: [[1, 1], [4, 0.5]]}}"});
  double want = kForward + kBackward + (4 * n / (kB / 2) + kLink) + (4 * n / kB + kLink) + 4 * n / R +
                4.0 / 3.0 * n / R;
  EXPECT_NEAR(r.step_time_s, want, want * 1e-6);
}

TEST(TrainingClosedForms, IncastLeavesARingAlone) {
  // A ring sends one flow into each host port: one sender, goodput g(1) = 1, so a DDP step is the same to
  // the picosecond with the incast curve as without it.
  const std::string curve = "cluster.comm={incast: {curve: [[1, 1], [2, 0.1]]}}";
  TrainingResult with = run("[ddp]", "", 4, {curve}), without = run("[ddp]");
  EXPECT_EQ(Time::from_seconds(with.step_time_s), Time::from_seconds(without.step_time_s));
}

TEST(TrainingClosedForms, AsyncParameterServerAppliesEachPushAsAnUpdate) {
  // One worker, one dedicated server, one 40 MB chunk, CPU rate R = 10 GB/s. Sync sums the push (n/R), then
  // updates (4/3·n/R); async applies the push to the weights at once, one update (4/3·n/R), no sum:
  //   sync  = forward + backward + 2·(n/B + l) + n/R + 4/3·n/R
  //   async = forward + backward + 2·(n/B + l) + 4/3·n/R
  const double n = 4 * kLayerGrad, R = 10e9;
  const std::vector<std::string> cpu = {"cluster.comm={reduce_bandwidth_cpu: 10GB/s}"};
  double base = kForward + kBackward + 2 * (n / kB + kLink);
  for (const char* mode : {"sync", "async"}) {
    SCOPED_TRACE(mode);
    TrainingResult r = run(fmt::format("[{{name: ps, servers: 1, placement: dedicated, chunk_size: 100MB, "
                                       "mode: {}}}]",
                                       mode),
                           "", 1, cpu);
    double want = base + (std::string(mode) == "sync" ? n / R : 0) + 4.0 / 3.0 * n / R;
    EXPECT_NEAR(r.step_time_s, want, want * 1e-6);
  }
}

TEST(TrainingClosedForms, ParameterServerHostSoftwareCostQueuesOnTheServersCores) {
  // A transport that spends host CPU: per message o = 20 us and a per-byte cost at rate r = 1 GB/s, at each
  // end: c = o + n/r per message. p = 4 workers (each its own host), one dedicated server host with h cores,
  // one n = 40 MB chunk, links so fast that the wire time is negligible (B = 1e15 B/s, no latency), no
  // reduction cost. A worker's own path per step is forward + backward + 4c (serialise its push, the server
  // deserialises it, serialises the pull, the worker deserialises it); the server's cores do 2p messages per
  // step, 2p·c/h of time. With h = p nothing queues; with h = 1 the server's cores bound the step:
  //   step = max(forward + backward + 4c, 2p·c/h)  (+ wire terms of order n/B).
  // (Between the two, h = 2, the waves of pushes and pulls interleave with the next step's backward passes
  // and the step time is not this simple maximum.)
  const double n = 4 * kLayerGrad, c = 20e-6 + n / 1e9;
  for (int h : {1, 4}) {
    SCOPED_TRACE(h);
    TrainingResult r =
        run(fmt::format("[{{name: ps, servers: 1, placement: dedicated, chunk_size: 100MB, transport: tcp, "
                        "server_cores: {}}}]",
                        h),
            "", 4,
            {"cluster.network.link={bandwidth: 1000000TB/s, latency: 0us}",
             "cluster.comm={transports: {tcp: {overhead: 20us, cpu_rate: 1GB/s}}}"});
    double want = std::max(kForward + kBackward + 4 * c, 2 * 4 * c / h);
    EXPECT_NEAR(r.step_time_s, want, want * 1e-6);
  }
  // The built-in grpc transport (11 us and 2.4 GB/s per core at each end), with h = 4 cores: the same
  // formula with c = 11 us + n / 2.4 GB/s.
  const double g = 11e-6 + n / 2.4e9;
  TrainingResult r = run(
      "[{name: ps, servers: 1, placement: dedicated, chunk_size: 100MB, transport: grpc, server_cores: 4}]",
      "", 4, {"cluster.network.link={bandwidth: 1000000TB/s, latency: 0us}"});
  double want = std::max(kForward + kBackward + 4 * g, 2 * 4 * g / 4);
  EXPECT_NEAR(r.step_time_s, want, want * 1e-6);
}

TEST(TrainingClosedForms, ParameterServerConnectionStageSerialisesOneConnection) {
  // A transport whose only cost is a serial stage per connection at C = 1 GB/s (gRPC handles one HTTP/2
  // connection's frames on one thread at a time), links so fast that the wire is negligible (B = 1e15 B/s,
  // no latency), no reduction cost. One dedicated server.
  // (a) 4 workers, one n = 40 MB chunk each: every worker has its own connection, so the 4 pushes (and then
  //     the 4 pulls) pass at once: step = forward + backward + 2·n/C.
  // (b) 1 worker, chunk_size 20 MB: chunk 1 (layers 3 and 2) is ready after their backward, 4 ms, chunk 2
  //     (layers 1 and 0) at the end of backward. Both pushes queue on the worker's push connection: chunk 1
  //     [F + 4 ms, + n/2C], chunk 2 right after; chunk 1's pull takes the server's connection back to the
  //     worker meanwhile, and chunk 2's pull follows it there. The next forward starts with layer 0, in
  //     chunk 2: step = F + 4 ms + 3·(n/2)/C.
  const double n = 4 * kLayerGrad, C = 1e9;
  const std::vector<std::string> fast = {"cluster.network.link={bandwidth: 1000000TB/s, latency: 0us}",
                                         "cluster.comm={transports: {x: {connection_rate: 1GB/s}}}"};
  TrainingResult a =
      run("[{name: ps, servers: 1, placement: dedicated, chunk_size: 100MB, transport: x}]", "", 4, fast);
  EXPECT_NEAR(a.step_time_s, kForward + kBackward + 2 * n / C, a.step_time_s * 1e-6);
  TrainingResult b =
      run("[{name: ps, servers: 1, placement: dedicated, chunk_size: 20MB, transport: x}]", "", 1, fast);
  double want = kForward + 4e-3 + 3 * (n / 2) / C;
  EXPECT_NEAR(b.step_time_s, want, want * 1e-6);
}

TEST(TrainingClosedForms, ParameterServerProcessStageSerialisesEverythingOneProcessSends) {
  // A transport whose only cost is a serial stage per sending process at C = 1 GB/s (TensorFlow 1.x serves
  // every tensor a process sends from one thread), wire negligible as above, no reduction cost. One dedicated
  // server, 4 workers, one n = 40 MB chunk each.
  // Pushes: each worker sends from its own process, so the 4 pass at once: n/C. Pulls: all 4 leave the one
  // server process, one after another, ending n/C, 2n/C, 3n/C and 4n/C after the update. The last worker's
  // next push then reaches the server F + B + n/C after its pull, so the step (the server's period) is
  //   step = F + B + n/C + 4·n/C.
  // The same stage per connection gives F + B + 2·n/C (the test above): the difference is the mechanism.
  // With both stages (connection at C2 = 2 GB/s, then process at C), a message passes its connection's and
  // then its sender's: the pushes take n/C2 + n/C in parallel; the 4 pulls pass their connections together
  // (n/C2) and then the server's process one by one: step = F + B + 2·n/C2 + 5·n/C.
  const double n = 4 * kLayerGrad, C = 1e9, C2 = 2e9;
  const std::string ps = "[{name: ps, servers: 1, placement: dedicated, chunk_size: 100MB, transport: x}]";
  const std::string fast = "cluster.network.link={bandwidth: 1000000TB/s, latency: 0us}";
  TrainingResult r = run(ps, "", 4, {fast, "cluster.comm={transports: {x: {process_rate: 1GB/s}}}"});
  double want = kForward + kBackward + 5 * n / C;
  EXPECT_NEAR(r.step_time_s, want, want * 1e-6);
  TrainingResult both =
      run(ps, "", 4, {fast, "cluster.comm={transports: {x: {process_rate: 1GB/s, connection_rate: 2GB/s}}}"});
  want = kForward + kBackward + 2 * n / C2 + 5 * n / C;
  EXPECT_NEAR(both.step_time_s, want, want * 1e-6);
}

TEST(TrainingClosedForms, ParameterServersOfOneWorkerProcessSkipTheTransport) {
  // One worker whose servers are colocated on its own node is one process that keeps its variables (as
  // TensorFlow without a ps job): the host transport is not used, and the step equals the ideal one to the
  // picosecond. On dedicated server hosts the same transport adds 4 messages of c = 20 us + 20 MB / 1 GB/s
  // (each server's half of the chunk, the two halves in parallel on unlimited cores) to the step: serialise
  // and deserialise the push, then the pull: step = ideal + 4c.
  const std::vector<std::string> tcp = {
      "cluster.comm={transports: {tcp: {overhead: 20us, cpu_rate: 1GB/s}}}"};
  for (const char* placement : {"colocated", "dedicated"}) {
    SCOPED_TRACE(placement);
    const std::string ps =
        fmt::format("[{{name: ps, servers: 2, placement: {}, chunk_size: 100MB", placement);
    double with = run(ps + ", transport: tcp}]", "", 1, tcp).step_time_s;
    double ideal = run(ps + "}]", "", 1, tcp).step_time_s;
    if (std::string(placement) == "colocated") {
      EXPECT_EQ(Time::from_seconds(with), Time::from_seconds(ideal));
    } else {
      EXPECT_NEAR(with, ideal + 4 * (20e-6 + 2 * kLayerGrad / 1e9), with * 1e-9);
    }
  }
}

TEST(TrainingClosedForms, GlobalBarrierHoldsEveryPullUntilEveryShardIsUpdated) {
  // One worker, two dedicated servers, variables round robin: layer a (first, 10 MB) on server 0, layer b
  // (last, 100 MB) on server 1; forward 1 ms and backward 2 ms each (f, b); CPU reduction rate R = 10 GB/s
  // (sum n/R, update 4/3·n/R); links so fast that the wire is negligible. b's gradients leave first but its
  // server is the slow one: it ends the step at b's update. Without the barrier the next forward of a runs
  // as soon as a is updated and only b's forward waits for b's pull; with it (SyncReplicasOptimizer's token)
  // a's pull waits for b's update too, and the whole forward starts after it. Period (forward b to forward
  // b):
  //   per shard: f_b + b_b + n_b/R + 4/3·n_b/R
  //   global barrier: the same + f_a
  const double nb = 100e6, R = 10e9, f = 1e-3;
  const std::vector<std::string> over = {
      "cluster.network.link={bandwidth: 1000000TB/s, latency: 0us}",
      "cluster.comm={reduce_bandwidth_cpu: 10GB/s}",
      "workload.model.layers=[{name: a, params: 2500000, forward_flops: 19.5GFLOP}, "
      "{name: b, params: 25000000, forward_flops: 19.5GFLOP}]"};
  const std::string ps = "[{name: ps, servers: 2, placement: dedicated, sharding: round-robin";
  double per_shard = run(ps + "}]", "", 1, over).step_time_s;
  double barrier = run(ps + ", global_barrier: true}]", "", 1, over).step_time_s;
  double want = f + 2 * f + nb / R + 4.0 / 3.0 * nb / R;
  EXPECT_NEAR(per_shard, want, want * 1e-6);
  EXPECT_NEAR(barrier, want + f, want * 1e-6);
}

TEST(TrainingClosedForms, ParameterServerPullsOverlapTheNextForward) {
  // One worker, one dedicated server, sharding by variable (each layer one message). Two layers: A first
  // with n_A = 4 KB of gradients, B last with n_B = 40 MB; forward 1 ms each (f_A, f_B), backward 2 ms each
  // (b_A, b_B). From the start of B's forward: B's backward ends at f_B + b_B, its push and then its pull
  // take n_B/B + l each. A's push (after b_A) and pull are tiny, so the next step's forward of A runs while
  // B's pull is still on the wire; B's forward then waits only for B's pull. A's pull shares the server's
  // downlink with B's for a moment, which delays B's by n_A/B. Step (B forward to B forward):
  //   layer-wise: f_B + b_B + 2·(n_B/B + l) + n_A/B
  // where a forward that waited for every pull of the step would add f_A (1 ms) to it.
  const double nA = 4e3, nB = 40e6;
  TrainingResult r = run("[{name: ps, servers: 1, placement: dedicated, sharding: round-robin}]", "", 1,
                         {"workload.model.layers=[{name: a, params: 1000, forward_flops: 19.5GFLOP}, "
                          "{name: b, params: 10000000, forward_flops: 19.5GFLOP}]"});
  double want = 1e-3 + 2e-3 + 2 * (nB / kB + kLink) + nA / kB;
  EXPECT_NEAR(r.step_time_s, want, want * 1e-6);
}

TEST(TrainingClosedForms, ColocatedServersShareTheirHostsCpu) {
  // One worker node holding all k colocated servers: they share its CPU (one accumulator at R = 10 GB/s), so
  // k = 8 shards take as long as one: sums n/R and the update 4/3·n/R in total, whatever k. (Each server
  // used to get a CPU of its own: k = 8 ran the sums 8 times faster.) One GPU, its host also the servers'
  // host: the transfers stay inside it.
  const std::vector<std::string> cpu = {"cluster.comm={reduce_bandwidth_cpu: 10GB/s}"};
  double one =
      run("[{name: ps, servers: 1, placement: colocated, chunk_size: 100MB}]", "", 1, cpu).step_time_s;
  double eight =
      run("[{name: ps, servers: 8, placement: colocated, chunk_size: 100MB}]", "", 1, cpu).step_time_s;
  const double n = 4 * kLayerGrad, R = 10e9;
  EXPECT_NEAR(one, kForward + kBackward + n / R + 4.0 / 3.0 * n / R, one * 1e-6);
  EXPECT_NEAR(eight, one, one * 1e-9);
}

TEST(TrainingClosedForms, OverlapSlowdownStretchesComputeUnderResidentKernels) {
  // compute.overlap_slowdown s: compute on a GPU while one of its collective kernels is resident takes s x
  // the overlap longer. Buckets of one layer: the allreduce of bucket b (ring(10 MB) = 612 us) is resident
  // during the first 612 us of layer b+1's backward, for b = 0, 1, 2; the last one runs after backward,
  // alone. So step = forward + backward + 3·s·ring(10 MB) + ring(10 MB) + update.
  TrainingResult r = run("[{name: ddp, bucket_size: 10MB, first_bucket: 10MB}]",
                         "  compute: {efficiency: 1, overlap_slowdown: 0.4}\n");
  double want = kForward + kBackward + 3 * 0.4 * ring(4, kLayerGrad) + ring(4, kLayerGrad) + kUpdate;
  EXPECT_NEAR(r.step_time_s, want, want * 1e-6);
}

TEST(TrainingClosedForms, EfficiencyAndThroughputDefinitions) {
  // throughput = p·batch / step; E_G = (throughput_p / throughput_ref) / (p / p_ref), here p_ref = p (the
  // smallest count simulated), so E = 1 and the linear LR rule scales by 1.
  TrainingResult r = run("[ring]");
  EXPECT_NEAR(r.throughput, 4 / r.step_time_s, 1e-9);
  EXPECT_DOUBLE_EQ(r.efficiency, 1);
  EXPECT_DOUBLE_EQ(r.learning_rate_scale, 1);
}

TEST(TrainingClosedForms, StragglersHurtSyncMoreThanBoundedStaleness) {
  // Lognormal per-worker, per-step jitter (cv 0.3) on compute: a synchronous step waits for the slowest of p
  // workers, a bounded-staleness PS (SSP, s = 2) lets the fast ones run ahead, so its mean step stays nearer
  // the mean compute time.
  const std::string jitter = "  jitter: {distribution: lognormal, cv: 0.3}\n";
  double sync = run("[{name: ps, servers: 2, placement: dedicated, mode: sync}]", jitter, 8).step_time_s;
  double ssp =
      run("[{name: ps, servers: 2, placement: dedicated, mode: ssp, staleness: 2}]", jitter, 8).step_time_s;
  double ddp = run("[ddp]", jitter, 8).step_time_s;
  double calm = run("[{name: ps, servers: 2, placement: dedicated, mode: sync}]", "", 8).step_time_s;
  EXPECT_GT(sync, 1.05 * ssp);
  EXPECT_GT(ddp, 1.05 * ssp);
  EXPECT_GT(sync, calm);
}

TEST(TrainingClosedForms, LoaderFileSystemSpreadIsMaxOfDecodeAndRead) {
  // One GPU, loader-bound (compute 12 ms per step): the loader runs back to back, so the step time is the
  // mean batch load time. A batch takes max(d, r·Y): decode d = batch / (threads · per_thread) = 1 / 10 s,
  // read r = batch · bytes_per_sample · p / filesystem = 1 MB / (10 MB/s) = 0.1 s, Y lognormal with mean 1
  // and cv c (σ² = ln(1 + c²)), independent per (worker, step). E[max(d, rY)] = d + r·Φ(δ1) − d·Φ(δ2) with δ1
  // = (ln(r/d) + σ²/2)/σ, δ2 = δ1 − σ; with d = r: d·(1 + erf(σ / (2√2))). c = 0.5: 0.11866 s. 400 steps
  // (standard error of the mean ≈ 0.7%), held within 3%. Without the spread (c = 0) it is max(d, r) = 0.1 s.
  const std::string loader =
      "  loader: {kind: native, threads: 1, per_thread: 10, filesystem: 10MB/s, filesystem_cv: 0.5}\n";
  const std::vector<std::string> set = {"workload.model.input={bytes_per_sample: 1MB}", "workload.steps=400"};
  double sigma = std::sqrt(std::log(1 + 0.5 * 0.5));
  double expected = 0.1 * (1 + std::erf(sigma / (2 * std::sqrt(2.0))));
  EXPECT_NEAR(expected, 0.11866, 1e-4);
  EXPECT_NEAR(run("[ddp]", loader, 1, set).step_time_s, expected, 0.03 * expected);
  std::vector<std::string> calm = set;
  calm.push_back("workload.loader.filesystem_cv=0");
  EXPECT_NEAR(run("[ddp]", loader, 1, calm).step_time_s, 0.1, 1e-9);
}

TEST(TrainingClosedForms, LoaderSpreadIsDrawnApartFromComputeJitter) {
  // One GPU, loader-bound: decode d = batch / (threads · per_thread) = 1 / 10 s, compute c = 12 ms per step.
  // With loader.cv 0 the loader's own spread is nothing, however much the compute jitters (cv 0.3): the
  // loader runs back to back, so K measured steps take K·d plus the difference between the last and the
  // warm-up step's jittered compute, |Δ| < 2c: step = d ± 2c/K = 0.1 s ± 6e-5 for K = 400. Without loader.cv
  // the loader shares the compute's factor j (mean 1, cv 0.3): the mean step is d·E[j] = d, up to the
  // sampling error d·0.3/√K = 1.5 ms, held within 5%.
  const std::string loader = "  loader: {kind: native, threads: 1, per_thread: 10, cv: 0}\n";
  const std::vector<std::string> set = {"workload.jitter={distribution: lognormal, cv: 0.3}",
                                        "workload.steps=400"};
  EXPECT_NEAR(run("[ddp]", loader, 1, set).step_time_s, 0.1, 2 * 0.012 / 400);
  std::vector<std::string> shared = set;
  shared.push_back("workload.loader={kind: native, threads: 1, per_thread: 10}");
  EXPECT_NEAR(run("[ddp]", loader, 1, shared).step_time_s, 0.1, 0.05 * 0.1);
}

TEST(TrainingClosedForms, LoaderStartsAfterTheWeightBroadcast) {
  // Two GPUs on a 100 MB/s star. The initial broadcast sends the 10 M fp32 weights, B = 40 MB / (100 MB/s)
  // = 0.4 s; a step's allreduce carries 1-byte gradients (10 MB) and with the compute takes C ~ 0.11 s; a
  // batch decodes in D = batch / (threads · per_thread) = 1 / 5 = 0.2 s > C. The loader starts when the
  // training loop does, after the broadcast: batch k is ready at B + (k + 1)·D, every step waits for its
  // batch and the measured steps take D each, exactly. (A loader started at 0 had two batches ready during
  // the broadcast, and the 3 measured steps averaged 0.135 s, less than the loader allows.)
  const std::string extra =
      "  gradient_bytes: 1B\n"
      "  loader: {kind: native, threads: 1, per_thread: 5}\n";
  TrainingResult r =
      run("[ddp]", extra, 2, {"cluster.network={kind: star, link: {bandwidth: 100MB/s, latency: 1us}}"});
  EXPECT_NEAR(r.step_time_s, 0.2, 1e-9);
}

// Bytes each directed link carried (by name) in the one run of a scenario given as text, at `nodes`.
std::map<std::string, double> link_bytes(const std::string& text, int64_t nodes) {
  Scenario sc = parse_scenario(YamlNode::load_string(text, "t.yaml"));
  TrainingOptions opts;
  opts.top_links = 64;
  std::map<std::string, double> out;
  std::vector<TrainingResult> results = run_training(sc, {nodes}, opts);  // (kept: the loop reads into it)
  for (const LinkLoad& l : results.at(0).links) out[l.link] = l.bytes;
  return out;
}

// Bytes over each of k = 2 dedicated servers' cables, {server0 out, server1 out, server0 in, server1 in}, for
// p = 4 workers (each its own host on a star) running 4 steps (1 warm-up + 3) of a model of these `layers`
// with parameter servers sharded by `sharding`.
std::vector<double> server_loads(const std::string& layers, const std::string& sharding) {
  std::string text = fmt::format(
      "name: t\n"
      "cluster: {{nodes: 4, gpus_per_node: 1, gpu: a100-40gb,\n"
      "  network: {{kind: star, link: {{bandwidth: 25GB/s, latency: 1us}}}}}}\n"
      "workload:\n"
      "  model: {{name: m, layers: [{}]}}\n"
      "  batch_per_gpu: 1\n"
      "  steps: 3\n"
      "strategies: [{{name: ps, servers: 2, sharding: {}}}]\n",
      layers, sharding);
  std::map<std::string, double> out = link_bytes(text, 4);
  return {out["server0 > switch"], out["server1 > switch"], out["switch > server0"], out["switch > server1"]};
}

TEST(TrainingClosedForms, VariablePlacementDecidesEachServersLoad) {
  // Layers of 30, 10, 10 and 10 MB of gradients (7.5e6, 2.5e6, 2.5e6, 2.5e6 FP32 parameters), k = 2
  // dedicated servers, p = 4 workers, 4 simulated steps (1 warm-up + 3). Each variable goes whole to one
  // server, which every worker pushes to and pulls from, so server j's cable carries 4 steps · p · L_j each
  // way, L_j its variables' bytes:
  //   round-robin (creation order): L = {30 + 10, 10 + 10} = {40, 20} MB -> 640 MB and 320 MB;
  //   greedy (least bytes so far):  L = {30, 10 + 10 + 10} = {30, 30} MB -> 480 MB each.
  // Range sharding splits every chunk over both: 30 MB each as well. Partition sharding sends every chunk
  // (8 MB at least, cut at layer ends: in backward order the 10, 10, 10 and 30 MB layers, one chunk each)
  // whole to one server, round robin: L = {10 + 10, 10 + 30} = {20, 40} MB -> 320 MB and 640 MB.
  // MXNet's keys (kvstore_dist.h): a layer of at least bigarray_bound parameters is divided over both, a
  // smaller one (key k, counted over the layers with parameters) goes whole to server 9973 k mod 2:
  //   bound 5e6: the 30 MB layer 15 + 15, keys 1, 2, 3 to servers 1, 0, 1 -> L = {25, 35} MB -> 400, 560 MB;
  //   the default bound 1e6: every layer divided, as range: 480 MB each.
  // BytePS's partitions cut each layer into partitions of at most chunk_size = 16 MB: the 30 MB layer (key 0)
  // into 16 + 14 MB, keys 0 and 1; the 10 MB layers are keys 1 << 16, 2 << 16, 3 << 16. Key k goes to server
  // djb2(decimal k) mod 2, djb2(s) = 5381·33^|s| + Σ s[i]·33^(|s|-1-i): djb2("0") = 177573 + 48 = 177621
  // (odd: server 1), djb2("1") = 177622 (server 0), djb2("65536") = 210653553582 (server 0),
  // djb2("131072") = 6951369072467 (1), djb2("196608") = 6951376373987 (1):
  //   L = {14 + 10, 16 + 10 + 10} = {24, 36} MB -> 384 MB and 576 MB.
  // key_hash: naive, ((k >> 16) + k mod 65536)·9973 mod 2: keys 0, 1, 1 << 16, 2 << 16, 3 << 16 -> 0, 9973,
  // 9973, 2·9973, 3·9973 -> servers 0, 1, 1, 0, 1: L = {16 + 10, 14 + 10 + 10} = {26, 34} MB -> 416, 544 MB.
  // key_hash: sdbm, h = c + (h << 6) + (h << 16) - h over the digits, mod 2^64: "0" -> 48, "1" -> 49,
  // "65536" -> 3850799628401345593, "131072" -> 16622825045864838332, "196608" -> 17050440749492411856 ->
  // servers 0, 1, 1, 0, 0: L = {16 + 10 + 10, 14 + 10} = {36, 24} MB -> 576, 384 MB.
  const std::string layers =
      "{params: 7500000, forward_flops: 1GFLOP}, {params: 2500000, forward_flops: 1GFLOP}, "
      "{params: 2500000, forward_flops: 1GFLOP}, {params: 2500000, forward_flops: 1GFLOP}";
  auto loads = [&](const std::string& sharding) { return server_loads(layers, sharding); };
  std::vector<double> rr = loads("round-robin"), greedy = loads("greedy"), range = loads("range"),
                      partition = loads("partition"), byteps = loads("byteps, chunk_size: 16MB"),
                      byteps_naive = loads("byteps, chunk_size: 16MB, key_hash: naive"),
                      byteps_sdbm = loads("byteps, chunk_size: 16MB, key_hash: sdbm"),
                      mxnet = loads("mxnet, bigarray_bound: 5000000"), mxnet_default = loads("mxnet");
  EXPECT_NEAR(rr[0], 640e6, 1);
  EXPECT_NEAR(rr[1], 320e6, 1);
  EXPECT_NEAR(rr[2], 640e6, 1);
  EXPECT_NEAR(greedy[0], 480e6, 1);
  EXPECT_NEAR(greedy[1], 480e6, 1);
  EXPECT_NEAR(range[0], 480e6, 1);
  EXPECT_NEAR(range[1], 480e6, 1);
  EXPECT_NEAR(partition[0], 320e6, 1);
  EXPECT_NEAR(partition[1], 640e6, 1);
  EXPECT_NEAR(byteps[0], 384e6, 1);
  EXPECT_NEAR(byteps[1], 576e6, 1);
  EXPECT_NEAR(byteps[2], 384e6, 1);
  EXPECT_NEAR(byteps_naive[0], 416e6, 1);
  EXPECT_NEAR(byteps_naive[1], 544e6, 1);
  EXPECT_NEAR(byteps_sdbm[0], 576e6, 1);
  EXPECT_NEAR(byteps_sdbm[1], 384e6, 1);
  EXPECT_NEAR(mxnet[0], 400e6, 1);
  EXPECT_NEAR(mxnet[1], 560e6, 1);
  EXPECT_NEAR(mxnet[2], 400e6, 1);
  EXPECT_NEAR(mxnet_default[0], 480e6, 1);
  EXPECT_NEAR(mxnet_default[1], 480e6, 1);
}

TEST(TrainingClosedForms, BytepsPartitionsAtItsDefaultBound) {
  // One layer of 2,048,000 fp32 parameters = 8,192,000 B, 4 workers, 2 servers, 4 simulated steps. BytePS's
  // default BYTEPS_PARTITION_BYTES of 4,096,000 B cuts it into two partitions, keys 0 and 1, on servers
  // djb2("0") mod 2 = 177621 mod 2 = 1 and djb2("1") mod 2 = 177622 mod 2 = 0 (see above): each server
  // takes 4·4·4.096 MB = 65.536 MB. With sharding: partition (8 MB chunks at least) the layer is one chunk,
  // all 4·4·8.192 MB = 131.072 MB on server 0.
  const std::string layer = "{params: 2048000, forward_flops: 1GFLOP}";
  std::vector<double> byteps = server_loads(layer, "byteps"), partition = server_loads(layer, "partition");
  EXPECT_NEAR(byteps[2], 65.536e6, 1);
  EXPECT_NEAR(byteps[3], 65.536e6, 1);
  EXPECT_NEAR(partition[2], 131.072e6, 1);
  EXPECT_NEAR(partition[3], 0, 1);
}

TEST(TrainingClosedForms, LocalAggregationPushesOncePerNode) {
  // 2 nodes of 4 GPUs (each GPU its own host on a star), one dedicated server, n = 40 MB of gradients, 4
  // simulated steps. Without local aggregation all p = 8 GPUs push and pull: the server's cable carries
  // 4·8·n = 1.28 GB each way. With it, each node's first GPU sums its node's gradients and alone pushes and
  // pulls: 4·2·n = 320 MB; that GPU's own cable then takes in the 3 local chunks and the pull: 4·4·n = 640
  // MB.
  auto loads = [](bool local) {
    std::string text = fmt::format(
        "name: t\n"
        "cluster: {{nodes: 2, gpus_per_node: 4, gpu: a100-40gb,\n"
        "  network: {{kind: star, link: {{bandwidth: 25GB/s, latency: 1us}}}}}}\n"
        "workload:\n"
        "  model: {{name: m, layers: [{{params: 10000000, forward_flops: 1GFLOP}}]}}\n"
        "  batch_per_gpu: 1\n"
        "  steps: 3\n"
        "strategies: [{{name: ps, servers: 1, chunk_size: 100MB, local_aggregation: {}}}]\n",
        local);
    return link_bytes(text, 2);
  };
  std::map<std::string, double> plain = loads(false), local = loads(true);
  EXPECT_NEAR(plain["server0 > switch"], 1.28e9, 1);
  EXPECT_NEAR(plain["switch > server0"], 1.28e9, 1);
  EXPECT_NEAR(local["server0 > switch"], 320e6, 1);
  EXPECT_NEAR(local["switch > server0"], 320e6, 1);
  EXPECT_NEAR(local["switch > gpu0"], 640e6, 1);
}

// Local aggregation on the host (`local_aggregation: cpu`, MXNet's dist_sync): on 2 nodes of
// topologies/ethernet-25g (4 GPUs on one PCIe switch with the host CPU and the NIC), one dedicated server,
// n = 40 MB of gradients, 4 simulated steps. Node 1 (no part in the initial broadcast but receiving it):
//   every GPU, the first included, copies n per step into host memory: gpu_i > pcie0 carries 4·n = 160 MB;
//   into the CPU go the 4 GPUs' chunks and the pull: pcie0 > cpu carries 4·(4·n + n) = 800 MB;
//   out of the CPU go the push and a copy of the pull into each GPU: cpu > pcie0 carries 4·(n + 4·n) = 800
//   MB; each GPU receives the pull's copy and the initial broadcast: pcie0 > gpu_i carries 4·n + n = 200 MB.
// On the first GPU instead (`gpu`), nothing crosses into the CPU, and GPU 0 takes in the 3 other chunks and
// the pull: pcie0 > gpu0 carries 4·(3·n + n) + n = 680 MB. The server's cable carries 4·2·n = 320 MB each way
// in both.
TEST(TrainingClosedForms, LocalAggregationOnTheHostGoesThroughHostMemory) {
  auto loads = [](const char* where) {
    return link_bytes(
        fmt::format("name: t\n"
                    "cluster: {{topology: ethernet-25g, nodes: 2}}\n"
                    "workload:\n"
                    "  model: {{name: m, layers: [{{params: 10000000, forward_flops: 1GFLOP}}]}}\n"
                    "  batch_per_gpu: 1\n"
                    "  steps: 3\n"
                    "strategies: [{{name: ps, servers: 1, placement: dedicated, chunk_size: 100MB, "
                    "local_aggregation: {}}}]\n",
                    where),
        2);
  };
  std::map<std::string, double> cpu = loads("cpu"), gpu = loads("gpu");
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(cpu[fmt::format("n1.gpu{} > n1.pcie0", i)], 160e6, 1) << i;
    EXPECT_NEAR(cpu[fmt::format("n1.pcie0 > n1.gpu{}", i)], 200e6, 1) << i;
  }
  EXPECT_NEAR(cpu["n1.pcie0 > n1.cpu"], 800e6, 1);
  EXPECT_NEAR(cpu["n1.cpu > n1.pcie0"], 800e6, 1);
  EXPECT_EQ(gpu["n1.pcie0 > n1.cpu"], 0);  // (absent from the loaded links, or listed with 0 bytes)
  EXPECT_NEAR(gpu["n1.pcie0 > n1.gpu0"], 680e6, 1);
  for (const auto* m : {&cpu, &gpu}) {
    EXPECT_NEAR(m->at("server0 > leaf0"), 320e6, 1);
    EXPECT_NEAR(m->at("leaf0 > server0"), 320e6, 1);
  }
}

// Sharding by variable sends each layer's gradients to its own server as one message, whatever chunk_size
// (8 MB by default) would slice: 4 layers of 0.5e6 parameters (2 MB each, together less than one chunk),
// round-robin over 4 servers, one layer each. Per step every server receives 2 MB from each of the p = 4
// workers: max = mean = 4 x 2e6 bytes (before, the four layers went as one 8 MB bucket to one server).
TEST(TrainingClosedForm, ShardingByVariableSendsEachLayerToItsServer) {
  std::vector<std::string> small;
  for (int l = 0; l < 4; ++l) small.push_back(fmt::format("workload.model.layers.{}.params=500000", l));
  for (const char* sharding : {"round-robin", "greedy"}) {
    SCOPED_TRACE(sharding);
    TrainingResult r =
        run(fmt::format("[{{name: ps, servers: 4, placement: dedicated, sharding: {}}}]", sharding), "", 4,
            small);
    EXPECT_DOUBLE_EQ(r.ps_max_server_bytes, 4 * 2e6);
    EXPECT_DOUBLE_EQ(r.ps_mean_server_bytes, 4 * 2e6);
  }
  TrainingResult range = run("[{name: ps, servers: 4, placement: dedicated}]", "", 4, small);
  EXPECT_DOUBLE_EQ(range.ps_max_server_bytes, 4 * 2e6);  // 8 MB sliced in 4 ranges of 2 MB
}

// `servers: per-node` puts one colocated server on every node at each node count N. The four layers' n = 40
// MB of gradients, range-sharded, go in every chunk to all k servers: each receives p·n/k per step from the
// p = N workers (one GPU per node), so with k = N every node's server takes n = 4e7 bytes at every N, and
// the run equals `servers: N` to the picosecond. A fixed `servers: 4` on N = 8 nodes loads only nodes 0-3,
// each with p·n/4 = 8e7 bytes.
TEST(TrainingClosedForm, PerNodeServersPutOneOnEveryNode) {
  for (int nodes : {1, 2, 4, 8}) {
    SCOPED_TRACE(nodes);
    TrainingResult per_node = run("[{name: ps, servers: per-node, placement: colocated}]", "", nodes);
    TrainingResult same =
        run(fmt::format("[{{name: ps, servers: {}, placement: colocated}}]", nodes), "", nodes);
    EXPECT_DOUBLE_EQ(per_node.ps_max_server_bytes, 4e7);
    EXPECT_DOUBLE_EQ(per_node.ps_mean_server_bytes, 4e7);
    EXPECT_EQ(per_node.step_time_s, same.step_time_s);
  }
  TrainingResult four = run("[{name: ps, servers: 4, placement: colocated}]", "", 8);
  EXPECT_DOUBLE_EQ(four.ps_max_server_bytes, 8e7);
}

// The memory estimate counts tasks from one-node graphs of 2 and 3 steps: a worker's tasks are
// T(n, S) = n (W(2) - 2 d + S d) with d = W(3) - W(2), the tasks of no worker (collectives) the same without
// n. Data-parallel graphs repeat per worker and per step, so at 4 and 8 nodes and 7 steps that is the real
// graph's task count exactly for ddp; a PS on dedicated hosts has per-step server tasks that the one-node
// graph counts once per node: an upper bound within 2x.
TEST(MemoryEstimate, TasksScaleByNodesAndStepsAsTheRealGraph) {
  std::string file = std::string(DDLSIM_SOURCE_DIR) + "/scenarios/aach2023/resnet50-dali-cpu.yaml";
  for (const char* strategies :
       {"strategies=[ddp]", "strategies=[{name: ps, servers: 2, placement: dedicated}]"}) {
    Scenario sc = load_scenario(file, {"workload.warmup_steps=2", "workload.steps=5", strategies});
    const Strategy& st = sc.strategies[0];
    for (int64_t nodes : {4, 8}) {
      Cluster cluster = build_cluster(sc.cluster, nodes, st.server_hosts());
      double tasks =
          static_cast<double>(build_training_graph(sc.training, st, cluster, sc.seed).graph.size());
      MemoryEstimate e = MemoryModel(sc, st).at(nodes);
      if (st.is_ps()) {
        EXPECT_GE(e.tasks, tasks);
        EXPECT_LE(e.tasks, 2.0 * tasks);
      } else {
        EXPECT_EQ(e.tasks, tasks);
      }
      EXPECT_GT(e.bytes, e.tasks * 100);  // at least the Task and its record
    }
    // The flows bound grows with the GPUs.
    MemoryModel model(sc, st);
    EXPECT_DOUBLE_EQ(model.at(8).flows, 2 * model.at(4).flows);
  }
}

TEST(TrainingClosedForms, DdpAndHorovodRunNcclsChoiceUnderItsProtocols) {
  // DDP and Horovod call NCCL: without `algorithm`, on a cluster that runs NCCL's protocols they run what
  // NCCL's tuner picks (the hierarchical allreduce with inter_node auto: here, one GPU per node, its
  // allreduce between nodes), elsewhere the ring. On 4 nodes of 2 GPUs the hierarchical allreduce differs
  // from the ring.
  const std::vector<std::string> nccl = {"cluster.comm={protocols: nccl}", "cluster.gpus_per_node=2"};
  const std::vector<std::string> plain = {"cluster.gpus_per_node=2"};
  for (const std::string s :
       {"{name: ddp, bucket_size: 64KB, first_bucket: 64KB", "{name: horovod, fusion_threshold: 64KB"}) {
    SCOPED_TRACE(s);
    double chosen = run("[" + s + "}]", "", 4, nccl).step_time_s;
    EXPECT_EQ(chosen,
              run("[" + s + ", algorithm: hierarchical, inter_node: auto}]", "", 4, nccl).step_time_s);
    EXPECT_NE(chosen, run("[" + s + ", algorithm: ring}]", "", 4, nccl).step_time_s);
    EXPECT_EQ(run("[" + s + "}]", "", 8).step_time_s,
              run("[" + s + ", algorithm: ring}]", "", 8).step_time_s);
  }
}

TEST(TrainingClosedForms, PointsBelowOneNodeShareTheReference) {
  // DGX-1 (8 GPUs a node): 2 and 4 GPUs run on one node's first GPUs (TrainingOptions::part_node_gpus), 8 on
  // one whole node, all against one reference of 2 GPUs: efficiency(g) = throughput(g) / (throughput(2) ·
  // g / 2). The 2-GPU point is the same simulation as a cluster of 2 GPUs per node (cluster.gpus_per_node 2),
  // to the last bit.
  const std::string file = std::string(DDLSIM_SOURCE_DIR) + "/scenarios/pytorch-ddp-dgx1.yaml";
  Scenario sc = load_scenario(file, {"strategies=[ddp]", "reference_gpus=2", "workload.steps=2"});
  TrainingOptions opts;
  opts.part_node_gpus = {2, 4};
  std::vector<TrainingResult> r = run_training(sc, {1}, opts);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].gpus, 2);
  EXPECT_EQ(r[1].gpus, 4);
  EXPECT_EQ(r[2].gpus, 8);
  EXPECT_DOUBLE_EQ(r[0].efficiency, 1.0);
  for (const TrainingResult& x : r)
    EXPECT_NEAR(x.efficiency, x.throughput / (r[0].throughput * x.gpus / 2.0), 1e-12) << x.gpus;
  Scenario two = load_scenario(file, {"strategies=[ddp]", "workload.steps=2", "cluster.gpus_per_node=2"});
  EXPECT_EQ(run_training(two, {1}, TrainingOptions{})[0].step_time_s, r[0].step_time_s);
}
