#pragma once
// A model description (models/*.yaml): an architecture builder or a plain layer list, plus its dataset.
#include <string>
#include <vector>

#include "sim/io/yaml.hpp"
#include "sim/train/model_zoo.hpp"

namespace ddlsim {

struct Model {
  std::string name;
  std::vector<LayerSpec> layers;  // forward order
  double bytes_per_sample = 0;    // input size read by the loader
  double dataset_samples = 0;
};

// `node` is a model name (models/<name>.yaml), a path, or an inline map.
Model load_model(const YamlNode& node);

}  // namespace ddlsim
