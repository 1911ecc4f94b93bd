#include "sim/train/model.hpp"

#include <fmt/format.h>
#include <filesystem>

#include "sim/core/data_dir.hpp"

namespace ddlsim {

namespace {

Model parse_model(const YamlNode& m) {
  m.expect_keys({"name", "architecture", "layers", "input", "dataset", "description", "source"});
  Model model;
  model.name = m.get_string("name", "model");
  std::optional<YamlNode> arch = m.get("architecture"), layers = m.get("layers");
  if (arch && layers) layers->fail("give architecture or layers, not both");
  if (arch) {
    try {
      model.layers = build_architecture(arch->as_string());
    } catch (const std::invalid_argument& e) {
      std::string hint = did_you_mean(arch->as_string(), architecture_names());
      arch->fail(
          fmt::format("{}{}", e.what(), hint.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", hint)));
    }
  } else if (layers) {
    for (const YamlNode& l : layers->elements()) {
      l.expect_keys({"name", "params", "forward_flops"});
      LayerSpec s{l.get_string("name", ""), l["params"].as_int(), l["forward_flops"].as_flops().value};
      if (s.params < 0) l["params"].fail("params must not be negative");
      model.layers.push_back(s);
    }
    if (model.layers.empty()) layers->fail("list at least one layer");
  } else {
    m.fail("a model needs `architecture` (a builder) or `layers` (a list)");
  }
  if (auto in = m.get("input")) {
    in->expect_keys({"kind", "shape", "bytes_per_sample", "sequence_length"});
    if (auto b = in->get("bytes_per_sample")) model.bytes_per_sample = b->as_bytes().value;
  }
  if (auto ds = m.get("dataset")) {
    ds->expect_keys({"name", "samples", "source"});
    if (auto s = ds->get("samples")) model.dataset_samples = static_cast<double>(s->as_int());
  }
  return model;
}

}  // namespace

Model load_model(const YamlNode& node) {
  if (!node.is_scalar()) return parse_model(node);
  namespace fs = std::filesystem;
  std::string name = node.as_string();
  std::vector<fs::path> candidates = {
      fs::path(name), fs::path("models") / (name + ".yaml"),
      fs::path(node.file()).parent_path() / ".." / "models" / (name + ".yaml")};
  for (const fs::path& root : data_roots()) candidates.push_back(root / "models" / (name + ".yaml"));
  for (const fs::path& p : candidates)
    if (fs::is_regular_file(p)) return parse_model(YamlNode::load_file(p.lexically_normal().string()));
  node.fail(fmt::format("no model \"{}\" (looked for models/{}.yaml)", name, name));
}

}  // namespace ddlsim
