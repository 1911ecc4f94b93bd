#pragma once
// A model: its layer table (from an architecture builder or a plain list) and its dataset.
#include <string>
#include <vector>

#include "sim/train/model_zoo.hpp"

namespace ddlsim {

// A published single-GPU training throughput of a model (the model file's `throughput:` list).
struct PublishedRate {
  std::string gpu;        // a GPU name of sim/net/gpu.cpp
  std::string precision;  // fp32, tf32, fp16 or bf16 (mixed precision: fp16 and bf16 serve each other)
  double samples_per_s = 0;
  int64_t batch = 0;  // the batch per GPU it was measured at
  std::string source;
};

struct Model {
  std::string name;
  std::vector<LayerSpec> layers;  // forward order
  double bytes_per_sample = 0;    // input size read by the loader
  double dataset_samples = 0;
  std::vector<PublishedRate> published;
};

}  // namespace ddlsim
