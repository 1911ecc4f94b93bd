#include "sim/train/jobs.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <random>

#include "sim/core/interrupt.hpp"
#include "sim/net/cluster.hpp"
#include "sim/train/trace.hpp"
#include "sim/train/training.hpp"

namespace ddlsim {

namespace {

// Job j's random placement draws from its own stream of the scenario's seed.
std::vector<int64_t> draw(std::vector<int64_t> free, int64_t n, uint64_t seed, size_t job) {
  std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ULL ^ (static_cast<uint64_t>(job) << 32) ^ 0x6a6f6273ULL);
  // Partial Fisher-Yates with a plain modulo (std::uniform_int_distribution differs between libraries).
  for (size_t i = 0; i < static_cast<size_t>(n); ++i) std::swap(free[i], free[i + rng() % (free.size() - i)]);
  free.resize(static_cast<size_t>(n));
  std::sort(free.begin(), free.end());
  return free;
}

// `ranks` ascending as ranges: 0-3, 8, 12-15.
std::string ranges(const std::vector<int64_t>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j == i ? fmt::format("{}", ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]);
    i = j + 1;
  }
  return out;
}

// Job j's view of the machine: its nodes' GPUs (rank order), hosts and NVSwitches, and its slice of the
// dedicated servers; the topology is the machine's.
Cluster job_view(const Cluster& machine, const std::vector<int64_t>& nodes, uint32_t first_server,
                 uint32_t servers) {
  Cluster v;
  v.name = machine.name;
  v.nodes = static_cast<int>(nodes.size());
  v.gpus_per_node = machine.gpus_per_node;
  v.gpu = machine.gpu;
  v.host_cores = machine.host_cores;
  v.comm = machine.comm;
  v.topo = machine.topo;
  const size_t gpn = static_cast<size_t>(machine.gpus_per_node);
  for (int64_t k : nodes) {
    for (size_t i = 0; i < gpn; ++i) v.gpus.push_back(machine.gpus[static_cast<size_t>(k) * gpn + i]);
    v.cpus.push_back(machine.cpus[static_cast<size_t>(k)]);
    if (!machine.nvswitches.empty()) v.nvswitches.push_back(machine.nvswitches[static_cast<size_t>(k)]);
  }
  v.nvls = machine.nvls;
  for (uint32_t s = 0; s < servers; ++s) v.servers.push_back(machine.servers[first_server + s]);
  return v;
}

// `text` cut to `width` characters with an ellipsis.
std::string abbreviate(const std::string& text, size_t width) {
  return text.size() <= width ? text : text.substr(0, width - 4) + " ...";
}

// A job's graph: a training run's (with its step ends) or background traffic's (with its messages).
struct JobGraph {
  TaskGraph graph;
  std::vector<std::vector<TaskId>> step_end;
  std::vector<TaskId> messages;
  double injection = 0;  // background: bytes/s one node may inject
};

