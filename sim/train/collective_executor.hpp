#pragma once
// Runs collective tasks for the Engine. An isolated collective that starts on an idle network goes by the
// max-plus fast path (FastPath) when that is exact, or replays the recorded flow-model run of the same
// collective alone on an idle network; every other one runs its round plan on the flow model: a
// per-member state machine that enters round s when its sends and receives of round s-1 are done and it has
// reduced what it received (EventKind::RoundDone after the reduce time). Messages that arrive before their
// receiver reached their round are counted early. Messages are flows tagged with message_tag(); a message
// from a member to itself completes by an EventKind::MessageDone event.
//
// The run recorded for replays also knows every message that can be in flight with any other (one round of
// each round class, for every member): links their routes' standalone rates cannot oversubscribe are
// unbound, and a message on unbound links only is a direct message (Transport::send), not a flow.
//
// Periodic rounds on the flow model. A collective that runs alone (the run that is recorded for replays) is a
// deterministic system whose inputs are its plan's rounds. When member 0 enters round s and the whole state
// (every member's round relative to s, its sends and receives left and pending reduction, the messages in
// flight with their flows' bytes left and rates, the early arrivals) equals the state when it entered round
// s-1, one round later and P later, then the run from there repeats that period for as long as the plan's
// rounds repeat (CollectivePlan::round_class): the rounds of every member advance by K and the run ends K·P
// later, with K periods' messages and link usage added. A ring whose messages share links settles into such
// a period after its slowest hops' delays have gone round. The state is compared only when every member's
// last two rounds took equally long (a necessary condition, tracked as members enter rounds).
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "sim/train/event_core.hpp"
#include "sim/train/fast_path.hpp"
#include "sim/train/task_graph.hpp"
#include "sim/train/transport.hpp"

namespace ddlsim {

class CollectiveExecutor {
 public:
  // `done(t)` is called when collective task t ends by the flow model; fast-path collectives and empty plans
  // end by an EventKind::TaskEnd event instead.
  CollectiveExecutor(Transport& transport, EventQueue& events, EngineStats& stats,
                     std::function<void(TaskId)> done);
  ~CollectiveExecutor();
  // Starts collective task t at `now`; `fast` allows the fast path.
  void start(TaskId t, const CollectiveTask& spec, bool fast, Time now);
  // Flow tags of collective messages have the top bit set.
  static bool is_message_tag(uint64_t tag) { return (tag & kMessageTag) != 0; }
  // A flow with a message tag completed.
  void flow_done(uint64_t tag, Time now) {
    message_done(static_cast<uint32_t>((tag >> 32) & 0x7fffffff), static_cast<uint32_t>(tag), now);
  }
  // The MessageDone event (a, b) = (run, message slot).
  void message_done(uint32_t run, uint32_t slot, Time now);
  // The RoundDone event (a, b) = (run, member): its reduction ended, it enters its next round.
  void round_done(uint32_t run, uint32_t member, Time now);
  // Adds the fast path's link usage, and what skipped periods stood for, to `usage` (the flow network's,
  // indexed by link id).
  void add_fast_usage(std::vector<LinkUsage>& usage) const;

 private:
  static constexpr uint64_t kMessageTag = 1ULL << 63;
  struct Message {
    uint32_t from, to, round, parts;
    Time sent;
  };
  struct Run;
  struct Snapshot;
  // The collective may run alone: isolated by its graph, on an idle network.
  bool alone(const CollectiveTask& spec, Time now) const {
    return spec.isolated && transport_.idle() && now >= transport_.isolated_until();
  }
  bool start_fast(TaskId t, const CollectiveTask& spec, Time now);
  void record(const Run& run, Time now);
  void enter_round(uint32_t run, uint32_t member, uint32_t round, Time now);
  void send_round(uint32_t id, Run& run, uint32_t member, uint32_t round, Time now);
  void round_complete(uint32_t run, uint32_t member, Time now);
  Time reduce_delay(const Run& run, uint32_t member, Time now) const;
  void round_done_at(Run& run, uint32_t id, uint32_t member, Time t);
  void note_entry(Run& run, uint32_t member, Time now);
  bool class_messages(const CollectiveTask& spec, std::vector<Transport::MessageEnds>& messages) const;
  std::vector<char> unbound_links(const Run& run);
  static constexpr uint64_t kUnboundBudget = 1u << 22;  // member-rounds looked at for unbound_links
  uint32_t skip_periods(uint32_t id, Run& run, uint32_t s, Time now);
  bool snapshot(uint32_t id, const Run& run, uint32_t s, Time now, Snapshot& out) const;

  Transport& transport_;
  EventQueue& events_;
  EngineStats& stats_;
  std::function<void(TaskId)> done_;
  FastPath fast_;
  std::vector<std::unique_ptr<Run>> runs_;
  std::vector<LinkDelta> skipped_usage_;               // what skipped periods put on links
  std::unordered_set<const CollectivePlan*> adapted_;  // plans whose routes adapt_routes has seen
};

}  // namespace ddlsim
