#include <fmt/format.h>
#include <algorithm>
#include <filesystem>

#include "sim/config/cluster.hpp"
#include "sim/config/scenario.hpp"
#include "sim/core/data_dir.hpp"
#include "sim/core/options.hpp"

namespace ddlsim {

namespace {

// Limits of a training workload (scenarios/README.md lists them): each keeps the numbers derived from it
// (bytes, FLOPs, per-step times, task counts) finite and inside int64 picoseconds of simulated time.
constexpr int64_t kMaxParams = 10'000'000'000'000;  // a model's total, 1e13
constexpr int64_t kMaxSamples = int64_t{1} << 50;   // dataset samples
constexpr int64_t kMaxBatch = 65536;                // batch_per_gpu
constexpr int64_t kMaxSteps = 10000;                // steps and warmup_steps
constexpr int64_t kMaxPrefetch = 1024;              // loader.prefetch
constexpr int64_t kMaxEvery = 1'000'000'000;        // checkpoint.every
constexpr double kMaxGradientBytes = 64;            // gradient_bytes per value
constexpr double kMaxCv = 10;                       // jitter.cv, loader.cv, loader.filesystem_cv
constexpr double kMaxEpochs = 1e6;                  // epochs (time_to_train_s stays finite)

Model parse_model(const YamlNode& m) {
  m.expect_keys(
      {"name", "architecture", "layers", "input", "dataset", "description", "source", "throughput"});
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
    int64_t params = 0;
    for (const YamlNode& l : layers->elements()) {
      l.expect_keys({"name", "params", "forward_flops"});
      LayerSpec s{l.get_string("name", ""), l["params"].as_int(), l["forward_flops"].as_flops().value};
      if (s.params < 0) l["params"].fail("params must not be negative");
      // Checked before adding, so that the model's total (an int64) cannot overflow.
      if (s.params > kMaxParams - params)
        l["params"].fail(fmt::format("the model's parameters would pass the limit of {:.0e} (10 trillion)",
                                     static_cast<double>(kMaxParams)));
      params += s.params;
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
    if (auto s = ds->get("samples")) {
      int64_t v = s->as_int();
      if (v < 1 || v > kMaxSamples) s->fail(fmt::format("samples must be between 1 and {}", kMaxSamples));
      model.dataset_samples = static_cast<double>(v);
    }
  }
  if (auto t = m.get("throughput")) {
    for (const YamlNode& e : t->elements()) {
      e.expect_keys({"gpu", "precision", "samples_per_s", "batch_per_gpu", "source"});
      PublishedRate r;
      r.gpu = parse_gpu(e["gpu"]).name;
      std::string p = e["precision"].as_string();
      if (p != "fp32" && p != "tf32" && p != "fp16" && p != "bf16")
        e["precision"].fail("precision must be fp32, tf32, fp16 or bf16 (the last two serve each other)");
      r.precision = p;
      r.samples_per_s = e["samples_per_s"].as_double();
      if (!(r.samples_per_s > 0) || !std::isfinite(r.samples_per_s))
        e["samples_per_s"].fail("samples_per_s must be positive");
      r.batch = e["batch_per_gpu"].as_int();
      if (r.batch < 1 || r.batch > kMaxBatch)
        e["batch_per_gpu"].fail(fmt::format("batch_per_gpu must be between 1 and {}", kMaxBatch));
      r.source = e["source"].as_string();
      if (r.source.empty()) e["source"].fail("give the source of the number");
      model.published.push_back(r);
    }
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
    l.gpu_cost = parse_latency(*v).seconds();
  }
  if (auto v = n.get("prefetch")) {
    int64_t p = v->as_int();
    if (p < 1 || p > kMaxPrefetch) v->fail(fmt::format("prefetch must be between 1 and {}", kMaxPrefetch));
    l.prefetch = static_cast<int>(p);
  }
  if (auto v = n.get("cv")) {
    l.cv = v->as_fraction();
    if (l.cv < 0 || l.cv > kMaxCv) v->fail("cv must be between 0 and 10");
  }
  if (auto v = n.get("filesystem_cv")) {
    l.fs_cv = v->as_fraction();
    if (l.fs_cv < 0 || l.fs_cv > kMaxCv) v->fail("filesystem_cv must be between 0 and 10");
    if (l.fs_bandwidth <= 0) v->fail("filesystem_cv needs a filesystem bandwidth");
  }
  if (l.kind != LoaderKind::Synthetic && (l.threads <= 0 || l.per_thread <= 0))
    n.fail("threads and per_thread must be positive");
  return l;
}

// "about 53 days" for messages: the longest simulated span.
std::string horizon_text() {
  return fmt::format("the limit of simulated time ({:.3g} s, about 53 days: 2^62 picoseconds)",
                     kMaxSimulatedSeconds);
}

}  // namespace

void check_training_time(const Workload& wl, const ClusterConfig& c, const YamlNode& w) {
  // A worker's loads run one after the other on its loader, and its forward and backward passes on its GPU:
  // (warmup_steps + steps) of either alone must fit in simulated time, whatever the network does.
  const double n = wl.warmup + wl.steps;
  const LoaderSpec& ls = wl.loader;
  const double batch = static_cast<double>(wl.batch);
  std::optional<YamlNode> loader = w.get("loader");
  if (ls.kind != LoaderKind::Synthetic) {
    double decode = batch / (ls.threads * ls.per_thread);
    if (!(decode * n < kMaxSimulatedSeconds)) {
      YamlNode at = loader->is_map() && loader->has("per_thread") ? (*loader)["per_thread"]
                    : loader->is_map() && loader->has("threads")  ? (*loader)["threads"]
                                                                  : *loader;
      at.fail(
          fmt::format("a batch takes batch_per_gpu / (threads x per_thread) = {} / ({:g} x {:g}) = {:.4g} s "
                      "to decode; {:g} batches (warmup_steps + steps) pass {}",
                      wl.batch, ls.threads, ls.per_thread, decode, n, horizon_text()));
    }
    int64_t nodes = c.node_counts.empty() ? 1 : *std::max_element(c.node_counts.begin(), c.node_counts.end());
    double gpus = static_cast<double>(nodes) * c.gpus_per_node;
    double read = ls.fs_bandwidth > 0 ? batch * wl.model.bytes_per_sample * gpus / ls.fs_bandwidth : 0;
    if (!(read * n < kMaxSimulatedSeconds))
      (*loader)["filesystem"].fail(fmt::format(
          "{:g} GPUs read a batch each at filesystem bandwidth in {:.4g} s; {:g} batches (warmup_steps "
          "+ steps) pass {}",
          gpus, read, n, horizon_text()));
  }
  double flops = total_forward_flops(wl.model.layers);
  double compute = wl.samples_per_s > 0 ? batch / wl.samples_per_s
                                        : flops * batch * (1 + wl.backward_factor) /
                                              (c.gpu.peak(wl.precision) * wl.efficiency);
  double preprocessing = batch * ls.gpu_cost;
  if (!(preprocessing * n < kMaxSimulatedSeconds))
    (*loader)["gpu_cost"].fail(
        fmt::format("a batch's GPU preprocessing takes batch_per_gpu x gpu_cost = {:.4g} s; "
                    "{:g} steps (warmup_steps + steps) pass {}",
                    preprocessing, n, horizon_text()));
  if (!((compute + preprocessing) * n < kMaxSimulatedSeconds)) {
    if (wl.samples_per_s > 0)
      (wl.rate_source.empty() ? w["compute"]["samples_per_s"] : w["model"])
          .fail(fmt::format(
              "a step's compute takes batch_per_gpu / samples_per_s = {:.4g} s; {:g} steps (warmup_steps + "
              "steps) pass {}",
              compute, n, horizon_text()));
    (w.has("batch_per_gpu") ? w["batch_per_gpu"] : w["model"])
        .fail(fmt::format(
            "a step's compute takes batch_per_gpu x forward_flops x (1 + backward_factor) / (peak x "
            "efficiency) = {} x {:.4g} FLOP x {:g} / ({:.4g} FLOP/s x {:g}) = {:.4g} s; {:g} steps "
            "(warmup_steps + steps) pass {}",
            wl.batch, flops, 1 + wl.backward_factor, c.gpu.peak(wl.precision), wl.efficiency, compute, n,
            horizon_text()));
  }
}

Model load_model(const YamlNode& node) {
  if (!node.is_scalar()) return parse_model(node);
  namespace fs = std::filesystem;
  std::string name = node.as_string();
  std::vector<fs::path> candidates = {
      fs::path(name), fs::path("models") / (name + ".yaml"),
      fs::path(node.file()).parent_path() / ".." / "models" / (name + ".yaml")};
  for (const fs::path& root : data_roots()) candidates.push_back(root / "models" / (name + ".yaml"));
  std::string tried;
  if (std::string path = first_file(candidates, tried); !path.empty())
    return parse_model(YamlNode::load_file(path));
  node.fail(fmt::format("no model \"{}\" (looked for {})", name, tried));
}

Workload parse_workload(const YamlNode& w, const YamlNode& root, const ClusterConfig& cluster) {
  w.expect_keys({"model", "batch_per_gpu", "precision", "dataset_samples", "epochs", "loader", "compute",
                 "jitter", "steps", "warmup_steps", "checkpoint", "gradient_bytes"});
  Workload wl;
  wl.model = load_model(w["model"]);
  wl.batch = w.get_int("batch_per_gpu", 32);
  if (wl.batch < 1 || wl.batch > kMaxBatch)
    w["batch_per_gpu"].fail(fmt::format("batch_per_gpu must be between 1 and {}", kMaxBatch));
  if (auto p = w.get("precision")) wl.precision = parse_precision(*p);
  if (wl.precision == Precision::Fp16 || wl.precision == Precision::Bf16) wl.gradient_bytes = 2;
  if (auto g = w.get("gradient_bytes")) {
    wl.gradient_bytes = g->as_bytes().value;
    if (wl.gradient_bytes <= 0 || wl.gradient_bytes > kMaxGradientBytes)
      g->fail("gradient_bytes must be more than 0 B and at most 64 B (per gradient value)");
  }
  wl.dataset_samples = w.has("dataset_samples") ? static_cast<double>(w["dataset_samples"].as_int())
                                                : wl.model.dataset_samples;
  if (w.has("dataset_samples") && (wl.dataset_samples < 1 || wl.dataset_samples > kMaxSamples))
    w["dataset_samples"].fail(wl.dataset_samples < 1
                                  ? "dataset_samples must be at least 1"
                                  : fmt::format("dataset_samples must be at most {}", kMaxSamples));
  wl.epochs = w.get_double("epochs", 1);
  if (wl.epochs <= 0 || wl.epochs > kMaxEpochs)
    w["epochs"].fail(wl.epochs <= 0 ? "epochs must be positive" : "epochs must be at most 1e6");
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
    static const std::pair<const char*, Jitter> jitters[] = {
        {"lognormal", Jitter::Lognormal}, {"normal", Jitter::Normal}, {"none", Jitter::None}};
    const std::optional<Jitter> d = named(j->get_string("distribution", "lognormal"), jitters);
    if (!d) (*j)["distribution"].fail("distribution must be lognormal, normal or none");
    wl.jitter = *d;
    wl.jitter_cv = (*j)["cv"].as_fraction();
    if (wl.jitter_cv < 0 || wl.jitter_cv > kMaxCv) (*j)["cv"].fail("cv must be between 0 and 10");
  }
  int64_t steps = w.get_int("steps", root.get_int("steps", 4));
  int64_t warmup = w.get_int("warmup_steps", root.get_int("warmup_steps", 1));
  for (auto [value, key] : {std::pair{steps, "steps"}, std::pair{warmup, "warmup_steps"}})
    if (value < 1 || value > kMaxSteps)
      (w.has(key) ? w[key] : root[key])
          .fail(value < 1
                    ? fmt::format("{} must be at least 1", key)
                    : fmt::format("{} must be at most {} (the simulated steps' tasks are held in memory)",
                                  key, kMaxSteps));
  wl.steps = static_cast<int>(steps);
  wl.warmup = static_cast<int>(warmup);
  if (auto c = w.get("checkpoint")) {
    c->expect_keys({"every", "bandwidth"});
    int64_t every = (*c)["every"].as_int();
    if (every < 1 || every > kMaxEvery)
      (*c)["every"].fail(
          fmt::format("every must be between 1 and {} (steps between checkpoints)", kMaxEvery));
    wl.checkpoint_every = static_cast<int>(every);
    wl.checkpoint_bandwidth = (*c)["bandwidth"].as_rate().value;
  }
  std::optional<YamlNode> compute = w.get("compute");
  if (!compute || (!compute->has("efficiency") && !compute->has("samples_per_s"))) {
    const std::string p = precision_name(wl.precision);
    auto mixed = [](const std::string& q) { return q == "fp16" || q == "bf16"; };
    for (const PublishedRate& r : wl.model.published)
      if (r.gpu == cluster.gpu.name && (r.precision == p || (mixed(r.precision) && mixed(p)))) {
        wl.samples_per_s = r.samples_per_s;
        wl.samples_per_s_where = w.has("model") ? w["model"].where() : w.where();
        wl.rate_source = fmt::format("{} on {} ({}, batch {}): {:g} samples/s per GPU, {}", wl.model.name,
                                     r.gpu, r.precision, r.batch, r.samples_per_s, r.source);
        break;
      }
  }
  return wl;
}

}  // namespace ddlsim