// Background traffic on `nodes` of the machine (see BackgroundSpec). Node a's i-th message leaves from its
// GPU i mod g (its lane: every NIC of a node injects) at i·T, T = message / (load · injection), injection =
// its NICs · the rate of its route to another node, or when the lane's previous message has arrived if that
// is later (one message in flight per lane: where the network cannot carry the offered load a node sends
// less, instead of queueing without bound); the destination is the same GPU index on another node of the
// job: drawn uniformly (uniform) or the next ones in turn (all-to-all).
JobGraph background_graph(const BackgroundSpec& b, const Cluster& machine, const std::vector<int64_t>& nodes,
                          int nics, uint64_t seed, size_t job, const Where& where) {
  if (nodes.size() < 2) where.fail("background traffic needs at least 2 nodes");
  JobGraph out;
  TaskGraph& g = out.graph;
  const size_t gpn = static_cast<size_t>(machine.gpus_per_node);
  auto gpu = [&](int64_t node, size_t i) { return machine.gpus[static_cast<size_t>(node) * gpn + i % gpn]; };
  Router router(machine.topo);
  double rate = 1e300;
  for (LinkId l : router.route(gpu(nodes[0], 0), gpu(nodes[1], 0)))
    rate = std::min(rate, machine.topo.links()[l].spec.capacity.value);
  out.injection = rate * nics;
  const double interval = b.message / (b.load * out.injection);
  const int64_t count = static_cast<int64_t>(b.duration.seconds() / interval);
  if (count < 1)
    where.fail(
        fmt::format("background traffic sends no message in its duration: one {:g}-byte message per "
                    "lane every {:.3g} s at this load; raise load or duration",
                    b.message, interval));
  if (count > 10'000'000 / static_cast<int64_t>(nodes.size()))
    where.fail(
        fmt::format("background traffic of {} messages per node is too many: raise message or lower "
                    "load or duration",
                    count));
  std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ULL ^ (static_cast<uint64_t>(job) << 32) ^ 0x62676bULL);
  uint32_t label = g.label("background message");
  const Time step = Time::from_seconds(interval);
  for (size_t a = 0; a < nodes.size(); ++a) {
    TaskId prev = kNoTask;
    std::vector<TaskId> in_flight(gpn, kNoTask);  // per lane
    for (int64_t i = 0; i < count; ++i) {
      TaskId wait = g.add_delay(i == 0 ? Time() : step, Category::Other, -1, -1, label);
      if (prev != kNoTask) g.depend(prev, wait);
      prev = wait;
      size_t k = b.all_to_all ? (a + 1 + static_cast<size_t>(i) % (nodes.size() - 1)) % nodes.size()
                              : (a + 1 + rng() % (nodes.size() - 1)) % nodes.size();
      size_t lane = static_cast<size_t>(i);
      TaskId msg = g.add_transfer(gpu(nodes[a], lane), gpu(nodes[k], lane), b.message, -1, -1, label);
      g.depend(wait, msg);
      TaskId& last = in_flight[lane % gpn];
      if (last != kNoTask) g.depend(last, msg);
      last = msg;
      out.messages.push_back(msg);
    }
  }
  return out;
}

// The bytes the messages carried per node and second of their span (first start to last end), as a share of
// the injection rate.
double delivered_load(const JobGraph& jg, const BackgroundSpec& b, size_t nodes,
                      const std::vector<TaskRecord>& rec, TaskId offset) {
  Time first = Time::max(), last;
  for (TaskId t : jg.messages) {
    first = std::min(first, rec[offset + t].start);
    last = std::max(last, rec[offset + t].end);
  }
  double span = (last - first).seconds();
  return span > 0 ? b.message * static_cast<double>(jg.messages.size()) /
                        (span * static_cast<double>(nodes) * jg.injection)
                  : 0;
}

// The smallest worker id among tasks [first, end) (0 without workers).
int32_t first_worker_of(const TaskGraph& g, TaskId first, TaskId end) {
  int32_t w = INT32_MAX;
  for (TaskId t = first; t < end; ++t)
    if (g.task(t).worker >= 0) w = std::min(w, g.task(t).worker);
  return w == INT32_MAX ? 0 : w;
}

double mean_message_time(const std::vector<TaskId>& messages, const std::vector<TaskRecord>& rec,
                         TaskId offset) {
  double sum = 0;
  for (TaskId t : messages) sum += (rec[offset + t].end - rec[offset + t].start).seconds();
  return messages.empty() ? 0 : sum / static_cast<double>(messages.size());
}

}  // namespace

