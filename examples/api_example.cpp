// The C++ API without YAML: a scenario built in code (16 one-GPU hosts on one 100 Gb/s switch, ResNet-50,
// batch 64), PyTorch DDP against 4 dedicated parameter servers at 4, 8 and 16 GPUs, printed as the CLI's
// table. Build target `ddlsim_api_example`; ctest runs it.
#include <iostream>

#include "sim/io/output.hpp"
#include "sim/train/training.hpp"

int main() {
  using namespace ddlsim;
  Scenario sc;
  sc.name = "api-example";
  sc.cluster.name = "star-100g";
  sc.cluster.gpu = known_gpus().front();
  for (const GpuSpec& g : known_gpus())
    if (g.name == "a100-40gb") sc.cluster.gpu = g;
  sc.cluster.network.kind = FabricKind::Star;
  sc.cluster.network.link = LinkSpec{Rate{12.5e9}, Time::from_seconds(1e-6)};  // 100 Gb/s, 1 us

  sc.training.model = {"resnet50", build_architecture("resnet50"), 110e3, 1281167, {}};
  sc.training.dataset_samples = sc.training.model.dataset_samples;  // one epoch of ImageNet-1k
  sc.training.batch = 64;
  sc.training.precision = Precision::Fp16;
  sc.training.gradient_bytes = 2;

  Strategy ddp;
  ddp.name = ddp.label = "ddp";
  AllreduceOptions buckets;
  buckets.bucket = 25 * 1048576.0;  // PyTorch DDP's 25 MiB buckets, a 1 MiB first one
  buckets.first_bucket = 1048576.0;
  ddp.options = buckets;
  Strategy ps;
  ps.name = "ps";
  ps.label = "ps k=4";
  PsOptions servers;
  servers.placement.servers = 4;  // dedicated hosts, on the same switch
  ps.options = servers;
  sc.strategies = {ddp, ps};

  Report report = run_training_report(sc, {4, 8, 16}, TrainingOptions{}, false);
  write_report(std::cout, Format::Table, report);
  return report.results.size() == 6 ? 0 : 1;
}
