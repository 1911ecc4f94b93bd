// `ddlsim crossover`: where a parameter server and an allreduce strategy of the same scenario trade places.
#include <fmt/format.h>
#include <iostream>
#include <limits>

#include "sim/cli/commands.hpp"
#include "sim/cli/progress.hpp"
#include "sim/config/cluster.hpp"
#include "sim/config/scenario.hpp"
#include "sim/core/error.hpp"
#include "sim/train/collective_workload.hpp"
#include "sim/train/training.hpp"

namespace ddlsim::cli {

namespace {

// Collective time or training step time of one strategy at one node count; a training run tells `part` now
// and then the share of it done.
double strategy_time(const Scenario& sc, const Strategy& st, int64_t nodes,
                     const std::function<void(double)>& part) {
  if (sc.collective) return run_collective_workload(sc.cluster, *sc.collective, st, nodes).time_s;
  Scenario one = sc;
  one.strategies = {st};
  one.reference_gpus = sc.cluster.gpus_per_node * nodes;  // no separate reference run needed
  TrainingOptions opts;
  if (part) opts.progress = [&](double fraction, size_t, size_t) { part(fraction); };
  return run_training(one, {nodes}, opts)[0].step_time_s;
}

}  // namespace

int crossover_command(const std::vector<std::string>& args) {
  CommandSpec spec("crossover", "SCENARIO.yaml [options]",
                   "Compares the scenario's first parameter-server strategy (name: ps) with its first other "
                   "strategy (ring,\n"
                   "ddp, ...): at every node count it prints both times (collective time or step time), "
                   "which is faster, and\n"
                   "the fewest PS servers whose time is at most the other strategy's. The notes say at which "
                   "GPU count the\n"
                   "other strategy overtakes PS. On a star with dedicated servers the bandwidth terms are\n"
                   "PS 2·max(n/B, p·n/(k·B)) vs ring 2(p−1)/p·n/B, so PS needs k >= p servers to come within "
                   "p/(p−1) of ring\n"
                   "and only its fewer latencies (2 vs 2(p−1)) let it win.");
  spec.options.add_options()  //
      ("nodes", po::value<std::string>()->value_name("N,N,..."),
       "node counts (default: the scenario's cluster.nodes)")  //
      ("servers", po::value<std::string>()->value_name("K,K,..."),
       "PS server counts to try (default: 1, 2, 4, ... up to twice the GPU count)");
  std::optional<Args> parsed = parse_command(args, spec);
  if (!parsed) return 0;
  const Args& a = *parsed;
  const std::string path = a.positional[0];
  Scenario sc = load_scenario(path, a.sets);
  require_no_jobs(sc, "crossover");
  int ps = -1, other = -1;
  for (size_t i = 0; i < sc.strategies.size(); ++i) {
    if (sc.strategies[i].name == "ps" && ps < 0) ps = static_cast<int>(i);
    if (sc.strategies[i].name != "ps" && other < 0) other = static_cast<int>(i);
  }
  if (ps < 0 || other < 0)
    throw InputError({sc.file, 0, 0}, "strategies", "crossover needs a ps strategy and one other strategy");
  std::vector<int64_t> counts =
      a.has("nodes") ? parse_count_list(a.str("nodes"), "--nodes") : sc.cluster.node_counts;
  check_node_counts(sc.cluster, counts, command_line("--nodes"));
  std::vector<int64_t> server_list;
  if (a.has("servers")) server_list = parse_count_list(a.str("servers"), "--servers");
  const Strategy& ring = sc.strategies[other];
  const Strategy& ps_spec = sc.strategies[ps];

  Report report;
  report.scenario_name = sc.name;
  report.scenario_file = sc.file;
  report.title = fmt::format("{}: {} vs {}", sc.name, ps_spec.label, ring.label);
  int64_t overtakes = -1;
  bool ps_was_faster = false;
  {  // (the bar's line is cleared at the end of this block, before the report)
    ProgressBar bar(sc.name, "node counts");
    const auto draw = bar.callback();
    for (size_t i = 0; i < counts.size(); ++i) {
      const int64_t n = counts[i];
      int64_t gpus = n * sc.cluster.gpus_per_node;
      std::vector<int64_t> ks = server_list;
      if (ks.empty())
        for (int64_t k = 1; k <= 2 * gpus; k *= 2) ks.push_back(k);
      // Progress: each node count a part, each of its runs (the two strategies, then a run per server count
      // tried) an equal share of it.
      const double runs = static_cast<double>(2 + ks.size());
      auto part = [&](size_t run) -> std::function<void(double)> {
        if (!draw) return {};
        return [&, run](double f) {
          draw((static_cast<double>(i) + (static_cast<double>(run) + f) / runs) /
                   static_cast<double>(counts.size()),
               i, counts.size());
        };
      };
      double t_ring = strategy_time(sc, ring, n, part(0)), t_ps = strategy_time(sc, ps_spec, n, part(1));
      int64_t match = -1;
      double best = std::numeric_limits<double>::infinity();
      int64_t best_k = 0;
      for (size_t run = 2; int64_t k : ks) {
        // The same PS strategy with k servers.
        if (k > 65536) throw InputError({"--servers", 0, 0}, "", "servers must be between 1 and 65536");
        Strategy with_k = ps_spec;
        ServerPlacement& placement = std::get<PsOptions>(with_k.options).placement;
        placement.servers = static_cast<uint32_t>(k);
        placement.per_node = false;
        double t = strategy_time(sc, with_k, n, part(run++));
        if (t < best) best = t, best_k = k;
        if (t <= t_ring) {
          match = k;
          break;
        }
      }
      if (t_ps <= t_ring)
        ps_was_faster = true;
      else if (ps_was_faster && overtakes < 0)
        overtakes = gpus;
      if (draw) draw(static_cast<double>(i + 1) / static_cast<double>(counts.size()), i + 1, counts.size());
      report.results.push_back({{"nodes", n},
                                {"gpus", gpus},
                                {ring.label + "_s", t_ring},
                                {ps_spec.label + "_s", t_ps},
                                {"faster", t_ps <= t_ring ? ps_spec.label : ring.label},
                                {"servers_to_match", match},
                                {"best_servers", best_k},
                                {"best_ps_over_" + ring.label, best / t_ring}});
    }
  }
  if (overtakes > 0)
    report.notes.push_back(fmt::format("{} overtakes {} at {} GPUs", ring.label, ps_spec.label, overtakes));
  else if (ps_was_faster)
    report.notes.push_back(
        fmt::format("{} is at least as fast as {} at every count", ps_spec.label, ring.label));
  else
    report.notes.push_back(fmt::format("{} is faster than {} at every count", ring.label, ps_spec.label));
  report.notes.push_back(
      "servers_to_match: fewest servers (from --servers) with PS time <= the other's; -1: none in the list; "
      "best_servers: the fastest PS configuration tried and its time relative to the other strategy");
  write_report(std::cout, a.format, report);
  return 0;
}

}  // namespace ddlsim::cli