std::vector<std::vector<int64_t>> place_jobs(const Scenario& sc) {
  const int64_t machine = sc.cluster.node_counts.at(0);
  std::vector<bool> used(static_cast<size_t>(machine), false);
  std::vector<std::vector<int64_t>> out(sc.jobs.size());
  for (size_t j = 0; j < sc.jobs.size(); ++j) {
    if (sc.jobs[j].placement != JobPlacement::Explicit) continue;
    out[j] = sc.jobs[j].node_list;
    std::sort(out[j].begin(), out[j].end());
    for (int64_t k : out[j]) used[static_cast<size_t>(k)] = true;
  }
  std::vector<size_t> order;  // the job that fills the rest last
  for (size_t j = 0; j < sc.jobs.size(); ++j)
    if (!sc.jobs[j].fill_rest) order.push_back(j);
  for (size_t j = 0; j < sc.jobs.size(); ++j)
    if (sc.jobs[j].fill_rest) order.push_back(j);
  for (size_t j : order) {
    const JobSpec& job = sc.jobs[j];
    if (job.placement == JobPlacement::Explicit) continue;
    std::vector<int64_t> free;
    for (int64_t k = 0; k < machine; ++k)
      if (!used[static_cast<size_t>(k)]) free.push_back(k);
    const size_t n = static_cast<size_t>(job.nodes);
    std::vector<int64_t>& nodes = out[j];
    if (job.fill_rest)
      nodes = free;  // every node the other jobs left
    else
      switch (job.placement) {
        case JobPlacement::Contiguous:
          for (size_t i = 0; i + n <= free.size() && nodes.empty(); ++i)
            if (free[i + n - 1] - free[i] == static_cast<int64_t>(n) - 1)
              nodes.assign(free.begin() + static_cast<std::ptrdiff_t>(i),
                           free.begin() + static_cast<std::ptrdiff_t>(i + n));
          if (nodes.empty())
            job.where.fail(fmt::format("no {} consecutive free nodes are left for job \"{}\" (free: {})", n,
                                       job.name, ranges(free)));
          break;
        case JobPlacement::Spread:  // node i of the job at free[floor(i·F/n)]
          for (size_t i = 0; i < n; ++i) nodes.push_back(free[i * free.size() / n]);
          break;
        case JobPlacement::Random:
          nodes = draw(free, job.nodes, sc.seed, j);
          break;
        case JobPlacement::Explicit:
          break;
      }
    for (int64_t k : nodes) used[static_cast<size_t>(k)] = true;
  }
  return out;
}

