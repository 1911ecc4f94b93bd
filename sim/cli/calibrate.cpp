// ddlsim calibrate: fit alpha/beta/gamma to measurements, print the parameters and the residual of every
// measurement, write the calibration YAML, and with --check replay every measured case in the simulator.
#include <fmt/format.h>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "sim/calib/calibration.hpp"
#include "sim/calib/compute_fit.hpp"
#include "sim/calib/fit.hpp"
#include "sim/calib/readers.hpp"
#include "sim/calib/replay.hpp"
#include "sim/cli/commands.hpp"
#include "sim/config/cluster.hpp"
#include "sim/config/scenario.hpp"
#include "sim/core/error.hpp"
#include "sim/core/output_file.hpp"
#include "sim/core/units.hpp"

namespace ddlsim::cli {

namespace {

constexpr double kExplained =
    0.25;  // median |relative error| up to which a group of cases counts as explained

std::string short_source(const Measurement& m) {
  return fmt::format("{}:{}", std::filesystem::path(m.file).filename().string(), m.line);
}

std::string range_text(const FittedClass& cls, size_t i) {
  std::vector<double> bounds;
  for (const FittedRange& r : cls.ranges) bounds.push_back(r.max_bytes);
  return format_size_range(bounds, i);
}

double parse_size_option(const std::string& key, const std::string& text) {
  try {
    return parse_bytes(text).value;
  } catch (const ValueError& e) {
    throw InputError({"--" + key, 0, 0}, "", e.what());
  }
}

std::string today_utc() {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

struct Case {
  const Measurement* m;
  const FitPoint* fit;
  ReplayResult replay;
  bool oversubscribed = false;
  double error() const { return (replay.predicted_s - m->time_s) / m->time_s; }
};

std::string case_name(const Case& c) {
  return fmt::format("{} p={} {}", c.m->algorithm, c.m->ranks, format_bytes(Bytes{c.m->bytes}));
}

// Known reasons why a kind of case may not be explained by the replay: short tags for the table, explained
// once in the notes.
const std::vector<std::pair<std::string, std::string>> kCaveats = {
    {"oversubscribed",
     "more ranks per node than cores: ranks time-share the CPU, which the model does not know"},
    {"sequential-rounds",
     "the direct kernel exchanges in p-1 sequential rounds (p-1 overheads alpha); the simulator's direct "
     "plan sends all messages at once, sharing the rank's link"},
    {"library-algorithm",
     "the MPI library picks its own allreduce algorithm per size; simulated as ring where the file does not "
     "name the library (OSU output; kernels run with other than Open MPI or MPICH)"},
};

std::vector<std::string> caveats(const Measurement& m, bool oversubscribed) {
  std::vector<std::string> out;
  if (oversubscribed) out.push_back("oversubscribed");
  if (m.algorithm == "direct" && m.ranks > 2) out.push_back("sequential-rounds");
  const bool named = m.library.starts_with("Open MPI") || m.library.starts_with("MPICH");
  if ((m.algorithm == "mpi_allreduce" && !named) || m.algorithm == "osu_allreduce")
    out.push_back("library-algorithm");
  return out;
}

struct Stats {
  size_t n = 0;
  double median = 0, worst = 0;
  std::string worst_case;
};

Stats stats_of(const std::vector<const Case*>& cases) {
  Stats s;
  std::vector<double> e;
  for (const Case* c : cases) {
    double a = std::fabs(c->error());
    e.push_back(a);
    if (a >= s.worst) {
      s.worst = a;
      s.worst_case = case_name(*c);
    }
  }
  s.n = e.size();
  s.median = median(e);
  return s;
}

std::string stats_text(const Stats& s) {
  if (s.n == 0) return "no cases";
  return fmt::format("{} cases, median |error| {:.3f}, worst {:.3f} ({})", s.n, s.median, s.worst,
                     s.worst_case);
}

Report parameter_report(const FitResult& fit, const std::string& title) {
  Report r;
  r.title = title;
  r.table_columns = {"link", "range", "alpha_us", "bandwidth_GBps", "reduce_GBps", "gap_us", "points"};
  for (int link : {kIntraNode, kInterNode}) {
    const FittedClass& cls = fit.link[link];
    for (size_t i = 0; i < cls.ranges.size(); ++i) {
      const FittedRange& fr = cls.ranges[i];
      Record rec{{"section", std::string("parameter")},
                 {"link", std::string(link_class_name(link))},
                 {"range", range_text(cls, i)}};
      if (std::isfinite(fr.max_bytes)) rec.push_back({"max_bytes", static_cast<int64_t>(fr.max_bytes)});
      rec.push_back({"alpha_us", fr.alpha * 1e6});
      rec.push_back({"bandwidth_GBps", 1 / fr.beta / 1e9});
      if (fr.gamma > 0 && fit.gamma_measured) rec.push_back({"reduce_GBps", 1 / fr.gamma / 1e9});
      if (fr.gap_measured) rec.push_back({"gap_us", fr.gap * 1e6});
      rec.push_back({"points", static_cast<int64_t>(fr.points)});
      r.results.push_back(rec);
    }
  }
  r.notes = fit.notes;
  r.notes.push_back(fmt::format("fit: {} measurements, median |relative error| {:.4f}, worst {:.4f}",
                                fit.fit_points, fit.residual_median, fit.residual_max));
  return r;
}

Report compute_report(const ComputeFit& fit, const std::string& scenario) {
  Report r;
  r.scenario_name = "calibrate";
  r.scenario_file = scenario;
  r.title = fmt::format("Fitted compute efficiency of {} (strategy {}): {:.4f}", scenario, fit.strategy,
                        fit.efficiency);
  r.table_columns = {"source", "gpus", "measured_s", "simulated_s", "rel_error"};
  for (const StepFitPoint& p : fit.points)
    r.results.push_back({{"section", std::string("compute")},
                         {"source", short_source(*p.measurement)},
                         {"gpus", p.gpus},
                         {"measured_s", p.measured_s},
                         {"simulated_s", p.simulated_s},
                         {"rel_error", p.rel_error}});
  r.notes.push_back(fmt::format("compute efficiency {:.4f}: use --set workload.compute.efficiency={:.4f}",
                                fit.efficiency, fit.efficiency));
  r.notes.push_back(fmt::format("fit: {} step times, median |relative error| {:.4f}, worst {:.4f}",
                                fit.points.size(), fit.residual_median, fit.residual_max));
  if (fit.insensitive)
    r.notes.push_back(
        "not determined: 10% more efficiency moves no simulated step time by 1% (the loader or the "
        "network bounds every measured count); measure where compute is the bottleneck");
  return r;
}

void write_calibration(const std::string& path, const std::string& text) {
  write_output_file(path, text);
}

}  // namespace

int calibrate_command(const std::vector<std::string>& args) {
  CommandSpec spec(
      "calibrate", "FILES... [options]",
      "Fits the alpha-beta-gamma network model (per-message overhead, per-byte cost by message-size range,\n"
      "per-byte reduction cost; inside a node and across nodes) to measurements, and prints the parameters "
      "and\n"
      "the relative error of every measurement. FILES are read by content: ddlsim-kernels JSON, nccl-tests\n"
      "all_reduce_perf output, OSU osu_latency / osu_bw / osu_allreduce output, or a CSV of step times\n"
      "(gpus,step_time_s or gpus,throughput_samples_per_s[,batch_per_gpu]), which --scenario fits the "
      "compute\n"
      "efficiency to.");
  spec.positional = "measurement file";
  spec.max_positional = SIZE_MAX;
  spec.options.add_options()  //
      ("out", po::value<std::string>()->value_name("FILE.yaml"),
       "write the fitted comm: model (and compute: efficiency) as YAML (sim/calib/README.md)")  //
      ("breakpoint", po::value<std::string>()->value_name("SIZES|none"),
       "the largest message of each message-size range but the last, one or two (e.g. 64KiB or 2KiB,4MiB); "
       "default: one to three ranges chosen from the measured sizes by the lowest Bayesian information "
       "criterion; none: one range per link class")  //
      ("check",
       "fit on a subset (--fit-max-bytes, default 4MiB; --fit-max-ranks, default 2), then replay every "
       "measured case in the simulator and report measured vs simulated, per case and in summary, held-out "
       "cases apart")  //
      ("fit-max-bytes", po::value<std::string>()->value_name("SIZE"),
       "fit only measurements with a per-rank buffer up to SIZE (default: all, or 4MiB with --check)")  //
      ("fit-max-ranks", po::value<int64_t>()->value_name("N"),
       "fit only measurements with up to N ranks (default: all, or 2 with --check)")  //
      ("fit-algorithms", po::value<std::string>()->value_name("LIST"),
       "fit only these algorithms (comma list, e.g. pingpong,ring); the others are held out")  //
      ("hold-out-every", po::value<int64_t>()->value_name("K"),
       "hold out every K-th message size of each run (K >= 2; with --check: how well the fit predicts the "
       "sizes between those it saw)")  //
      ("cores", po::value<int64_t>()->value_name("N"),
       "cores per node where the files were measured, to flag oversubscribed runs (default: this machine's, "
       "which assumes the files were measured here)")                                               //
      ("same-node", "OSU osu_latency / osu_bw ran both ranks on one node (default: on two nodes)")  //
      ("scenario", po::value<std::string>()->value_name("S.yaml"),
       "fit workload.compute.efficiency of this training scenario to the step-time CSV rows: the scenario "
       "runs at every measured GPU count (a part of a node as its reference) and the efficiency minimising "
       "the squared relative errors is printed (and written by --out); --set overrides its keys")  //
      ("strategy", po::value<std::string>()->value_name("LABEL"),
       "the scenario's strategy that ran (default: its first)")  //
      ("topology", po::value<std::string>()->value_name("NAME|FILE"),
       "the cluster the files were measured on: the fit goes through the simulator there (each fit row's "
       "closed form, with the channels the simulator's ring uses across nodes, plus what the cluster adds, "
       "its routes' wire latency and pipeline fill, equals its replay on the cluster), --check replays "
       "on it, and the file is for that topology; where a link class's data cannot separate beta from "
       "alpha (one message size, or times that do not grow with it), beta is one flow's rate on its links "
       "and alpha alone is fitted");
  add_layout_options(spec.options);
  std::optional<Args> parsed = parse_command(args, spec);
  if (!parsed) return 0;
  const Args& a = *parsed;
  if (a.has("out")) check_output_path(a.str("out"));  // before the fit, not after it
  const std::string scenario = a.str("scenario");
  if (!a.sets.empty() && scenario.empty())
    throw InputError({"--set", 0, 0}, "", "--set applies to the --scenario of a compute-efficiency fit");
  bool check = a.has("check");

  FitOptions fo;
  if (auto b = a.str("breakpoint"); !b.empty()) {
    if (b == "none") {
      fo.single_range = true;
    } else {
      std::stringstream ss(b);
      for (std::string item; std::getline(ss, item, ',');) {
        fo.breakpoints.push_back(parse_size_option("breakpoint", item));
        if (fo.breakpoints.back() < 1)
          throw InputError({"--breakpoint", 0, 0}, "",
                           fmt::format("a breakpoint must be at least 1 B, got \"{}\" (no message is that "
                                       "small: the range below it would be empty)",
                                       item));
      }
      if (!std::is_sorted(fo.breakpoints.begin(), fo.breakpoints.end()) ||
          std::adjacent_find(fo.breakpoints.begin(), fo.breakpoints.end()) != fo.breakpoints.end() ||
          fo.breakpoints.size() + 1 > kMaxRanges)
        throw InputError({"--breakpoint", 0, 0}, "",
                         fmt::format("--breakpoint takes up to {} increasing sizes (e.g. 2KiB,4MiB) or none",
                                     kMaxRanges - 1));
    }
  }
  std::string max_bytes = a.str("fit-max-bytes", check ? "4MiB" : "");
  if (!max_bytes.empty()) fo.max_bytes = parse_size_option("fit-max-bytes", max_bytes);
  if (auto n = count_option(a, "fit-max-ranks", 1))
    fo.max_ranks = *n;
  else if (check)
    fo.max_ranks = 2;
  if (auto k = count_option(a, "hold-out-every", 2))
    fo.hold_out_every = static_cast<int>(std::min<int64_t>(*k, 1000));
  if (auto list = a.str("fit-algorithms"); !list.empty()) {
    std::stringstream ss(list);
    for (std::string item; std::getline(ss, item, ',');) fo.algorithms.push_back(item);
  }
  int64_t cores = static_cast<int64_t>(std::thread::hardware_concurrency());
  if (auto c = count_option(a, "cores", 1)) cores = *c;

  ReaderOptions ro = layout_options(a);
  ro.pt2pt_same_node = a.has("same-node");
  std::vector<Measurement> ms;
  for (const std::string& f : a.positional) {
    std::vector<Measurement> part = read_measurements(f, ro);
    ms.insert(ms.end(), part.begin(), part.end());
  }

  // Step times fit the compute efficiency of --scenario; everything else fits the comm model.
  std::vector<const Measurement*> steps;
  bool has_comm = false;
  for (const Measurement& m : ms) {
    if (m.kind == MeasurementKind::Step)
      steps.push_back(&m);
    else
      has_comm = true;
  }
  std::optional<ComputeFit> compute;
  Report compute_rows;
  if (!scenario.empty()) {
    if (steps.empty())
      throw InputError({"--scenario", 0, 0}, "",
                       "--scenario fits the compute efficiency to measured step times: give a CSV with "
                       "gpus,step_time_s or gpus,throughput_samples_per_s");
    Scenario sc = load_scenario(scenario, a.sets);
    require_no_jobs(sc, "calibrate");
    compute = fit_compute_efficiency(sc, a.str("strategy"), steps);
    compute_rows = compute_report(*compute, scenario);
  }
  std::string out_path = a.str("out");
  if (!has_comm && compute) {
    if (!out_path.empty()) {
      write_calibration(out_path, compute_calibration_yaml(*compute, scenario, a.positional, today_utc()));
      compute_rows.notes.push_back("calibration written to " + out_path);
    }
    write_report(std::cout, a.format, compute_rows);
    return 0;
  }

  if (!has_comm && scenario.empty())
    throw InputError({}, "",
                     "step times fit the compute efficiency of a training scenario: add --scenario S.yaml");
  std::optional<ClusterConfig> cluster;
  if (auto t = a.str("topology"); !t.empty()) {
    cluster =
        parse_cluster(YamlNode::load_string(fmt::format("{{topology: \"{}\"}}", t), "--topology"), false);
    Cluster two = build_cluster(*cluster, cluster->max_nodes == 1 ? 1 : 2);
    double largest = 0;
    for (const Measurement& m : ms) largest = std::max(largest, m.bytes);
    fo.bandwidth[kIntraNode] = intra_node_cost(two, largest).rate;
    fo.bandwidth[kInterNode] = inter_node_cost(two, largest).rate;
  }
  FitResult fit = cluster ? fit_on_cluster(ms, fo, *cluster) : fit_comm_model(ms, fo);
  const CommModel calibrated = cluster ? calibrated_comm(cluster->comm, fit) : CommModel{};
  // Never write a calibration that is not a number: degenerate inputs (flat or constant timings) are refused.
  for (const FittedClass& cls : fit.link)
    for (const FittedRange& r : cls.ranges)
      if (!std::isfinite(r.alpha) || !std::isfinite(r.beta) || !std::isfinite(r.gap) ||
          !std::isfinite(r.gamma))
        throw InputError({a.positional.empty() ? std::string("calibrate") : a.positional[0], 0, 0}, "",
                         "the fit gives a parameter that is not a finite number (the timings may be constant "
                         "or contradictory); nothing was written");

  std::string selection;
  if (std::isfinite(fo.max_bytes)) selection += fmt::format("bytes <= {}", format_bytes(Bytes{fo.max_bytes}));
  if (fo.max_ranks != std::numeric_limits<int64_t>::max())
    selection += fmt::format("{}ranks <= {}", selection.empty() ? "" : ", ", fo.max_ranks);
  Report params =
      parameter_report(fit, fmt::format("Fitted comm model: {} of {} measurements{}", fit.fit_points,
                                        ms.size(), selection.empty() ? "" : " (" + selection + ")"));

  std::vector<Case> cases;
  Report rows;
  rows.title =
      check ? "Measured vs model (closed form) vs simulated (replay)" : "Measured vs model (closed form)";
  rows.table_columns = {"source", "algorithm",   "ranks",    "bytes",
                        "set",    "measured_us", "model_us", "model_err"};
  if (check) {
    for (const char* c : {"simulated_us", "sim_err", "simulated_as", "oversubscribed"})
      rows.table_columns.push_back(c);
    cases.reserve(ms.size());
  }
  for (size_t i = 0; i < ms.size(); ++i) {
    const Measurement& m = ms[i];
    const FitPoint& p = fit.points[i];
    Case c{&m, &p,
           !check    ? ReplayResult{}
           : cluster ? replay_on_cluster(m, *cluster, calibrated)
                     : replay_measurement(m, fit)};
    // Ranks are CPU processes in the MPI kernels and OSU; nccl-tests ranks are GPUs, step times whole jobs.
    c.oversubscribed =
        cores > 0 && m.ranks_per_node > cores && (m.tool == "ddlsim-kernels" || m.tool == "osu");
    bool held_out = !p.in_fit && (p.modelled || c.replay.replayed);
    // Every record has every key (CSV needs one header); "" where there is no value.
    auto number = [](bool have, double v) {
      return have ? Field{"", v}.value : Field{"", std::string()}.value;
    };
    Record rec{{"section", std::string("measurement")},
               {"source", short_source(m)},
               {"file", m.file},
               {"line", static_cast<int64_t>(m.line)},
               {"kind", std::string(kind_name(m.kind))},
               {"algorithm", m.algorithm},
               {"ranks", m.ranks},
               {"ranks_per_node", m.ranks_per_node},
               {"servers", m.servers},
               {"bytes", static_cast<int64_t>(m.bytes)},
               {"set", std::string(p.outlier  ? "outlier"
                                   : p.in_fit ? "fit"
                                   : held_out ? "held-out"
                                              : "-")},
               {"measured_us", m.time_s * 1e6},
               {"model_us", number(p.predicted, p.predicted_s * 1e6)},
               {"model_err", number(p.predicted, p.rel_error)}};
    if (check) {
      rec.push_back({"simulated_us", number(c.replay.replayed, c.replay.predicted_s * 1e6)});
      rec.push_back({"sim_err", number(c.replay.replayed, c.error())});
      rec.push_back({"simulated_as", c.replay.replayed ? c.replay.strategy : "not replayed"});
      rec.push_back({"oversubscribed", std::string(c.oversubscribed ? "yes" : "no")});
      rec.push_back({"note", c.replay.note});
      cases.push_back(std::move(c));
    }
    rows.results.push_back(rec);
  }

  Report groups;
  if (check) {
    groups.title =
        fmt::format("Which cases the fitted model explains (median |sim error| <= {})", kExplained);
    groups.table_columns = {"algorithm",  "ranks",     "cases",   "held_out",
                            "median_err", "worst_err", "verdict", "caveat"};
    std::map<std::pair<std::string, int64_t>, std::vector<const Case*>> by_group;
    std::vector<const Case*> held, fitted;
    std::map<int64_t, std::vector<const Case*>> held_by_ranks;
    std::vector<const Case*> held_plain, held_over;
    for (const Case& c : cases) {
      if (!c.replay.replayed) continue;
      by_group[{c.m->algorithm, c.m->ranks}].push_back(&c);
      if (c.fit->in_fit) {
        fitted.push_back(&c);
        continue;
      }
      held.push_back(&c);
      held_by_ranks[c.m->ranks].push_back(&c);
      (c.oversubscribed ? held_over : held_plain).push_back(&c);
    }
    std::vector<std::string> explained, unexplained;
    std::set<std::string> used_caveats;
    for (const auto& group : by_group) {
      const auto& [key, list] = group;
      const Case& first = *group.second.front();  // (a lambda below: clang 14 cannot capture a binding)
      Stats s = stats_of(list);
      int64_t held_out = 0;
      for (const Case* c : list) held_out += !c->fit->in_fit;
      bool ok = s.median <= kExplained;
      std::string label = fmt::format("{} p={}", key.first, key.second);
      (ok ? explained : unexplained).push_back(label);
      groups.results.push_back({{"section", std::string("group")},
                                {"algorithm", key.first},
                                {"ranks", key.second},
                                {"cases", static_cast<int64_t>(s.n)},
                                {"held_out", held_out},
                                {"median_err", s.median},
                                {"worst_err", s.worst},
                                {"verdict", std::string(ok ? "explained" : "not explained")},
                                {"caveat", [&] {
                                   std::string tags;
                                   for (const std::string& t : caveats(*first.m, first.oversubscribed)) {
                                     tags += (tags.empty() ? "" : ",") + t;
                                     used_caveats.insert(t);
                                   }
                                   return tags;
                                 }()}});
    }
    auto join = [](const std::vector<std::string>& v) {
      std::string out;
      for (const std::string& s : v) out += (out.empty() ? "" : ", ") + s;
      return out.empty() ? std::string("none") : out;
    };
    groups.notes.push_back("summary: " + std::string("held-out: ") + stats_text(stats_of(held)));
    for (const auto& [p, list] : held_by_ranks)
      groups.notes.push_back(fmt::format("summary: held-out, np={}: {}", p, stats_text(stats_of(list))));
    groups.notes.push_back(fmt::format(
        "summary: held-out, not oversubscribed (GPU ranks, or CPU ranks per node <= {} cores): {}", cores,
        stats_text(stats_of(held_plain))));
    groups.notes.push_back(
        fmt::format("summary: held-out, oversubscribed (CPU ranks per node > {} cores: MPI kernels, OSU): {}",
                    cores, stats_text(stats_of(held_over))));
    groups.notes.push_back("summary: fit set, replayed: " + stats_text(stats_of(fitted)));
    groups.notes.push_back(fmt::format("explained (median |error| <= {}): {}", kExplained, join(explained)));
    groups.notes.push_back(fmt::format("not explained: {}", join(unexplained)));
    for (const auto& [tag, text] : kCaveats)
      if (used_caveats.count(tag)) groups.notes.push_back(fmt::format("caveat {}: {}", tag, text));
    if (cores > 0 && !a.has("cores"))
      groups.notes.push_back(
          fmt::format("oversubscription assumes the files were measured on this machine ({} cores); "
                      "set --cores otherwise",
                      cores));
  }

  if (!out_path.empty()) {
    std::string text = calibration_yaml(fit, a.positional, today_utc());
    if (compute) text += compute_calibration_yaml(*compute, scenario, {}, "");
    write_calibration(out_path, text);
    params.notes.push_back("calibration written to " + out_path);
  }

  if (a.format == Format::Table) {
    write_report(std::cout, Format::Table, params);
    std::cout << "\n";
    write_report(std::cout, Format::Table, rows);
    if (check) {
      std::cout << "\n";
      write_report(std::cout, Format::Table, groups);
    }
    if (compute) {
      std::cout << "\n";
      write_report(std::cout, Format::Table, compute_rows);
    }
  } else if (a.format == Format::Csv) {
    write_report(std::cout, Format::Csv, rows);
  } else {
    Report all;
    all.scenario_name = "calibrate";
    all.title = params.title;
    for (const Report* r : {&params, &rows, &groups, &compute_rows}) {
      all.results.insert(all.results.end(), r->results.begin(), r->results.end());
      all.notes.insert(all.notes.end(), r->notes.begin(), r->notes.end());
    }
    write_report(std::cout, Format::Json, all);
  }
  return 0;
}

}  // namespace ddlsim::cli
