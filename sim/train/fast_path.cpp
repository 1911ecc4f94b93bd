#include "sim/train/fast_path.hpp"

#include <algorithm>

namespace ddlsim {

// Max-plus evaluation of a round plan when every message would get its route's full rate: a member starts
// round s+1 at max(its sends' ends, its receives' ends) + reduce time. That holds exactly iff no two messages
// are on a link at the same time, which the evaluation checks conservatively (messages are visited round by
// round, so a message that starts before the last end seen on one of its links aborts the fast path even if
// the true intervals were disjoint).
//
// Two shortcuts keep long plans cheap:
// - Exclusive pattern: when a checked round had one message per member and no link carried two of them, later
//   rounds that repeat each member's (peer, size) use the same links, one sender per link, one message after
//   the other - they cannot overlap, so their link checks are skipped; each member's last message end is
//   written back to its links before the next checked round (materialize). A skipped round whose pattern
//   turns out to differ is run again from its start, with the checks.
// - Periodic rounds: when two consecutive rounds have the same plan class and the second starts as a uniform
//   shift of the first, every further round of that class repeats the shift, so those rounds are skipped
//   arithmetically.
class FastPath::Evaluation {
 public:
  Evaluation(FastPath& fp, const CollectiveTask& spec, Time now);
  // Runs every round; on success fills `usage` with what its messages put on their routes.
  FastOutcome run(std::vector<RouteUsage>& usage);

 private:
  // Per member, the message it sent last (most plans send the same shape round after round).
  struct MessageShape {
    uint32_t peer = UINT32_MAX;
    double bytes = -1;
    const std::vector<LinkId>* route = nullptr;
    int64_t latency = 0, duration = 0;
  };
  void begin_round();
  bool skipped_round(uint32_t s);
  void checked_round(uint32_t s);
  bool checked_send(uint32_t r, const Send& snd);
  void reduce_step(uint32_t s);
  uint32_t skip_periodic(uint32_t s);
  void materialize();
  void record(uint32_t r, const std::vector<LinkId>* route, double bytes, int64_t busy_ps);
  void flush_skipped_usage();