JobsOutcome run_jobs(const Scenario& sc, const TrainingOptions& opts) {
  const std::vector<std::vector<int64_t>> placed = place_jobs(sc);
  // Dedicated PS hosts of every job, in job order, on the one machine.
  ServerHosts hosts;
  std::vector<uint32_t> first_server;
  for (const JobSpec& job : sc.jobs) {
    ServerHosts h = job.strategy.server_hosts();
    first_server.push_back(hosts.count);
    if (h.count > 0 && hosts.count > 0 && h.link.has_value() != hosts.link.has_value())
      job.where.fail("jobs with dedicated parameter servers must give their servers the same link");
    hosts.count += h.count;
    if (h.link) hosts.link = h.link;
  }
  Cluster machine = build_cluster(sc.cluster, sc.cluster.node_counts.at(0), hosts);
  // Memory, before any graph is built: each training job's estimate (as a run of its own on its nodes),
  // twice over (the graphs, and the runs that append copies of them: the shared run and each job alone).
  if (const MemoryLimit limit = memory_limit(opts.max_memory); limit.bytes > 0) {
    double total = 0;
    for (size_t j = 0; j < sc.jobs.size(); ++j) {
      if (sc.jobs[j].background) continue;
      Scenario one = sc;
      one.jobs.clear();
      one.training = sc.jobs[j].training;
      one.strategies = {sc.jobs[j].strategy};
      total += MemoryModel(one, one.strategies[0]).at(static_cast<int64_t>(placed[j].size())).bytes;
    }
    if (2 * total > limit.bytes)
      sc.jobs_where.fail(
          fmt::format("the jobs need about {:.3g} GB (their graphs and the runs that copy them), "
                      "more than the {}: fewer nodes or steps per job, or --max-memory to "
                      "override",
                      2 * total / 1e9, limit.text));
  }
  std::vector<JobGraph> graphs;
  double slowdown = -1;
  const int nics = sc.cluster.node ? sc.cluster.node->nics : 1;
  for (size_t j = 0; j < sc.jobs.size(); ++j) {
    const JobSpec& job = sc.jobs[j];
    if (job.background) {
      graphs.push_back(background_graph(*job.background, machine, placed[j], nics, sc.seed, j, job.where));
      continue;
    }
    if (slowdown >= 0 && job.training.overlap_slowdown != slowdown)
      job.where.fail("every job must give the same workload.compute.overlap_slowdown (the GPUs' property)");
    slowdown = job.training.overlap_slowdown;
    Cluster view = job_view(machine, placed[j], first_server[j], job.strategy.server_hosts().count);
    TrainingGraph t = build_training_graph(job.training, job.strategy, view, sc.seed + j);
    t.graph.share_network();
    graphs.push_back({std::move(t.graph), std::move(t.step_end), {}});
  }
  // Run k < jobs: job k alone; run `jobs`: all of them together. Independent simulations, on threads.
  const size_t n = sc.jobs.size();
  struct Run {
    std::vector<double> steps;  // per job in the run
    std::vector<double> loads;  // per job in the run: background jobs' delivered load
    std::vector<LinkLoad> links;
    std::vector<double> bytes;  // per link (runs of one job)
    Time makespan;
    bool done = false;
  };
  std::vector<Run> runs(n + 1);
  auto simulate = [&](size_t r, const std::function<void(double)>& share) {
    TaskGraph g;
    std::vector<size_t> members;
    for (size_t j = 0; j < n; ++j)
      if (r == n || r == j) members.push_back(j);
    std::vector<TaskId> offset;
    for (size_t j : members) offset.push_back(g.append(graphs[j].graph, sc.jobs[j].start));
    g.collective_compute_slowdown = std::max(0.0, slowdown);
    offset.push_back(static_cast<TaskId>(g.size()));  // (the end of the last job's tasks)
    g.finalize();
    Engine engine(machine.topo, machine.comm, g, opts.engine);
    engine.on_progress(share);
    Time makespan = engine.run();
    if (r == n && !opts.trace_file.empty()) {
      std::vector<TraceProcess> processes;
      for (size_t i = 0; i < members.size(); ++i)
        processes.push_back({sc.jobs[members[i]].name, offset[i], offset[i + 1],
                             offset[i] < g.size() ? first_worker_of(g, offset[i], offset[i + 1]) : 0});
      write_perfetto_trace(opts.trace_file, g, engine.records(), processes, 64);
    }
    for (size_t i = 0; i < members.size(); ++i) {
      const JobGraph& jg = graphs[members[i]];
      const JobSpec& job = sc.jobs[members[i]];
      runs[r].loads.push_back(
          job.background
              ? delivered_load(jg, *job.background,
                               job.node_list.empty() ? static_cast<size_t>(job.nodes) : job.node_list.size(),
                               engine.records(), offset[i])
              : 0);
      runs[r].steps.push_back(
          sc.jobs[members[i]].background
              ? mean_message_time(jg.messages, engine.records(), offset[i])
              : measured_step_time(sc.jobs[members[i]].training, jg.step_end, engine.records(), offset[i]));
    }
    if (r == n) {
      runs[r].links = top_links(engine, machine.topo, makespan, opts.top_links);
    } else {
      for (const LinkUsage& u : engine.link_usage()) runs[r].bytes.push_back(u.bytes);
      runs[r].links = top_links(engine, machine.topo, makespan, opts.top_links);
    }
  };
  // The shared run (the longest) first.
  std::vector<bool> ran = run_parallel(n + 1, opts.jobs, opts.progress, [&](size_t k, const auto& share) {
    try {
      simulate(n - k, share);
    } catch (const TimeOverflow&) {
      sc.jobs_where.fail(
          fmt::format("the jobs' run passes the limit of simulated time ({:.3g} s: 2^62 picoseconds); a "
                      "job's steps, collectives or data loading take too long",
                      kMaxSimulatedSeconds));
    }
  });
  for (size_t k = 0; k <= n; ++k) runs[n - k].done = ran[k];
  JobsOutcome out;
  out.links = runs[n].links;
  if (!runs[n].done) return out;  // interrupted before the shared run finished: nothing to relate
  for (size_t j = 0; j < n; ++j) {
    if (!runs[j].done) continue;
    const JobSpec& job = sc.jobs[j];
    JobResult res;
    res.job = job.name;
    res.strategy = job.background ? "background" : job.strategy.label;
    res.model = !job.background              ? job.training.model.name
                : job.background->all_to_all ? "all-to-all"
                                             : "uniform";
    res.nodes = job.nodes;
    res.gpus = job.nodes * machine.gpus_per_node;
    res.node_list = placed[j];
    res.step_alone_s = runs[j].steps.at(0);
    res.step_shared_s = runs[n].steps.at(j);
    res.slowdown = res.step_shared_s / res.step_alone_s;
    res.delivered_load = runs[n].loads.at(j);
    res.throughput_shared = job.background
                                ? job.background->message / res.step_shared_s  // bytes/s of one message
                                : static_cast<double>(job.training.batch * res.gpus) / res.step_shared_s;
    auto others = [&](size_t link) {
      std::string names;
      for (size_t k = 0; k < n; ++k)
        if (k != j && runs[k].bytes[link] > 0) names += (names.empty() ? "" : ", ") + sc.jobs[k].name;
      return names;
    };
    for (size_t l = 0; l < runs[j].bytes.size(); ++l)
      if (runs[j].bytes[l] > 0 && !others(l).empty()) ++res.shared_links;
    res.links = runs[j].links;
    for (const LinkLoad& ll : res.links) res.links_shared_with.push_back(others(ll.id));
    out.jobs.push_back(std::move(res));
  }
  return out;
}

