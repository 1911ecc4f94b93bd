#pragma once
// What a training run computes and loads: the model on a GPU at a batch and precision, the data loader, the
// compute spread across workers and steps, and how many steps are simulated.
#include <cstdint>
#include <string>

#include "sim/core/error.hpp"
#include "sim/net/gpu.hpp"
#include "sim/train/model.hpp"

namespace ddlsim {

enum class LoaderKind : uint8_t { Synthetic, Native, DaliCpu, DaliGpu };
const char* loader_name(LoaderKind k);  // synthetic, native, dali-cpu, dali-gpu

struct LoaderSpec {
  LoaderKind kind = LoaderKind::Synthetic;
  double threads = 0, per_thread = 0;  // samples/s per CPU thread
  double fs_bandwidth = 0;             // bytes/s shared by all workers (0: unbounded)
  double gpu_cost = 0;                 // GPU seconds per sample (DALI on the GPU)
  int prefetch = 2;
  // Per-(worker, step) spread of the file-system read alone, lognormal with mean 1 and this cv, independent
  // of the compute jitter: a batch's share of a saturated shared file system is uneven (clients' requests
  // queue at the storage servers). A batch takes max(decode, read · Y) · J.
  double fs_cv = 0;
  // J: the loader's own per-(worker, step) spread, lognormal with mean 1 and this cv, drawn apart from the
  // compute jitter (host threads do not slow down with their GPU); < 0 (not given): J is the workload jitter
  // factor of that worker and step, the one its compute gets.
  double cv = -1;
};

enum class Jitter : uint8_t { None, Normal, Lognormal };

struct Workload {
  Model model;
  int64_t batch = 32;
  Precision precision = Precision::Fp32;
  // Achieved fraction of peak FLOP/s, when neither the scenario nor the model file's published throughputs
  // give a rate for this GPU and precision. 0.4 is a guess (no source): a shipped model's published rates
  // reach 7-60 % of peak (see models/*.yaml).
  double efficiency = 0.4;
  double samples_per_s = 0;  // measured single-GPU throughput; overrides efficiency
  std::string rate_source;   // where samples_per_s came from when a model file's published rate set it
  Where samples_per_s_where;
  double backward_factor = 2;
  double overlap_slowdown = 0;  // compute slowdown while collective kernels are resident on the GPU
  double gradient_bytes = 4;    // bytes per gradient value on the wire
  double epochs = 1;
  double dataset_samples = 0;
  LoaderSpec loader;
  Jitter jitter = Jitter::None;
  double jitter_cv = 0;
  int steps = 4, warmup = 1;
  int checkpoint_every = 0;
  double checkpoint_bandwidth = 0;
};

}  // namespace ddlsim
