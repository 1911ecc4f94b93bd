// `ddlsim validate`: a training scenario against measured points (efficiency, time shares, time to train).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <set>

#include "sim/calib/readers.hpp"
#include "sim/calib/replay.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/progress.hpp"
#include "sim/config/scenario.hpp"
#include "sim/core/error.hpp"
#include "sim/io/csv.hpp"
#include "sim/train/collective_workload.hpp"
#include "sim/train/training.hpp"

namespace ddlsim::cli {

namespace {

enum class Bound { Equal, AtLeast, AtMost };

struct QuantityRule {
  const char* quantity;
  Bound bound;
  bool relative;  // error judged relative (times, speed-ups) rather than absolute (fractions)
  bool held;      // counted in the summary and in --max-error
};

constexpr QuantityRule kRules[] = {
    {"efficiency", Bound::Equal, false, true},          {"efficiency_min", Bound::AtLeast, false, true},
    {"efficiency_max", Bound::AtMost, false, true},     {"share_allreduce", Bound::Equal, false, true},
    {"share_data", Bound::Equal, false, false},         {"share_cudnn", Bound::Equal, false, false},
    {"time_to_train_s", Bound::Equal, true, true},      {"time_to_train_s_min", Bound::AtLeast, true, true},
    {"time_to_train_s_max", Bound::AtMost, true, true}, {"speedup", Bound::Equal, true, true},
};

const QuantityRule* rule_for(const std::string& q) {
  for (const QuantityRule& r : kRules)
    if (q == r.quantity) return &r;
  return nullptr;
}

// Why a measured value of quantity `q` cannot be compared (empty when it can): shares are fractions of the
// time; efficiencies, speed-ups and times are positive (a 0 would make every relative error 0).
std::string value_problem(const std::string& q, double v) {
  if (q.rfind("share_", 0) == 0) return v >= 0 && v <= 1 ? "" : "is a share of the time: expected 0 to 1";
  if (v > 0) return "";
  if (q.rfind("time_to_train_s", 0) == 0) return "must be a positive number of seconds";
  return "must be positive";
}

double simulated(const TrainingResult& r, const std::string& q) {
  if (q.rfind("efficiency", 0) == 0) return r.efficiency;
  if (q == "share_allreduce") return r.busy_allreduce;
  if (q == "share_data") return r.busy_data;
  if (q == "share_cudnn") return r.busy_compute;
  if (q.rfind("time_to_train_s", 0) == 0) return r.time_to_train_s;
  return r.speedup;
}

bool loader_matches(const std::string& measured, const std::string& kind) {
  return measured == kind || measured == "unspecified" || (measured == "dali" && kind == "dali-cpu");
}

// A measured row's framework names one of the scenario's strategy labels (then that strategy alone, so that
// `ddp` and `{name: ddp, label: ddp-1mb}` each get their own rows), or a strategy or framework name.
bool framework_matches(const std::string& f, const TrainingResult& r, const std::set<std::string>& labels) {
  if (labels.count(f)) return f == r.strategy;
  return f == "unspecified" || f == r.strategy_name || (f == "deepspeed" && r.strategy_name == "zero") ||
         (f == "pytorch-ddp" && r.strategy_name == "ddp");
}

struct Row {
  std::string series, framework, quantity, citation;
  int64_t gpus;
  double value;
  const QuantityRule* rule;
};

// A collective scenario against measured allreduce runs (nccl-tests all_reduce_perf, osu_allreduce,
// ddlsim-kernels): each strategy at each measured size and node count, busbw measured vs simulated, and per
// strategy the median and the largest relative error. Exit 1 when a median passes --max-rel-error.
int validate_collective(const Scenario& sc, const Args& a, const std::string& measured, double max_rel) {
  if (sc.collective->kind != CollectiveKind::Allreduce)
    throw InputError({sc.file, 0, 0}, "workload.collective",
                     "validate compares allreduce runs (nccl-tests all_reduce_perf, osu_allreduce, "
                     "ddlsim-kernels); this scenario runs another collective");
  std::vector<Measurement> runs;
  for (Measurement& m : read_measurements(measured, layout_options(a)))
    if (m.kind == MeasurementKind::Allreduce) runs.push_back(std::move(m));
  if (runs.empty()) throw InputError({measured, 0, 0}, "--measured", "no allreduce measurement in the file");
  for (const Measurement& m : runs)
    if (std::string why = cluster_layout_mismatch(m, sc.cluster); !why.empty())
      throw InputError({m.file, m.line, 0}, "ranks",
                       fmt::format("the scenario's cluster cannot run this run: {}", why));
  Report report;
  report.scenario_name = sc.name;
  report.scenario_file = sc.file;
  report.title = fmt::format("{}: allreduce vs {}", sc.name, measured);
  report.table_columns = {"strategy",     "gpus",           "bytes",           "measured_us",
                          "simulated_us", "measured_busbw", "simulated_busbw", "rel_error",
                          "algorithm",    "protocol"};
  EngineOptions options{!a.has("no-fast")};
  std::vector<int64_t> counts;
  for (const Measurement& m : runs) counts.push_back(m.nodes);
  const std::vector<std::string> unreachable = bandwidth_notes(sc.cluster, counts);
  bool exceeded = false;
  for (const Strategy& st : sc.strategies) {
    std::vector<double> errors;
    double worst = -1, worst_bytes = 0;
    for (const Measurement& m : runs) {
      CollectiveWorkload w = *sc.collective;
      w.bytes = m.bytes;
      CollectiveResult r = run_collective_workload(sc.cluster, w, st, m.nodes, options);
      const double factor = bus_factor(CollectiveKind::Allreduce, m.ranks);
      const double measured_busbw = m.bytes / m.time_s * factor;
      const double err = std::abs(r.busbw - measured_busbw) / measured_busbw;
      errors.push_back(err);
      if (err > worst) worst = err, worst_bytes = m.bytes;
      report.results.push_back({{"strategy", st.label},
                                {"gpus", m.ranks},
                                {"bytes", static_cast<int64_t>(m.bytes)},
                                {"measured_us", m.time_s * 1e6},
                                {"simulated_us", r.time_s * 1e6},
                                {"measured_busbw", measured_busbw / 1e9},
                                {"simulated_busbw", r.busbw / 1e9},
                                {"rel_error", err},
                                {"algorithm", r.algorithm},
                                {"protocol", r.protocol}});
    }
    const double med = median(errors);
    report.notes.push_back(fmt::format("{}: {} sizes, median |busbw error| {:.3f}, max {:.3f} (at {})",
                                       st.label, errors.size(), med, worst,
                                       format_bytes(Bytes{worst_bytes})));
    if (max_rel >= 0 && !(med <= max_rel)) exceeded = true;  // a NaN error fails the bound
  }
  report.notes.push_back("busbw in GB/s: algbw x 2(p-1)/p (nccl-tests' definition); rel_error on busbw");
  report.notes.insert(report.notes.end(), unreachable.begin(), unreachable.end());
  if (exceeded) report.notes.push_back("FAILED: a median error exceeds --max-rel-error");
  write_report(std::cout, a.format, report);
  return exceeded ? 1 : 0;
}

}  // namespace

int validate_command(const std::vector<std::string>& args) {
  CommandSpec spec(
      "validate", "SCENARIO.yaml --measured FILE.csv [options]",
      "Runs a training scenario at the GPU counts of the measured points that belong to it and prints, per\n"
      "point, measured vs simulated with the absolute and relative error, then a summary per quantity.\n"
      "The CSV needs columns model, framework, loader, gpus, quantity, value (series and citation are shown\n"
      "when present). A row belongs to the scenario when its model is the scenario's model, its loader is "
      "the\n"
      "scenario's loader kind (\"dali\" stands for dali-cpu, the CPU-based DALI of Aach et al.'s Table 2 "
      "and\n"
      "Fig. 6; \"unspecified\" matches any), and its framework is a strategy's label or name (\"deepspeed\" "
      "is\n"
      "zero, \"unspecified\" matches every strategy). Quantities: efficiency (E_G = S_G / (G / G_ref)),\n"
      "efficiency_min / efficiency_max (bounds: the error is how far the simulation is outside),\n"
      "share_allreduce (collective kernel busy share, overlapped or not), time_to_train_s (and _min / "
      "_max),\n"
      "speedup; share_data and share_cudnn are shown but not held (see the notes).\n"
      "A scenario with an allreduce workload is compared instead with a file of measured allreduce runs\n"
      "(nccl-tests all_reduce_perf, osu_allreduce, ddlsim-kernels): every strategy at every measured size\n"
      "and node count, busbw measured vs simulated per size, and per strategy the median and largest\n"
      "relative error (--max-rel-error bounds the median).");
  spec.options.add_options()                                                                            //
      ("measured", po::value<std::string>()->value_name("FILE.csv"), "the measured points (required)")  //
      ("max-error", po::value<double>()->value_name("X"),
       "exit 1 when a held efficiency or share point misses by more than X (absolute)")  //
      ("max-rel-error", po::value<double>()->value_name("X"),
       "exit 1 when a held time or speed-up point misses by more than X (relative, 0.15 = 15%)")  //
      ("no-fast", "run collectives message by message on the flow model (no max-plus fast path)");
  add_layout_options(spec.options);
  add_jobs_option(spec.options);
  std::optional<Args> parsed = parse_command(args, spec);
  if (!parsed) return 0;
  const Args& a = *parsed;
  std::string measured = a.str("measured");
  if (measured.empty()) throw InputError({}, "--measured", "validate needs --measured FILE.csv");
  auto number_option = [&](const char* key) {
    std::optional<double> x = a.get<double>(key);
    if (!x) return -1.0;
    if (!(*x >= 0))
      throw InputError({}, std::string("--") + key,
                       fmt::format("expected a non-negative number, got {}", *x));
    return *x;
  };
  double max_abs = number_option("max-error"), max_rel = number_option("max-rel-error");

  Scenario sc = load_scenario(a.positional[0], a.sets);
  require_no_jobs(sc, "validate");
  if (sc.collective) return validate_collective(sc, a, measured, max_rel);
  struct {
    std::string model, loader;
  } ws{sc.training.model.name, loader_name(sc.training.loader.kind)};
  CsvTable csv = read_csv(measured);
  size_t c_model = csv.column("model"), c_fw = csv.column("framework"), c_loader = csv.column("loader"),
         c_gpus = csv.column("gpus"), c_q = csv.column("quantity"), c_v = csv.column("value");
  auto optional_column = [&](const char* name) {
    auto it = std::find(csv.header.begin(), csv.header.end(), name);
    return it == csv.header.end() ? SIZE_MAX : static_cast<size_t>(it - csv.header.begin());
  };
  size_t c_series = optional_column("series"), c_cite = optional_column("citation");
  int gpn = sc.cluster.gpus_per_node;
  std::vector<Row> rows;
  // The runs the rows need: node counts, and counts below one node of an interior (run on that node's first
  // GPUs, as a launcher's --nproc_per_node does), all related to one reference.
  std::set<int64_t> node_counts, part_node_gpus;
  int skipped = 0;
  for (size_t i = 0; i < csv.rows.size(); ++i) {
    const auto& cells = csv.rows[i];
    if (cells[c_model] != ws.model || !loader_matches(cells[c_loader], ws.loader)) continue;
    const QuantityRule* rule = rule_for(cells[c_q]);
    if (!rule) {
      ++skipped;
      continue;
    }
    Row r{c_series == SIZE_MAX ? "" : cells[c_series],
          cells[c_fw],
          cells[c_q],
          c_cite == SIZE_MAX ? "" : cells[c_cite],
          0,
          0,
          rule};
    try {
      size_t used = 0;
      r.gpus = std::stoll(cells[c_gpus], &used);
      if (used != cells[c_gpus].size() || r.gpus <= 0) throw std::invalid_argument("gpus");
      r.value = std::stod(cells[c_v], &used);
      if (used != cells[c_v].size()) throw std::invalid_argument("value");
    } catch (const std::exception&) {
      throw InputError(
          {csv.file, csv.lines[i], 1}, "gpus/value",
          fmt::format("expected numbers, got gpus \"{}\" and value \"{}\"", cells[c_gpus], cells[c_v]));
    }
    if (!std::isfinite(r.value))
      throw InputError({csv.file, csv.lines[i], 1}, "value",
                       fmt::format("a measured value must be a finite number, got \"{}\"", cells[c_v]));
    if (std::string why = value_problem(r.quantity, r.value); !why.empty())
      throw InputError({csv.file, csv.lines[i], 1}, "value",
                       fmt::format("{} {}, got \"{}\"", r.quantity, why, cells[c_v]));
    const int64_t system_nodes = sc.cluster.max_nodes > 0 ? sc.cluster.max_nodes : 1'000'000;
    if (r.gpus > system_nodes * gpn)
      throw InputError({csv.file, csv.lines[i], 1}, "gpus",
                       fmt::format("{} GPUs is more than the scenario's system has ({} nodes of {})", r.gpus,
                                   system_nodes, gpn));
    if (r.gpus % gpn == 0)
      node_counts.insert(r.gpus / gpn);
    else if (sc.cluster.node && r.gpus < gpn)
      part_node_gpus.insert(r.gpus);
    else {
      ++skipped;
      continue;
    }
    rows.push_back(std::move(r));
  }
  if (rows.empty()) {
    std::set<std::string> models, loaders;
    for (const auto& cells : csv.rows) models.insert(cells[c_model]), loaders.insert(cells[c_loader]);
    throw InputError(
        {csv.file, 1, 1}, "model/loader",
        fmt::format(
            "no measured rows for the scenario's model {} with loader {} and a quantity "
            "ddlsim simulates at a whole number of nodes or on part of one (the file's models: {}; loaders: "
            "{}; {} rows)",
            ws.model, ws.loader, fmt::join(models, ", "), fmt::join(loaders, ", "), csv.rows.size()));
  }
  TrainingOptions topts;
  topts.engine.fast_collectives = !a.has("no-fast");
  topts.jobs = jobs_option(a);
  std::set<std::string> labels;
  for (const Strategy& st : sc.strategies) labels.insert(st.label);
  topts.part_node_gpus.assign(part_node_gpus.begin(), part_node_gpus.end());
  std::vector<int64_t> counts(node_counts.begin(), node_counts.end());
  const std::vector<std::string> unreachable =
      bandwidth_notes(sc.cluster, counts.empty() ? std::vector<int64_t>{1} : counts);
  std::vector<TrainingResult> results;
  {
    ProgressBar bar(sc.name);
    topts.progress = bar.callback();
    results = run_training(sc, counts, topts);
  }

  Report report;
  report.scenario_name = sc.name;
  report.scenario_file = sc.file;
  report.title = fmt::format("{}: {} with {} loader vs {}", sc.name, ws.model, ws.loader, measured);
  report.table_columns = {"series",   "strategy",  "gpus",      "quantity",  "bound",
                          "measured", "simulated", "abs_error", "rel_error", "held"};
  struct Summary {
    int n = 0;
    double sum = 0, worst = -1;
    std::string where;
    bool relative = false;
  };
  std::map<std::string, Summary> summary;
  bool exceeded = false;
  for (const TrainingResult& res : results) {
    for (const Row& row : rows) {
      if (row.gpus != res.gpus || !framework_matches(row.framework, res, labels)) continue;
      double sim = simulated(res, row.quantity);
      double diff = sim - row.value;
      // A bound only misses on its wrong side.
      if ((row.rule->bound == Bound::AtLeast && diff > 0) || (row.rule->bound == Bound::AtMost && diff < 0))
        diff = 0;
      double abs_err = std::abs(diff), rel_err = row.value != 0 ? abs_err / std::abs(row.value) : 0;
      const char* bound = row.rule->bound == Bound::Equal     ? "="
                          : row.rule->bound == Bound::AtLeast ? ">="
                                                              : "<=";
      report.results.push_back({{"series", row.series},
                                {"strategy", res.strategy},
                                {"gpus", res.gpus},
                                {"quantity", row.quantity},
                                {"bound", std::string(bound)},
                                {"measured", row.value},
                                {"simulated", sim},
                                {"abs_error", abs_err},
                                {"rel_error", rel_err},
                                {"held", std::string(row.rule->held ? "yes" : "no")},
                                {"citation", row.citation}});
      if (!row.rule->held) continue;
      std::string group = row.quantity.rfind("efficiency", 0) == 0      ? "efficiency"
                          : row.quantity.rfind("time_to_train", 0) == 0 ? "time_to_train_s"
                                                                        : row.quantity;
      Summary& s = summary[group];
      double err = row.rule->relative ? rel_err : abs_err;
      s.relative = row.rule->relative;
      ++s.n;
      s.sum += err;
      if (err > s.worst) s.worst = err, s.where = fmt::format("{} {} GPUs", res.strategy, res.gpus);
      double limit = row.rule->relative ? max_rel : max_abs;
      if (limit >= 0 && !(err <= limit)) exceeded = true;  // a NaN error fails the bound
    }
  }
  for (const auto& [group, s] : summary)
    report.notes.push_back(fmt::format("{}: {} points, mean {} error {:.3f}, max {:.3f} ({})", group, s.n,
                                       s.relative ? "relative" : "absolute", s.sum / s.n, s.worst, s.where));
  report.notes.push_back(
      "not held: share_data (the simulator counts only GPU-side data work, DALI-GPU preprocessing; the "
      "measured "
      "DALI-CPU and native shares are copies and GPU ops it does not model) and share_cudnn (the simulator "
      "counts all "
      "compute, not only cuDNN kernels)");
  if (skipped > 0)
    report.notes.push_back(fmt::format(
        "{} matching rows skipped (quantity not simulated or GPU count not a whole node)", skipped));
  report.notes.insert(report.notes.end(), unreachable.begin(), unreachable.end());
  if (exceeded) report.notes.push_back("FAILED: an error exceeds --max-error / --max-rel-error");
  write_report(std::cout, a.format, report);
  return exceeded ? 1 : 0;
}

}  // namespace ddlsim::cli
