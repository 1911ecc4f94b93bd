#include <fmt/format.h>
#include <filesystem>

#include "sim/config/cluster.hpp"
#include "sim/config/scenario.hpp"
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

LoaderSpec parse_loader(const YamlNode& n) {
  LoaderSpec l;
  std::string kind;
  if (n.is_scalar()) {
    kind = n.as_string();
  } else {
    n.expect_keys({"kind", "threads", "per_thread", "filesystem", "filesystem_cv", "cv", "gpu_cost",
                   "prefetch", "source"});
    kind = n["kind"].as_string();
  }
  // Defaults per kind; every number can be overridden in the scenario (and should cite its source there).
  if (kind == "native") {
    l.kind = LoaderKind::Native;
    l.threads = 8, l.per_thread = 100;  // torchvision JPEG decode + augment, ~100 images/s per core
  } else if (kind == "dali-cpu") {
    l.kind = LoaderKind::DaliCpu;
    l.threads = 8, l.per_thread = 250;  // DALI CPU pipeline, faster decode
  } else if (kind == "dali-gpu") {
    l.kind = LoaderKind::DaliGpu;
    l.threads = 4, l.per_thread = 2000, l.gpu_cost = 0.1e-3;  // decode on the GPU (nvJPEG)
  } else if (kind != "synthetic") {
    (n.is_scalar() ? n : n["kind"])
        .fail(fmt::format("unknown loader \"{}\" (synthetic, native, dali-cpu, dali-gpu)", kind));
  }
  if (n.is_scalar()) return l;
  if (auto v = n.get("threads")) l.threads = v->as_double();
  if (auto v = n.get("per_thread")) l.per_thread = v->as_double();
  if (auto v = n.get("filesystem")) l.fs_bandwidth = v->as_rate().value;
  if (auto v = n.get("gpu_cost")) {
    if (l.kind != LoaderKind::DaliGpu) v->fail("gpu_cost applies to the dali-gpu loader only");
    l.gpu_cost = v->as_time().seconds();
  }
  if (auto v = n.get("prefetch")) l.prefetch = static_cast<int>(v->as_int());
  if (auto v = n.get("cv")) {
    l.cv = v->as_fraction();
    if (l.cv < 0) v->fail("cv must be >= 0");
  }
  if (auto v = n.get("filesystem_cv")) {
    l.fs_cv = v->as_fraction();
    if (l.fs_cv < 0) v->fail("filesystem_cv must be >= 0");
    if (l.fs_bandwidth <= 0) v->fail("filesystem_cv needs a filesystem bandwidth");
  }
  if (l.kind != LoaderKind::Synthetic && (l.threads <= 0 || l.per_thread <= 0))
    n.fail("threads and per_thread must be positive");
  if (l.prefetch < 1) n["prefetch"].fail("prefetch must be at least 1");
  return l;
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

Workload parse_workload(const YamlNode& w, const YamlNode& root) {
  w.expect_keys({"model", "batch_per_gpu", "precision", "dataset_samples", "epochs", "loader", "compute",
                 "jitter", "steps", "warmup_steps", "checkpoint", "gradient_bytes"});
  Workload wl;
  wl.model = load_model(w["model"]);
  wl.batch = w.get_int("batch_per_gpu", 32);
  if (wl.batch < 1) w["batch_per_gpu"].fail("batch_per_gpu must be positive");
  if (auto p = w.get("precision")) wl.precision = parse_precision(*p);
  if (wl.precision == Precision::Fp16 || wl.precision == Precision::Bf16) wl.gradient_bytes = 2;
  if (auto g = w.get("gradient_bytes")) wl.gradient_bytes = g->as_bytes().value;
  wl.dataset_samples = w.has("dataset_samples") ? static_cast<double>(w["dataset_samples"].as_int())
                                                : wl.model.dataset_samples;
  if (w.has("dataset_samples") && wl.dataset_samples < 1)
    w["dataset_samples"].fail("dataset_samples must be at least 1");
  wl.epochs = w.get_double("epochs", 1);
  if (wl.epochs <= 0) w["epochs"].fail("epochs must be positive");
  if (auto l = w.get("loader")) wl.loader = parse_loader(*l);
  if (auto c = w.get("compute")) {
    c->expect_keys({"efficiency", "samples_per_s", "backward_factor", "overlap_slowdown", "source"});
    if (auto e = c->get("efficiency")) {
      wl.efficiency = e->as_fraction();
      if (wl.efficiency <= 0 || wl.efficiency > 1) e->fail("efficiency must be in (0, 1]");
    }
    if (auto s = c->get("samples_per_s")) {
      wl.samples_per_s = s->as_double();
      wl.samples_per_s_where = s->where();
      if (wl.samples_per_s <= 0) s->fail("samples_per_s must be positive");
    }
    wl.backward_factor = c->get_double("backward_factor", 2);
    if (wl.backward_factor < 0) (*c)["backward_factor"].fail("backward_factor must be >= 0");
    if (auto o = c->get("overlap_slowdown")) {
      wl.overlap_slowdown = o->as_fraction();
      if (wl.overlap_slowdown < 0 || wl.overlap_slowdown >= 1) o->fail("overlap_slowdown must be in [0, 1)");
    }
  }
  if (auto j = w.get("jitter")) {
    j->expect_keys({"distribution", "cv"});
    std::string d = j->get_string("distribution", "lognormal");
    if (d == "lognormal")
      wl.jitter = Jitter::Lognormal;
    else if (d == "normal")
      wl.jitter = Jitter::Normal;
    else if (d == "none")
      wl.jitter = Jitter::None;
    else
      (*j)["distribution"].fail("distribution must be lognormal, normal or none");
    wl.jitter_cv = (*j)["cv"].as_fraction();
    if (wl.jitter_cv < 0) (*j)["cv"].fail("cv must be >= 0");
  }
  wl.steps = static_cast<int>(w.get_int("steps", root.get_int("steps", 4)));
  wl.warmup = static_cast<int>(w.get_int("warmup_steps", root.get_int("warmup_steps", 1)));
  for (auto [value, key] : {std::pair{wl.steps, "steps"}, std::pair{wl.warmup, "warmup_steps"}})
    if (value < 1) (w.has(key) ? w[key] : root[key]).fail(fmt::format("{} must be at least 1", key));
  if (auto c = w.get("checkpoint")) {
    c->expect_keys({"every", "bandwidth"});
    wl.checkpoint_every = static_cast<int>((*c)["every"].as_int());
    if (wl.checkpoint_every < 1) (*c)["every"].fail("every must be at least 1 (steps between checkpoints)");
    wl.checkpoint_bandwidth = (*c)["bandwidth"].as_rate().value;
  }
  return wl;
}

}  // namespace ddlsim
