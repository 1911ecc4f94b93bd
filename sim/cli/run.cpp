#include <fmt/format.h>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "sim/cli/commands.hpp"
#include "sim/cli/progress.hpp"
#include "sim/config/cluster.hpp"
#include "sim/config/scenario.hpp"
#include "sim/core/error.hpp"
#include "sim/core/interrupt.hpp"
#include "sim/core/output_file.hpp"
#include "sim/core/units.hpp"
#include "sim/train/collective_workload.hpp"
#include "sim/train/jobs.hpp"
#include "sim/train/training.hpp"

namespace ddlsim::cli {

namespace {

CommandSpec run_spec(const char* name, const char* usage, const char* description) {
  CommandSpec spec(name, usage, description);
  spec.options.add_options()                                                                        //
      ("no-fast", "run collectives message by message on the flow model (no max-plus fast path)")   //
      ("stats", "add engine statistics (messages, flows, region re-solves, events) to the output")  //
      ("trace", po::value<std::string>()->value_name("FILE"),
       "write a Perfetto/Chrome trace of the first strategy at the first node count")  //
      ("links", po::value<int64_t>()->value_name("N"),
       "instead of the results, list each run's N most-loaded links: bytes, busy share of the run, peak "
       "concurrent flows")  //
      ("stream", po::value<std::string>()->value_name("FILE"),
       "also write each row to FILE as soon as it finishes (CSV, or JSON Lines for a .jsonl name), flushed: "
       "a run that is interrupted or killed keeps its finished rows; {rank} in FILE is the rank under "
       "--split")  //
      ("max-memory", po::value<std::string>()->value_name("SIZE|none"),
       "refuse a simulation whose memory estimate passes SIZE (e.g. 16GB; default: the memory available, "
       "none: no check)")  //
      ("resume", po::value<std::string>()->value_name("FILE"),
       "as --stream, keeping the rows FILE has already and skipping their points (strategy, nodes): run a "
       "killed sweep again with the same options and it does only what is missing");
  add_jobs_option(spec.options);
  return spec;
}

Record collective_record(const CollectiveResult& r, bool stats) {
  Record rec{{"strategy", r.strategy},
             {"gpus", r.gpus},
             {"nodes", r.nodes},
             {"bytes", static_cast<int64_t>(r.bytes)},
             {"collective_time_s", r.time_s},
             {"algbw_GBps", r.algbw / 1e9},
             {"busbw_GBps", r.busbw / 1e9},
             {"algorithm", r.algorithm},
             {"protocol", r.protocol}};
  if (stats) {
    add_engine_stats(rec, r.stats);
    rec.push_back({"events", static_cast<int64_t>(r.stats.events)});
  }
  return rec;
}

// --max-memory SIZE: bytes; "none": -1 (no check); not given: 0 (the memory available).
double max_memory_option(const Args& a) {
  if (!a.has("max-memory")) return 0;
  std::string v = a.str("max-memory");
  if (v == "none") return -1;
  try {
    double b = parse_bytes(v).value;
    if (b > 0) return b;
  } catch (const std::exception&) {
  }
  command_line("--max-memory").fail(fmt::format("expected a size like 16GB, or none; got \"{}\"", v));
}

// The most-loaded links of one simulation, a row each.
void add_link_rows(Report& report, const std::string& strategy, int64_t gpus,
                   const std::vector<LinkLoad>& links) {
  for (size_t i = 0; i < links.size(); ++i)
    report.results.push_back({{"strategy", strategy},
                              {"gpus", gpus},
                              {"rank", static_cast<int64_t>(i + 1)},
                              {"link", links[i].link},
                              {"bytes", static_cast<int64_t>(std::llround(links[i].bytes))},
                              {"busy_share", links[i].busy_share},
                              {"peak_flows", static_cast<int64_t>(links[i].peak_flows)}});
}

// `split`: this process's rank and the job's size under `sweep --split` ({0, 1} otherwise).
int run_scenario(const std::string& path, const Args& a, const std::vector<int64_t>* nodes_override,
                 std::pair<int64_t, int64_t> split = {0, 1}) {
  Scenario sc = load_scenario(path, a.sets);
  catch_interrupts();  // a first SIGINT/SIGTERM: abandon the simulations in flight, print what finished
  EngineOptions opts;
  opts.fast_collectives = !a.has("no-fast");
  bool stats = a.has("stats");
  if (!sc.jobs.empty() && nodes_override)
    command_line("--nodes").fail(
        "a scenario with jobs runs on its one machine (cluster.nodes): use ddlsim run");
  std::vector<int64_t> counts = nodes_override ? *nodes_override : sc.cluster.node_counts;
  if (nodes_override) check_node_counts(sc.cluster, counts, command_line("--nodes"));
  const size_t links = static_cast<size_t>(count_option(a, "links", 1).value_or(0));
  // --stream / --resume: rows to a file as they finish (the columns of this run's records).
  const bool resume = a.has("resume");
  std::string stream_path = resume ? a.str("resume") : a.str("stream");
  std::optional<RowStream> stream;
  if (!stream_path.empty()) {
    const char* flag = resume ? "--resume" : "--stream";
    // Every process of a split sweep streams to its own file: {rank} in the name is its rank.
    if (size_t at = stream_path.find("{rank}"); at != std::string::npos)
      stream_path.replace(at, 6, std::to_string(split.first));
    else if (split.second > 1)
      command_line(flag).fail(fmt::format(
          "with --split each of the {} processes needs a file of its own: put {{rank}} in the name (e.g. "
          "rows-{{rank}}.csv)",
          split.second));
    if (a.has("resume") && a.has("stream"))
      command_line("--stream").fail("give --stream or --resume, not both (--resume streams too)");
    if (!sc.jobs.empty())
      command_line(flag).fail("a scenario with jobs is one run: there are no points to stream or resume");
    if (links > 0) command_line(flag).fail("--links lists links, not result rows: it cannot be streamed");
    check_output_path(stream_path);
    Record columns = sc.collective ? collective_record(CollectiveResult{}, stats)
                                   : training_record(TrainingResult{}, has_parameter_server(sc), stats);
    stream.emplace(stream_path, columns, resume);
  }
  const std::vector<std::string> unreachable =
      sc.jobs.empty() && links == 0 ? bandwidth_notes(sc.cluster, counts) : std::vector<std::string>{};
  auto done_before = [&](const std::string& strategy, int64_t n) {
    return stream && stream->has(strategy, n);
  };
  Report report;
  report.scenario_name = sc.name;
  report.scenario_file = sc.file;
  if (links > 0) {
    report.title = fmt::format("{}: the {} most-loaded links of each run", sc.name, links);
    report.notes.push_back(
        "bytes: carried over the whole run (warm-up and the initial broadcast included); busy_share: time "
        "with at "
        "least one flow or message on the link / the run's length; links are directed (from > to)");
  }
  if (!sc.jobs.empty()) {
    TrainingOptions topts;
    topts.engine = opts;
    topts.trace_file = a.str("trace");  // the shared run, a process per job
    if (!topts.trace_file.empty()) check_output_path(topts.trace_file);
    topts.jobs = jobs_option(a);
    ProgressBar bar(sc.name);
    topts.progress = bar.callback();
    topts.top_links = links;
    topts.max_memory = max_memory_option(a);
    report = links > 0 ? jobs_links_report(sc, topts) : run_jobs_report(sc, topts);
  } else if (sc.collective) {
    report.title = fmt::format("{}: {} of {} on {}", sc.name, collective_name(sc.collective->kind),
                               format_bytes(Bytes{sc.collective->bytes}), sc.cluster.name);
    for (const Strategy& st : sc.strategies)
      for (int64_t n : counts) {
        if (interrupted()) break;
        if (done_before(st.label, n)) continue;
        CollectiveResult r;
        try {
          r = run_collective_workload(sc.cluster, *sc.collective, st, n, opts, links, max_memory_option(a));
        } catch (const Interrupted&) {
          break;
        }
        if (links > 0)
          add_link_rows(report, r.strategy, r.gpus, r.links);
        else
          report.results.push_back(collective_record(r, stats));
        if (stream) stream->write(report.results.back());
      }
  } else {
    TrainingOptions topts;
    topts.engine = opts;
    topts.trace_file = a.str("trace");
    if (!topts.trace_file.empty()) check_output_path(topts.trace_file);  // before the run, not after it
    topts.jobs = jobs_option(a);
    topts.max_memory = max_memory_option(a);
    ProgressBar bar(sc.name);
    topts.progress = bar.callback();
    topts.top_links = links;
    if (stream) {
      topts.skip = done_before;
      topts.on_result = [&, has_ps = has_parameter_server(sc)](const TrainingResult& r) {
        stream->write(training_record(r, has_ps, stats));
      };
    }
    if (links > 0) {
      for (const TrainingResult& r : run_training(sc, counts, topts))
        add_link_rows(report, r.strategy, r.gpus, r.links);
    } else {
      report = run_training_report(sc, counts, topts, stats);
    }
  }
  report.notes.insert(report.notes.end(), unreachable.begin(), unreachable.end());
  if (stream && stream->kept() > 0)
    report.notes.push_back(
        fmt::format("resumed: {} rows were in {} already (not run again, not shown here); "
                    "the file holds every row",
                    stream->kept(), stream_path));
  if (int sig = interrupt_signal()) {
    report.notes.push_back(fmt::format(
        "interrupted by {}: the rows above are the simulations that finished (with their reference); the "
        "others did not finish",
        sig == SIGINT ? "SIGINT" : "SIGTERM"));
    write_report(std::cout, a.format, report);
    std::fprintf(stderr, "ddlsim: interrupted by %s; printed the %zu finished rows\n",
                 sig == SIGINT ? "SIGINT" : "SIGTERM", report.results.size());
    return 128 + sig;
  }
  write_report(std::cout, a.format, report);
  return 0;
}

}  // namespace

int run_command(const std::vector<std::string>& args) {
  CommandSpec spec = run_spec("run", "SCENARIO.yaml [options]",
                              "Simulates every strategy listed in the scenario at every node count in "
                              "cluster.nodes (a number or a list).\n"
                              "A collective workload reports time, algbw and busbw (nccl-tests definitions) "
                              "and the algorithm\n"
                              "and protocol that ran; a training workload reports step time, throughput, "
                              "speed-up and efficiency\n"
                              "relative to reference_gpus, time to train and the time shares.");
  std::optional<Args> a = parse_command(args, spec);
  if (!a) return 0;
  return run_scenario(a->positional[0], *a, nullptr);
}

namespace {

// This process's place in a parallel job (mpirun, srun), from the launcher's environment; {0, 1} outside one.
std::pair<int64_t, int64_t> job_rank_and_size() {
  const char* pairs[][2] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                            {"PMI_RANK", "PMI_SIZE"},
                            {"SLURM_PROCID", "SLURM_NTASKS"}};
  for (const auto& pr : pairs) {
    const char* r = std::getenv(pr[0]);
    const char* n = std::getenv(pr[1]);
    if (!r || !n) continue;
    try {
      int64_t rank = std::stoll(r), size = std::stoll(n);
      if (size >= 1 && rank >= 0 && rank < size) return {rank, size};
    } catch (const std::exception&) {
    }
    throw InputError({pr[0], 0, 0}, "",
                     fmt::format("{}={} and {}={} are not a rank and a job size", pr[0], r, pr[1], n));
  }
  return {0, 1};
}

}  // namespace