Report run_jobs_report(const Scenario& sc, const TrainingOptions& opts) {
  Report report;
  report.scenario_name = sc.name;
  report.scenario_file = sc.file;
  report.title = fmt::format("{}: {} jobs on {} nodes of {}", sc.name, sc.jobs.size(),
                             sc.cluster.node_counts.at(0), sc.cluster.name);
  report.table_columns = {"job",
                          "strategy",
                          "model",
                          "gpus",
                          "where",
                          "step_alone_s",
                          "step_shared_s",
                          "slowdown",
                          "shared_links",
                          "delivered_load",
                          "throughput_samples_per_s"};
  for (const JobResult& r : run_jobs(sc, opts).jobs)
    report.results.push_back(
        {{"job", r.job},
         {"strategy", r.strategy},
         {"model", r.model},
         {"gpus", r.gpus},
         {"nodes", r.nodes},
         {"nodes_list", ranges(r.node_list)},
         {"where", abbreviate(ranges(r.node_list), 24)},
         {"step_alone_s", r.step_alone_s},
         {"step_shared_s", r.step_shared_s},
         {"slowdown", r.slowdown},
         {"shared_links", r.shared_links},
         {"delivered_load",
          r.strategy == "background" ? fmt::format("{:.3f}", r.delivered_load) : std::string("-")},
         {"throughput_samples_per_s", r.throughput_shared}});
  report.notes.push_back(
      "step_alone_s: the job on the same nodes of an otherwise empty machine; step_shared_s: with every job "
      "at once (each from its start offset, each its own steps); slowdown = shared / alone; shared_links: "
      "directed links that carry this job's flows and another's; where: its nodes (nodes_list in CSV/JSON)");
  if (std::any_of(sc.jobs.begin(), sc.jobs.end(), [](const JobSpec& j) { return j.background.has_value(); }))
    report.notes.push_back(
        "background jobs: step = the mean time of one message (start to end), throughput = message bytes / "
        "that time (bytes/s), delivered_load = bytes per node and second over the messages' span / the "
        "injection rate (shared run; below the offered load where the network cannot carry it)");
  return report;
}

Report jobs_links_report(const Scenario& sc, const TrainingOptions& opts) {
  Report report;
  report.scenario_name = sc.name;
  report.scenario_file = sc.file;
  report.title = fmt::format("{}: the {} most-loaded links of each job (alone) and the jobs sharing them",
                             sc.name, opts.top_links);
  for (const JobResult& r : run_jobs(sc, opts).jobs)
    for (size_t i = 0; i < r.links.size(); ++i)
      report.results.push_back(
          {{"job", r.job},
           {"gpus", r.gpus},
           {"rank", static_cast<int64_t>(i + 1)},
           {"link", r.links[i].link},
           {"bytes", static_cast<int64_t>(std::llround(r.links[i].bytes))},
           {"busy_share", r.links[i].busy_share},
           {"peak_flows", static_cast<int64_t>(r.links[i].peak_flows)},
           {"shared_with", r.links_shared_with[i].empty() ? "-" : r.links_shared_with[i]}});
  report.notes.push_back(
      "bytes, busy_share, peak_flows: the job alone on its nodes over its whole run (warm-up included); "
      "shared_with: the other jobs whose flows cross the link; links are directed (from > to)");
  return report;
}

}  // namespace ddlsim
