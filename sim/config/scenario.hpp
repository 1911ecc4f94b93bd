#pragma once
// The typed configuration layer's entry point: a scenario file plus `--set` overrides, parsed once (with
// source locations) into a Scenario of plain structs. Every range check on scenario input lives here.
#include <string>
#include <vector>

#include "sim/io/yaml.hpp"
#include "sim/train/scenario.hpp"

namespace ddlsim {

// Loads and validates; `overrides` are dotted.key=value assignments applied before validation.
Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides);
// The same from an already loaded document (`root` names its file).
Scenario parse_scenario(const YamlNode& root);

// Commands other than `run` take a scenario without jobs: throws InputError at its jobs key otherwise.
void require_no_jobs(const Scenario& scenario, const std::string& command);

// A training workload map (model, batch, loader, compute, jitter, steps, ...); `root` is the scenario root
// (steps and warmup_steps may sit there). Without a compute rate (compute.efficiency or samples_per_s), the
// model file's published throughput on the cluster's GPU at the workload's precision sets samples_per_s
// (an fp16 entry, mixed precision, also serves bf16); else the efficiency default applies.
Workload parse_workload(const YamlNode& workload, const YamlNode& root, const ClusterConfig& cluster);
// Refuses a training workload whose per-worker loads or per-GPU compute alone, over warmup_steps + steps,
// pass the simulated-time limit (kMaxSimulatedSeconds), naming the key (loader.per_thread, batch_per_gpu...).
void check_training_time(const Workload& workload, const ClusterConfig& cluster, const YamlNode& node);
// `node` is a model name (models/<name>.yaml), a path, or an inline map.
Model load_model(const YamlNode& node);

}  // namespace ddlsim
