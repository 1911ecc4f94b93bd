#pragma once
// The max-plus fast path of a collective: the exact time of its round plan when every message gets its
// route's full rate, which holds iff no two of its messages are on a link at the same time. Evaluated on an
// idle network; the outcome (success or not) depends only on the plan and the members, so it is memoised per
// plan: a collective repeated every step is evaluated once.
#include <cstdint>
#include <vector>

#include "sim/train/task_graph.hpp"
#include "sim/train/transport.hpp"

namespace ddlsim {

struct FastOutcome {
  bool ok = false;        // false: two messages would share a link (or multipath): use the flow model
  int64_t duration = 0;   // ps from the collective's start to its end
  uint64_t messages = 0;  // messages it stands for
};

class FastPath {
 public:
  explicit FastPath(Transport& transport) : transport_(transport) {}
  // The outcome of `spec` started at `now` on an idle network (memoised).
  FastOutcome run(const CollectiveTask& spec, Time now);
  // Adds what the collectives run so far put on each link (bytes, busy time, one message at a time) to
  // `usage` (indexed by link id). An evaluation keeps its usage by route with its memo, counted per run, and
  // spreads it over the links only here.
  void add_usage(std::vector<LinkUsage>& usage) const;

 private:
  class Evaluation;
  friend class Evaluation;
  struct RouteUsage {  // what one evaluation's messages put on one route
    const std::vector<LinkId>* route;
    double bytes;
    int64_t busy_ps;
  };
  struct Memo {
    const CollectivePlan* plan;
    const std::vector<VertexId>* members;
    bool cpu_servers;
    uint32_t first_server;
    FastOutcome outcome;
    std::vector<RouteUsage> usage;
    uint64_t runs = 0;  // collectives it stood for
  };
  Memo* find(const CollectiveTask& spec);

  Transport& transport_;
  std::vector<Memo> memo_;
  // Link scratch shared by evaluations (sized on first use, reset after each).
  std::vector<int64_t> last_end_;     // last end time seen per link (ps)
  std::vector<LinkId> touched_;       // links whose last_end_ is set
  std::vector<uint64_t> link_round_;  // the last round (round_id_) that put a message on each link
  uint64_t round_id_ = 0;
};

}  // namespace ddlsim