  FastPath& fp_;
  const CollectiveTask& spec_;
  const CollectivePlan& plan_;
  const CommModel& comm_;
  Router& router_;
  int64_t now_;
  uint32_t p_;
  std::vector<int64_t> start_, next_, prev_, arrive_, send_end_;
  std::vector<LinkId> touched_round_;  // links the current checked round put messages on
  std::vector<Send> sends_;
  std::vector<MessageShape> shapes_;
  std::vector<int64_t> last_msg_end_;  // exclusive pattern: each member's last message end, not yet on links
  // Link usage by route: entries from round_begin_ on are the current checked round's; last_entry_ is each
  // member's latest entry (merged into while its route repeats); skipped_rounds_ counts rounds of the
  // exclusive pattern not yet recorded.
  std::vector<RouteUsage>* usage_ = nullptr;
  size_t round_begin_ = 0;
  std::vector<uint32_t> last_entry_;
  uint64_t skipped_rounds_ = 0;
  uint64_t messages_ = 0, round_messages_ = 0;
  bool ok_ = true;
  bool exclusive_ = false;       // the next round repeats a verified exclusive pattern: skip its checks
  bool pending_ = false;         // last_msg_end_ holds ends not yet written to the links
  bool round_exclusive_ = true;  // the current checked round had one message per member, one per link
};

FastPath::Evaluation::Evaluation(FastPath& fp, const CollectiveTask& spec, Time now)
    : fp_(fp),
      spec_(spec),
      plan_(*spec.plan),
      comm_(fp.transport_.comm()),
      router_(fp.transport_.router()),
      now_(now.picoseconds()),
      p_(plan_.members()),
      start_(p_, now_),
      next_(p_),
      prev_(p_),
      arrive_(p_),
      send_end_(p_),
      shapes_(p_),
      last_msg_end_(p_, INT64_MIN),
      last_entry_(p_, UINT32_MAX) {
  size_t links = fp.transport_.net().link_count();
  if (fp.last_end_.empty()) fp.last_end_.assign(links, INT64_MIN);
  if (fp.link_round_.empty()) fp.link_round_.assign(links, 0);
}

FastOutcome FastPath::Evaluation::run(std::vector<RouteUsage>& usage) {
  usage_ = &usage;
  uint32_t rounds = plan_.rounds();
  for (uint32_t s = 0; s < rounds && ok_; ++s) {
    bool skip = exclusive_;
    begin_round();
    if (skip && !skipped_round(s)) {  // the pattern changed: back to checking, from the start of this round
      skip = exclusive_ = false;
      begin_round();
    }
    if (!skip) {
      checked_round(s);
      exclusive_ = ok_ && round_exclusive_;
    }
    if (!ok_) break;
    messages_ += round_messages_;
    reduce_step(s);
    uint32_t more = skip_periodic(s);
    if (skip) {
      skipped_rounds_ += 1 + more;
    } else if (more > 0) {  // the skipped rounds repeat this one's messages
      for (size_t i = round_begin_; i < usage.size(); ++i) {
        usage[i].bytes *= 1 + more;
        usage[i].busy_ps *= 1 + more;
      }
    }
    s += more;
    prev_.swap(start_);
    start_.swap(next_);
  }
  for (LinkId l : fp_.touched_) fp_.last_end_[l] = INT64_MIN;
  fp_.touched_.clear();
  if (ok_)
    flush_skipped_usage();
  else
    usage.clear();
  int64_t end = now_;
  for (int64_t v : start_) end = std::max(end, v);
  return FastOutcome{ok_, end - now_, messages_};
}

void FastPath::Evaluation::begin_round() {
  std::fill(arrive_.begin(), arrive_.end(), INT64_MIN);
  touched_round_.clear();
  round_messages_ = 0;
  round_exclusive_ = true;
  round_begin_ = usage_->size();
  ++fp_.round_id_;
}

// A round of the exclusive pattern: every member sends one message of its last shape (no link checks).
// False, after writing the pending ends back to the links, when some member's messages differ.
bool FastPath::Evaluation::skipped_round(uint32_t s) {
  for (uint32_t r = 0; r < p_; ++r) {
    send_end_[r] = start_[r];
    sends_.clear();
    plan_.sends(r, s, sends_);
    const MessageShape& shape = shapes_[r];
    if (sends_.size() != 1 || shape.route == nullptr || shape.peer != sends_[0].peer ||
        shape.bytes != sends_[0].bytes || sends_[0].bytes <= 0) {
      materialize();
      return false;
    }
    int64_t end = start_[r] + shape.latency + shape.duration;
    last_msg_end_[r] = end;
    pending_ = true;
    ++round_messages_;
    send_end_[r] = std::max(send_end_[r], end);
    arrive_[shape.peer] = std::max(arrive_[shape.peer], end);
  }
  return true;
}

void FastPath::Evaluation::checked_round(uint32_t s) {
  for (uint32_t r = 0; r < p_ && ok_; ++r) {
    send_end_[r] = start_[r];
    sends_.clear();
    plan_.sends(r, s, sends_);
    if (sends_.size() != 1) round_exclusive_ = false;
    for (const Send& snd : sends_)
      if (!checked_send(r, snd)) {
        ok_ = false;
        break;
      }
  }
}

// One message with its link checks: false when it would overlap another on a link (or needs multipath).
bool FastPath::Evaluation::checked_send(uint32_t r, const Send& snd) {
  ++round_messages_;
  VertexId src = spec_.members[r], dst = spec_.members[snd.peer];
  int64_t end = start_[r];
  if (src == dst || snd.bytes <= 0) round_exclusive_ = false;
  if (src != dst) {
    if (comm_.multipath > 1 && !router_.same_node(src, dst)) return false;
    MessageShape& shape = shapes_[r];
    if (shape.peer != snd.peer || shape.bytes != snd.bytes) {
      Time latency;
      double rate;
      fp_.transport_.message_timing(src, dst, snd.bytes, latency, rate);
      shape = {snd.peer, snd.bytes, &router_.route(src, dst), latency.picoseconds(),
               snd.bytes > 0 ? Time::from_seconds(snd.bytes / rate).picoseconds() : 0};
    }
    int64_t drain = start_[r] + shape.latency;
    end = drain + shape.duration;
    if (snd.bytes > 0) {
      for (LinkId l : *shape.route) {
        if (drain < fp_.last_end_[l]) return false;
        if (fp_.last_end_[l] == INT64_MIN) fp_.touched_.push_back(l);
        fp_.last_end_[l] = std::max(fp_.last_end_[l], end);
        touched_round_.push_back(l);
        if (fp_.link_round_[l] == fp_.round_id_) round_exclusive_ = false;
        fp_.link_round_[l] = fp_.round_id_;
      }
      record(r, shape.route, snd.bytes, shape.duration);
    }
  }
  send_end_[r] = std::max(send_end_[r], end);
  arrive_[snd.peer] = std::max(arrive_[snd.peer], end);
  return true;
}

// Each member starts the next round when its sends and receives are done and it has reduced what it got.
void FastPath::Evaluation::reduce_step(uint32_t s) {
  for (uint32_t r = 0; r < p_; ++r) {
    double rb = plan_.reduce_bytes(r, s);
    bool cpu = spec_.reduce_on_cpu_for_servers && r >= spec_.first_server;
    int64_t reduce =
        rb > 0 ? Time::from_seconds(comm_.reduce_seconds(rb, plan_.reduce_operand(r, s), cpu)).picoseconds()
               : 0;
    next_[r] = std::max({start_[r], send_end_[r], arrive_[r]}) + reduce;
  }
}

// When round s repeats round s-1 shifted uniformly, the further rounds of its class repeat the shift: moves
// every clock past them and returns how many were skipped.
uint32_t FastPath::Evaluation::skip_periodic(uint32_t s) {
  uint32_t rounds = plan_.rounds();
  if (s < 1 || plan_.round_class(s) != plan_.round_class(s - 1)) return 0;
  int64_t shift = start_[0] - prev_[0];
  bool uniform = true;
  for (uint32_t r = 1; r < p_ && uniform; ++r) uniform = start_[r] - prev_[r] == shift;
  uint32_t more = 0;
  while (uniform && s + 1 + more < rounds && plan_.round_class(s + 1 + more) == plan_.round_class(s)) ++more;
  if (!uniform || more == 0) return 0;
  int64_t moved = static_cast<int64_t>(more) * shift;
  for (uint32_t r = 0; r < p_; ++r) next_[r] += moved;
  std::sort(touched_round_.begin(), touched_round_.end());
  touched_round_.erase(std::unique(touched_round_.begin(), touched_round_.end()), touched_round_.end());
  for (LinkId l : touched_round_) fp_.last_end_[l] += moved;
  if (pending_)
    for (int64_t& e : last_msg_end_)
      if (e != INT64_MIN) e += moved;
  messages_ += more * round_messages_;
  return more;
}

// Writes each member's last message end of the exclusive pattern back to its links.
void FastPath::Evaluation::materialize() {
  flush_skipped_usage();
  for (uint32_t r = 0; r < p_ && pending_; ++r) {
    if (shapes_[r].route == nullptr || last_msg_end_[r] == INT64_MIN) continue;
    for (LinkId l : *shapes_[r].route) {
      if (fp_.last_end_[l] == INT64_MIN) fp_.touched_.push_back(l);
      fp_.last_end_[l] = std::max(fp_.last_end_[l], last_msg_end_[r]);
    }
  }
  pending_ = false;
}

// Member r's message of `bytes` over `route`: merged into its latest entry when that has the same route and
// (for a checked round's message) belongs to this round.
void FastPath::Evaluation::record(uint32_t r, const std::vector<LinkId>* route, double bytes,
                                  int64_t busy_ps) {
  std::vector<RouteUsage>& usage = *usage_;
  uint32_t& e = last_entry_[r];
  if (e != UINT32_MAX && usage[e].route == route && e >= round_begin_) {
    usage[e].bytes += bytes;
    usage[e].busy_ps += busy_ps;
    return;
  }
  e = static_cast<uint32_t>(usage.size());
  usage.push_back({route, bytes, busy_ps});
}

// The rounds of the exclusive pattern not yet recorded: one message of its shape per member and round (merged
// into each member's latest entry, which precedes the current round).
void FastPath::Evaluation::flush_skipped_usage() {
  if (skipped_rounds_ == 0) return;
  std::vector<RouteUsage>& usage = *usage_;
  for (uint32_t r = 0; r < p_; ++r) {
    const MessageShape& shape = shapes_[r];
    if (shape.route == nullptr) continue;
    double bytes = shape.bytes * static_cast<double>(skipped_rounds_);
    int64_t busy = shape.duration * static_cast<int64_t>(skipped_rounds_);
    uint32_t e = last_entry_[r];
    if (e != UINT32_MAX && usage[e].route == shape.route) {
      usage[e].bytes += bytes;
      usage[e].busy_ps += busy;
    } else {
      last_entry_[r] = static_cast<uint32_t>(usage.size());
      usage.push_back({shape.route, bytes, busy});
    }
  }
  skipped_rounds_ = 0;
}

FastPath::Memo* FastPath::find(const CollectiveTask& spec) {
  Memo* found = nullptr;
  for (Memo& m : memo_)
    if (m.plan == spec.plan.get() && m.cpu_servers == spec.reduce_on_cpu_for_servers &&
        m.first_server == spec.first_server && (m.members == &spec.members || *m.members == spec.members))
      found = &m;
  return found;
}

FastOutcome FastPath::run(const CollectiveTask& spec, Time now) {
  Memo* memo = find(spec);
  if (!memo) {
    memo_.push_back(
        {spec.plan.get(), &spec.members, spec.reduce_on_cpu_for_servers, spec.first_server, {}, {}});
    memo = &memo_.back();
    memo->outcome = Evaluation(*this, spec, now).run(memo->usage);
  }
  if (memo->outcome.ok) ++memo->runs;
  return memo->outcome;
}

void FastPath::add_usage(std::vector<LinkUsage>& usage) const {
  for (const Memo& m : memo_) {
    if (m.runs == 0) continue;
    int64_t runs = static_cast<int64_t>(m.runs);
    for (const RouteUsage& u : m.usage)
      for (LinkId l : *u.route) {
        LinkUsage& lu = usage.at(l);
        lu.bytes += u.bytes * static_cast<double>(runs);
        lu.busy_s += Time::ps(u.busy_ps * runs).seconds();
        lu.peak_flows = std::max<uint32_t>(lu.peak_flows, 1);
      }
  }
}

}  // namespace ddlsim
