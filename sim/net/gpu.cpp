#include "sim/net/gpu.hpp"

#include <fmt/format.h>

namespace ddlsim {

const std::vector<GpuSpec>& known_gpus() {
  // Dense (non-sparse) peaks from the vendor datasheets:
  // K80: NVIDIA Tesla K80 datasheet, per board of two GK210 GPUs: 8.73 FP32 TFLOP/s (GPU Boost), 24 GB GDDR5,
  //      480 GB/s; one GPU of the pair (what CUDA and a training process see) has half. Kepler (sm_37) has no
  //      faster FP16, TF32 or BF16 path: the same as FP32.
  // P100 SXM2: NVIDIA Tesla P100 datasheet (10.6 FP32, 21.2 FP16 TFLOP/s, 16 GB HBM2, 732 GB/s).
  // V100 SXM2: NVIDIA V100 datasheet (15.7 FP32, 125 FP16 tensor TFLOP/s, 32 GB, 900 GB/s).
  // A100 40GB SXM: NVIDIA A100 datasheet (19.5 FP32, 156 TF32, 312 FP16/BF16 TFLOP/s, 1555 GB/s).
  // A100 80GB SXM: the same datasheet, same compute, 80 GB HBM2e at 2039 GB/s.
  // H100 SXM: NVIDIA H100 datasheet (67 FP32, 494.5 TF32, 989.5 FP16/BF16 dense TFLOP/s, 80 GB, 3.35 TB/s).
  // GH200: NVIDIA GH200 datasheet, H100 compute with 96 GB HBM3 at 4 TB/s.
  // MI250X GCD: AMD Instinct MI250X datasheet, per GCD = half the package (47.9 FP32 matrix and 383 FP16
  //             TFLOP/s -> 23.95 and 191.5; 128 GB HBM2e at 3.2 TB/s -> 64 GB, 1.6 TB/s).
  static const std::vector<GpuSpec> gpus = {
      {"k80", 4.365e12, 4.365e12, 4.365e12, 4.365e12, 12e9, 240e9},
      {"p100", 10.6e12, 10.6e12, 21.2e12, 21.2e12, 16e9, 732e9},
      {"v100", 15.7e12, 15.7e12, 125e12, 125e12, 32e9, 900e9},
      {"a100-40gb", 19.5e12, 156e12, 312e12, 312e12, 40e9, 1555e9},
      {"a100-80gb", 19.5e12, 156e12, 312e12, 312e12, 80e9, 2039e9},
      {"h100", 67e12, 494.5e12, 989.5e12, 989.5e12, 80e9, 3.35e12},
      {"gh200", 67e12, 494.5e12, 989.5e12, 989.5e12, 96e9, 4e12},
      {"mi250x-gcd", 23.95e12, 23.95e12, 191.5e12, 191.5e12, 64e9, 1.6e12},
  };
  return gpus;
}

double GpuSpec::peak(Precision p) const {
  switch (p) {
    case Precision::Fp32:
      return fp32;
    case Precision::Tf32:
      return tf32;
    case Precision::Fp16:
      return fp16;
    case Precision::Bf16:
      return bf16;
  }
  return fp32;
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::Fp32:
      return "fp32";
    case Precision::Tf32:
      return "tf32";
    case Precision::Fp16:
      return "fp16";
    case Precision::Bf16:
      return "bf16";
  }
  return "?";
}

}  // namespace ddlsim
