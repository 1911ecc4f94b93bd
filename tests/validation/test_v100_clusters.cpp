// Published runs on V100 clusters, from the shipped topologies and each run's single-GPU rate:
// - PyTorch's DDP benchmark on DGX-1 machines (scenarios/pytorch-ddp-dgx1.yaml against
//   scenarios/measured/pytorch_ddp_dgx1.csv): ResNet-50 and ResNet-101, 2 to 16 GPUs, DDP's default 25 MB
//   buckets and 1 MB ones. Efficiency = per-GPU examples/s over DDP's on one GPU with the same buckets.
// - OneFlow's DLPerf (scenarios/dlperf-v100-resnet50.yaml against scenarios/measured/
//   dlperf_v100_resnet50.csv): ResNet-50 on 4 to 32 V100 of nodes with one EDR adapter, Horovod (TensorFlow,
//   MXNet) and DDP (PyTorch).
// - BytePS's BERT-large claim (scenarios/byteps-bert-v100.yaml against
// scenarios/measured/byteps_bert_v100.csv):
//   256 V100, 8 per machine with one 100 Gb/s adapter, BytePS against Horovod+NCCL.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "sim/io/csv.hpp"
#include "tests/support/cli.hpp"

using namespace ddlsim;

namespace {

// strategy/gpus -> (measured, simulated) efficiency, from `ddlsim validate` of a scenario against a measured
// file (both under scenarios/), with the --set options `sets`.
std::map<std::string, std::pair<double, double>> validate(const std::string& scenario,
                                                          const std::string& measured,
                                                          const std::string& sets) {
  std::string cmd = "validate '" + std::string(DDLSIM_SOURCE_DIR) + "/scenarios/" + scenario +
                    "' --measured '" + DDLSIM_SOURCE_DIR + "/scenarios/measured/" + measured +
                    "' --format csv " + sets;
  auto o = ddlsim_test::run_ddlsim(cmd);
  EXPECT_EQ(o.status, 0) << cmd << "\n" << o.out;
  CsvTable t = parse_csv(o.out, "validate output");
  std::map<std::string, std::pair<double, double>> rows;
  for (const auto& r : t.rows) {
    std::string key = r[t.column("strategy")] + "/" + r[t.column("gpus")];
    EXPECT_EQ(rows.count(key), 0u) << key << " twice: each label's rows go to that strategy alone";
    rows[key] = {std::stod(r[t.column("measured")]), std::stod(r[t.column("simulated")])};
  }
  return rows;
}

}  // namespace

TEST(PytorchDdpDgx1, EfficiencyByBucketSize) {
  // Models and their single-GPU rates without DDP (the benchmark's "no ddp" rows: 32 / 0.097 s, 32 / 0.162
  // s).
  for (auto [model, rate] : {std::pair<const char*, double>{"resnet50", 329}, {"resnet101", 197}}) {
    SCOPED_TRACE(model);
    auto rows = validate("pytorch-ddp-dgx1.yaml", "pytorch_ddp_dgx1.csv",
                         "--set workload.model=" + std::string(model) +
                             " --set workload.compute.samples_per_s=" + std::to_string(rate));
    // 2 and 4 GPUs run on part of one node (the first GPUs), 8 on one, 16 on two: 8 rows per model.
    ASSERT_EQ(rows.size(), 8u);
    for (int g : {2, 4, 8, 16}) {
      auto big = rows["ddp/" + std::to_string(g)], small = rows["ddp-1mb/" + std::to_string(g)];
      // DDP's default 25 MB buckets: within 0.05 of the measured efficiency (0.011-0.040 now).
      EXPECT_NEAR(big.second, big.first, 0.05) << g;
      // Known miss: measured, 1 MB buckets lose 0.010-0.035 of efficiency to 25 MB from 2 GPUs on; simulated,
      // less than a third of that (1 MB is even ahead at some counts). When a mechanism closes the gap, this
      // fails: then hold the 1 MB rows like the 25 MB ones.
      double measured_gap = big.first - small.first, simulated_gap = big.second - small.second;
      EXPECT_GE(measured_gap, 0.009) << g;
      EXPECT_LT(simulated_gap, measured_gap / 3) << g;
    }
  }
}

TEST(DlperfV100, OneNodeNearTheMeasurementAcrossNodesAKnownMiss) {
  // Each framework against its own single GPU (TensorFlow 362.44, PyTorch 354.40 images/s at batch 128, MXNet
  // 389.71 at 96). On one node (4 or 8 GPUs on NVLink) the model is within 0.06 of each measurement (it has
  // no host CPU feeding eight DALI pipelines). Across nodes it is a known miss: the measured efficiency falls
  // to 0.82-0.94 at 32 GPUs while the model hides the one EDR adapter's ring traffic (2 x 31/32 x 102 MB per
  // step, ~18 ms at the 11.25 GB/s the adapter carries for its six channels) behind a ~236 ms backward and
  // stays near 0.98 (0.979-0.997). When a mechanism closes the gap, this fails: then hold the points within
  // 0.05.
  auto tf = validate("dlperf-v100-resnet50.yaml", "dlperf_v100_resnet50.csv", "");
  auto mx =
      validate("dlperf-v100-resnet50.yaml", "dlperf_v100_resnet50.csv",
               "--set 'strategies=[{name: horovod, label: mxnet-horovod}]' --set workload.batch_per_gpu=96 "
               "--set workload.compute.samples_per_s=389.71");
  ASSERT_EQ(tf.size(), 7u);  // TensorFlow also at 4 GPUs: half a node, on its first GPUs
  ASSERT_EQ(mx.size(), 3u);
  tf.insert(mx.begin(), mx.end());
  for (const char* fw : {"tensorflow-horovod", "mxnet-horovod", "pytorch-ddp"}) {
    for (const char* g : {"4", "8"}) {
      if (!tf.count(std::string(fw) + "/" + g)) continue;
      auto one = tf[std::string(fw) + "/" + g];
      EXPECT_NEAR(one.second, one.first, 0.065) << fw << " " << g;
    }
    for (const char* g : {"16", "32"}) {
      auto across = tf[std::string(fw) + "/" + g];
      EXPECT_GT(across.second, 0.97) << fw << " " << g;                 // the model: comm hidden
      EXPECT_GT(across.second - across.first, 0.05) << fw << " " << g;  // measured: 0.06-0.17 lower
    }
  }
}

TEST(BytepsBertV100, BytepsNearItsClaimHorovodAKnownMiss) {
  // BytePS 0.90 and Horovod 0.70 at 256 GPUs, against one machine. Per step each machine's one adapter
  // carries Horovod's ring, 2·(p-1)/p·n ≈ 2n each way for n = 670 MB of fp16 gradients, and BytePS's push and
  // pull of n plus, colocated, its server's n: in the model backward (~0.19 s) hides both (~0.11 s).
  auto rows = validate("byteps-bert-v100.yaml", "byteps_bert_v100.csv", "");
  ASSERT_EQ(rows.count("byteps/256"), 1u);
  ASSERT_EQ(rows.count("horovod/256"), 1u);
  const auto byteps = rows["byteps/256"], horovod = rows["horovod/256"];
  EXPECT_NEAR(byteps.second, byteps.first, 0.05);
  // A known miss (see the scenario): the model keeps Horovod at 0.87 where BytePS measured it at 0.70.
  // This fails once a mechanism brings Horovod within 0.15 of the measurement.
  EXPECT_GT(horovod.second - horovod.first, 0.15);
}