int sweep_command(const std::vector<std::string>& args) {
  CommandSpec spec = run_spec(
      "sweep", "SCENARIO.yaml --nodes 4,8,16 [options]",
      "Runs the scenario at each node count (same output as run). In batch scripts: a Slurm array passes "
      "one\n"
      "count per task; with --split every process of an mpirun or srun job takes the counts i with\n"
      "i mod size = rank (rank and size from OMPI_COMM_WORLD_*, PMI_* or SLURM_PROCID/SLURM_NTASKS), e.g.\n"
      "  mpirun -np 4 --output-filename out build/ddlsim sweep S.yaml --nodes 1,2,4,8,16,32,64,128 --split "
      "\\\n"
      "      --format csv");
  spec.options.add_options()                                                                           //
      ("nodes", po::value<std::string>()->value_name("N,N,..."), "the node counts to run (required)")  //
      ("split", "take this process's share of the counts in an mpirun or srun job");
  std::optional<Args> a = parse_command(args, spec);
  if (!a) return 0;
  std::string list = a->str("nodes");
  if (list.empty()) throw InputError({"--nodes", 0, 0}, "", "sweep needs --nodes N[,N...]");
  std::vector<int64_t> counts = parse_count_list(list, "--nodes");
  std::pair<int64_t, int64_t> split{0, 1};
  if (a->has("split")) {
    split = job_rank_and_size();
    auto [rank, size] = split;
    std::vector<int64_t> mine;
    for (size_t i = static_cast<size_t>(rank); i < counts.size(); i += static_cast<size_t>(size))
      mine.push_back(counts[i]);
    if (mine.empty()) return 0;  // more processes than node counts: nothing to do here
    counts = std::move(mine);
  }
  return run_scenario(a->positional[0], *a, &counts, split);
}

}  // namespace ddlsim::cli
