#pragma once
// The max-plus fast path of a collective: the exact time of its round plan when every message gets its
// standalone rate (its route's bottleneck times the comm model's efficiency, under the per-flow bound). The
// flow model's max-min allocation gives exactly that iff, at every instant and on every link, the standalone
// rates of the messages on the link sum to at most its capacity (the standalone allocation is then feasible
// with every flow at its own upper bound). Evaluated on an idle network; the outcome (success or not) depends
// only on the plan and the members, so it is memoised per plan: a collective repeated every step is evaluated
// once.
//
// Where the fast path declines, the flow model's run of the same collective, alone on an idle network, is
// just as much a function of the plan and the members: the first such run is recorded (its duration, its
// messages and what it put on each link) and later runs replay it. That is the flow model's own result, to
// the picosecond, without re-solving max-min for every message of every step.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "sim/train/task_graph.hpp"
#include "sim/train/transport.hpp"

namespace ddlsim {

struct FastOutcome {
  bool ok = false;        // false: messages would exceed a link's capacity (or multipath): use the flow model
  int64_t duration = 0;   // ps from the collective's start to its end
  uint64_t messages = 0;  // messages it stands for
  bool replayed = false;  // a recorded flow-model run (not a max-plus evaluation)
};

// What one flow-model run of a collective put on one link.
struct LinkDelta {
  LinkId link;
  double bytes;
  int64_t busy_ps;
};

// The reductions member r of `spec` runs around its round s, in seconds: `carry` overlaps round s (the round
// before's, when the plan fuses reductions: round s lasts at least that long and its messages drain no
// faster), `after` delays the next round (its own, unless the next round carries it). The same for both
// executors.
struct RoundReduction {
  double carry = 0, after = 0;
};
RoundReduction round_reduction(const CollectiveTask& spec, const CommModel& comm, uint32_t r, uint32_t s);

class FastPath {
 public:
  explicit FastPath(Transport& transport) : transport_(transport) {}
  // The outcome of `spec` started at `now` on an idle network (memoised).
  FastOutcome run(const CollectiveTask& spec, Time now);
  // Records the flow model's run of `spec` (one the fast path declined), alone on an idle network from its
  // start to its end: later calls of run() for it replay this outcome.
  void record_flow_run(const CollectiveTask& spec, int64_t duration, uint64_t messages,
                       std::vector<LinkDelta> usage);
  // Adds what the collectives run so far put on each link (bytes, busy time, peak concurrent messages) to
  // `usage` (indexed by link id). An evaluation keeps its usage by route with its memo, counted per run, and
  // spreads it over the links only here; links where messages overlapped get a correction (the overlap, not
  // busy twice, and the peak).
  void add_usage(std::vector<LinkUsage>& usage) const;

 private:
  class Evaluation;
  friend class Evaluation;
  struct RouteUsage {  // what one evaluation's messages put on one route
    const std::vector<LinkId>* route;
    double bytes;
    int64_t busy_ps;
  };
  struct LinkFix {  // where one evaluation's messages overlapped on a link
    LinkId link;
    int64_t overlap_ps;  // busy time counted twice by the routes' usage
    uint32_t peak;       // the most messages on the link at once
  };
  struct Memo {
    const CollectivePlan* plan = nullptr;
    const std::vector<VertexId>* members = nullptr;
    bool cpu_servers = false;
    uint32_t first_server = 0;
    FastOutcome outcome;
    std::vector<RouteUsage> usage;
    std::vector<LinkFix> fixes;
    uint64_t runs = 0;  // collectives it stood for
    // A recorded flow-model run (when the fast path declined), and how many runs replayed it.
    bool recorded = false;
    FastOutcome flow_outcome;
    std::vector<LinkDelta> flow_usage;
    uint64_t replays = 0;
  };
  Memo* find(const CollectiveTask& spec);

  Transport& transport_;
  std::vector<Memo> memo_;
  // Link scratch shared by evaluations (sized on first use, reset after each).
  struct Interval {  // a message on a link: [start, end) at `rate` (bytes/s), from round `round`
    int64_t start, end;
    double rate;
    uint64_t round;
    int64_t hi() const { return std::max(end, start + 1); }  // a message shorter than 1 ps holds its instant
  };
  struct LinkState {
    int64_t last_end = INT64_MIN;  // the latest hi() of a message on the link
    int64_t hard_end = INT64_MIN;  // messages draining before this are declined (intervals no longer kept)
    int64_t base_end = INT64_MIN;  // last_end when the current round first put a message on the link
    uint64_t round = 0;            // the last round (round_id_) that put a message on the link
    bool touched = false;          // in touched_
    std::vector<Interval> live;    // the intervals a later message may still meet
  };
  std::vector<LinkState> links_;
  std::vector<LinkId> touched_;  // links whose state is set
  uint64_t round_id_ = 0;
};

}  // namespace ddlsim
