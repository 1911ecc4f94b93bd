#pragma once
// Several training jobs at once on one machine (the scenario form with `jobs:`). Each job's task graph is
// built on its own nodes; the graphs run in one engine, so the flows of every job share one max-min
// solution on the fabric. Each job also runs alone on the same nodes of the otherwise empty machine: its
// slowdown is its shared step time over that. Collectives run on the flow model in both runs (no job's
// collective has the network to itself), so a job no one disturbs has slowdown 1 exactly.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/io/output.hpp"
#include "sim/train/scenario.hpp"
#include "sim/train/training.hpp"

namespace ddlsim {

struct JobResult {
  std::string job, strategy, model;
  int64_t gpus = 0, nodes = 0;
  std::vector<int64_t> node_list;  // the nodes it ran on, ascending
  double step_alone_s = 0, step_shared_s = 0;
  double slowdown = 0;           // step_shared_s / step_alone_s
  double throughput_shared = 0;  // samples/s
  double delivered_load = 0;     // background: what the network carried of the injection rate (shared run)
  // Links that carry this job's flows and another job's (routes are static: what a job puts on a link is
  // what it puts there alone), and the most-loaded of this job's links in its run alone
  // (TrainingOptions::top_links), each with the other jobs that also use it.
  int64_t shared_links = 0;
  std::vector<LinkLoad> links;
  std::vector<std::string> links_shared_with;  // per entry of `links`: the other jobs on it, comma-separated
};

// The nodes of each job (in job order, each ascending): explicit lists first, then the other jobs in order
// on the nodes left. Throws InputError at the job's placement when its nodes cannot be found.
std::vector<std::vector<int64_t>> place_jobs(const Scenario& scenario);

struct JobsOutcome {
  std::vector<JobResult> jobs;
  std::vector<LinkLoad> links;  // the shared run's most-loaded links (TrainingOptions::top_links)
};
// The rows of `run --links N` for a scenario with jobs: each job's most-loaded links alone and who shares
// them.
Report jobs_links_report(const Scenario& scenario, const TrainingOptions& options);
JobsOutcome run_jobs(const Scenario& scenario, const TrainingOptions& options);
Report run_jobs_report(const Scenario& scenario, const TrainingOptions& options);

}  // namespace ddlsim
