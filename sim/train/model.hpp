#pragma once
// A model: its layer table (from an architecture builder or a plain list) and its dataset.
#include <string>
#include <vector>

#include "sim/train/model_zoo.hpp"

namespace ddlsim {

struct Model {
  std::string name;
  std::vector<LayerSpec> layers;  // forward order
  double bytes_per_sample = 0;    // input size read by the loader
  double dataset_samples = 0;
};

}  // namespace ddlsim
