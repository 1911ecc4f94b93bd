#pragma once
// GPU models: peak FLOP/s by precision and memory, from vendor datasheets (sources in gpu.cpp).
#include <string>
#include <vector>

#include <cstdint>

namespace ddlsim {

enum class Precision : uint8_t { Fp32, Tf32, Fp16, Bf16 };
const char* precision_name(Precision p);

struct GpuSpec {
  std::string name;
  double fp32 = 0, tf32 = 0, fp16 = 0, bf16 = 0;  // dense peak FLOP/s
  double memory = 0;                              // bytes
  double memory_bandwidth = 0;                    // bytes/s
  double peak(Precision p) const;
};

const std::vector<GpuSpec>& known_gpus();

}  // namespace ddlsim
