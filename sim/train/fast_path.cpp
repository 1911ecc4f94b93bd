#include "sim/train/fast_path.hpp"

#include <algorithm>

#include "sim/core/interrupt.hpp"

namespace ddlsim {

// Max-plus evaluation of a round plan when every message gets its standalone rate: a member starts round s+1
// at max(its sends' ends, its receives' ends, its start of round s + the reduction round s carries) + the
// reduction after round s (round_reduction). That holds exactly iff, on every link and at
// every instant, the standalone rates of the messages on it sum to at most its capacity (then that allocation
// is feasible and every flow sits at its own upper bound - its cap, or its bottleneck link which it fills
// alone - so it is the max-min one). The evaluation keeps each link's message intervals [drain, end) with
// their rates. A message that starts at or after everything seen on its links is checked in O(1) per link
// (the common case: one message at a time); otherwise the intervals it meets are swept and their summed rate
// plus its own must stay within the capacity (relative slack 1e-9). Intervals that no later message can meet
// (ending before every member's current round start) are dropped. The check is exact except where the
// shortcuts below forget intervals: a message draining before a link's hard_end is declined.
//
// Two shortcuts keep long plans cheap:
// - Exclusive pattern: when a checked round had one message per member, no link carried two of them and each
//   started after everything before on its links, later rounds that repeat each member's (peer, size) use the
//   same links, one sender per link, one message after the other - they cannot overlap, so their link checks
//   are skipped; each member's last message is written back to its links before the next checked round
//   (materialize; its earlier ones become the links' hard_end). A skipped round whose pattern turns out to
//   differ is run again from its start, with the checks.
// - Periodic rounds: when two consecutive rounds have the same plan class and the second starts as a uniform
//   shift of the first, every further round of that class repeats the shift, so those rounds are skipped
//   arithmetically - provided that on every link the round's intervals start after everything before them and
//   span at most one shift: then the repeats never meet each other, and only the round's own overlaps
//   (already checked) recur. Its intervals move to the last repeat; the repeats before it become the
//   hard_end.
class FastPath::Evaluation {
 public:
  Evaluation(FastPath& fp, const CollectiveTask& spec, Time now);
  // Runs every round; on success fills `usage` with what its messages put on their routes.
  FastOutcome run(std::vector<RouteUsage>& usage, std::vector<LinkFix>& fixes);

 private:
  // Per member, the message it sent last (most plans send the same shape round after round).
  struct MessageShape {
    uint32_t peer = UINT32_MAX;
    double bytes = -1;
    int64_t carry = 0;  // the fused reduction it was paced by (ps)
    bool streamed = false;
    const std::vector<LinkId>* route = nullptr;
    const Transport::Path* path = nullptr;  // route's, latency's and capacity's source
    int64_t latency = 0, duration = 0;
    double rate = 0;
    double wire = 1;  // bytes on its links per payload byte
  };
  void begin_round(uint32_t s);
  bool skipped_round(uint32_t s);
  void checked_round(uint32_t s);
  bool checked_send(uint32_t r, const Send& snd);
  LinkState& touch(LinkId l);
  bool place(LinkId l, int64_t start, int64_t end, double rate);
  bool fits(LinkId l, LinkState& ls, const Interval& iv);
  void reduce_step();
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
  std::vector<RoundReduction> reduction_;  // each member's in the current round
  std::vector<int64_t> carry_;             // reduction_[r].carry in ps
  std::vector<LinkId> touched_round_;      // links the current checked round put messages on
  std::vector<Send> sends_;
  std::vector<MessageShape> shapes_;      // each member's last message
  std::vector<MessageShape> alt_shapes_;  // the one before it, where it differed (sized at first use)
  std::vector<int64_t> last_msg_end_;  // exclusive pattern: each member's last message end, not yet on links
  // Link usage by route: entries from round_begin_ on are the current checked round's; last_entry_ is each
  // member's latest entry (merged into while its route repeats); skipped_rounds_ counts rounds of the
  // exclusive pattern not yet recorded.
  std::vector<RouteUsage>* usage_ = nullptr;
  size_t round_begin_ = 0;
  // Overlaps found (for link usage): entries from fix_begin_ on are the current checked round's.
  std::vector<LinkFix> fixes_;
  size_t fix_begin_ = 0;
  int64_t watermark_ = INT64_MIN;  // no message of this round or a later one drains before it
  struct SweepEvent {
    int64_t t;
    int32_t count;
    double rate;
  };
  std::vector<SweepEvent> sweep_;
  std::vector<uint32_t> last_entry_;
  uint64_t skipped_rounds_ = 0;
  uint64_t messages_ = 0, round_messages_ = 0;
  bool ok_ = true;
  bool exclusive_ = false;       // the next round repeats a verified exclusive pattern: skip its checks
  bool pending_ = false;         // last_msg_end_ holds ends not yet written to the links
  bool round_exclusive_ = true;  // the current checked round had one message per member, one per link
};

namespace {
// Relative slack of the capacity check: the summed rates of a link may exceed its capacity by this much
// (the flow model's rates then differ from the standalone ones by as little).
constexpr double kCapacitySlack = 1e-9;
}  // namespace

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
      reduction_(p_),
      carry_(p_),
      shapes_(p_),
      last_msg_end_(p_, INT64_MIN),
      last_entry_(p_, UINT32_MAX) {
  if (fp.links_.empty()) fp.links_.resize(fp.transport_.net().link_count());
}

FastOutcome FastPath::Evaluation::run(std::vector<RouteUsage>& usage, std::vector<LinkFix>& fixes) {
  usage_ = &usage;
  uint32_t rounds = plan_.rounds();
  for (uint32_t s = 0; s < rounds && ok_; ++s) {
    bool skip = exclusive_;
    begin_round(s);
    if (skip && !skipped_round(s)) {  // the pattern changed: back to checking, from the start of this round
      skip = exclusive_ = false;
      begin_round(s);
    }
    if (!skip) {
      checked_round(s);
      exclusive_ = ok_ && round_exclusive_;
    }
    if (!ok_) break;
    messages_ += round_messages_;
    reduce_step();
    uint32_t more = skip_periodic(s);
    if (skip) {
      skipped_rounds_ += 1 + more;
    } else if (more > 0) {  // the skipped rounds repeat this one's messages and overlaps
      for (size_t i = round_begin_; i < usage.size(); ++i) {
        usage[i].bytes *= 1 + more;
        usage[i].busy_ps *= 1 + more;
      }
      for (size_t i = fix_begin_; i < fixes_.size(); ++i) fixes_[i].overlap_ps *= 1 + more;
    }
    s += more;
    prev_.swap(start_);
    start_.swap(next_);
  }
  for (LinkId l : fp_.touched_) {
    LinkState& ls = fp_.links_[l];
    ls.last_end = ls.hard_end = ls.base_end = INT64_MIN;
    ls.round = 0;
    ls.touched = false;
    ls.live.clear();
  }
  fp_.touched_.clear();
  if (ok_) {
    flush_skipped_usage();
    // One correction per link: the overlaps summed, the highest peak.
    std::sort(fixes_.begin(), fixes_.end(),
              [](const LinkFix& a, const LinkFix& b) { return a.link < b.link; });
    for (const LinkFix& f : fixes_)
      if (!fixes.empty() && fixes.back().link == f.link) {
        fixes.back().overlap_ps += f.overlap_ps;
        fixes.back().peak = std::max(fixes.back().peak, f.peak);
      } else {
        fixes.push_back(f);
      }
  } else {
    usage.clear();
  }
  int64_t end = now_;
  for (int64_t v : start_) end = std::max(end, v);
  return FastOutcome{ok_, end - now_, messages_};
}

void FastPath::Evaluation::begin_round(uint32_t s) {
  for (uint32_t r = 0; r < p_; ++r) {
    reduction_[r] = round_reduction(spec_, comm_, r, s);
    carry_[r] = Time::from_seconds(reduction_[r].carry).picoseconds();
  }
  std::fill(arrive_.begin(), arrive_.end(), INT64_MIN);
  touched_round_.clear();
  round_messages_ = 0;
  round_exclusive_ = true;
  round_begin_ = usage_->size();
  fix_begin_ = fixes_.size();
  ++fp_.round_id_;
  watermark_ = *std::min_element(start_.begin(), start_.end());
}

// A round of the exclusive pattern: every member sends one message of its last shape (no link checks).
// False, after writing the pending ends back to the links, when some member's messages differ.
bool FastPath::Evaluation::skipped_round(uint32_t s) {
  for (uint32_t r = 0; r < p_; ++r) {  // every member first: materialize must see the previous round's ends
    sends_.clear();
    plan_.sends(r, s, sends_);
    const MessageShape& shape = shapes_[r];
    if (sends_.size() != 1 || shape.route == nullptr || shape.peer != sends_[0].peer ||
        shape.bytes != sends_[0].bytes || shape.carry != carry_[r] || shape.streamed != sends_[0].streamed ||
        sends_[0].bytes <= 0) {
      materialize();
      return false;
    }
  }
  for (uint32_t r = 0; r < p_; ++r) {
    const MessageShape& shape = shapes_[r];
    send_end_[r] = start_[r];
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
    // One evaluation is one engine instant, and a round of 10^6 members is long: SIGINT/SIGTERM are looked
    // at here too (the engine looks every 4096 instants).
    if ((r & 4095) == 4095) throw_if_interrupted();
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

// One message with its link checks: false when a link could not carry it at its standalone rate next to the
// messages it meets there (or when it needs multipath).
bool FastPath::Evaluation::checked_send(uint32_t r, const Send& snd) {
  ++round_messages_;
  VertexId src = spec_.members[r], dst = spec_.members[snd.peer];
  int64_t end = start_[r];
  if (src == dst || snd.bytes <= 0) round_exclusive_ = false;
  if (src != dst) {
    if (comm_.multipath > 1 && !router_.same_node(src, dst)) return false;
    MessageShape& shape = shapes_[r];
    const MessageProtocol& protocol = plan_.protocol();
    auto same = [&](const MessageShape& m) {
      return m.peer == snd.peer && m.bytes == snd.bytes && m.carry == carry_[r] && m.streamed == snd.streamed;
    };
    // A member that alternates between two messages (a pipelined plan's step inside the node and the one
    // across) finds the other one in alt_shapes_: its route and timing are not looked up again.
    if (!same(shape) && shape.route != nullptr) {
      if (alt_shapes_.empty()) alt_shapes_.resize(p_);
      std::swap(shape, alt_shapes_[r]);
    }
    if (!same(shape)) {
      // The path to this peer, from either cached message to it (their bytes or pacing differ) or looked up.
      const Transport::Path* path = shape.peer == snd.peer ? shape.path : nullptr;
      if (!path && !alt_shapes_.empty() && alt_shapes_[r].peer == snd.peer) path = alt_shapes_[r].path;
      if (!path) path = &fp_.transport_.path(src, dst, protocol);
      Time latency;
      double rate;  // payload bytes per second; its links carry `wire` times as many
      fp_.transport_.message_timing(*path, snd.bytes, latency, rate,
                                    plan_.message_protocol(snd, reduction_[r].carry));
      const double wire = protocol.wire_for(path->same_node);
      shape = {snd.peer,
               snd.bytes,
               carry_[r],
               snd.streamed,
               path->route,
               path,
               latency.picoseconds(),
               snd.bytes > 0 ? Time::from_seconds(snd.bytes / rate).picoseconds() : 0,
               rate * wire,
               wire};
    }
    int64_t drain = start_[r] + shape.latency;
    end = drain + shape.duration;
    if (snd.bytes > 0) {
      for (LinkId l : *shape.route)
        if (!place(l, drain, end, shape.rate)) return false;
      record(r, shape.route, snd.bytes * shape.wire, shape.duration);
    }
  }
  send_end_[r] = std::max(send_end_[r], end);
  arrive_[snd.peer] = std::max(arrive_[snd.peer], end);
  return true;
}

FastPath::LinkState& FastPath::Evaluation::touch(LinkId l) {
  LinkState& ls = fp_.links_[l];
  if (!ls.touched) {
    ls.touched = true;
    fp_.touched_.push_back(l);
  }
  return ls;
}

// Puts the message [start, end) at `rate` on link l: false when the link cannot carry it.
bool FastPath::Evaluation::place(LinkId l, int64_t start, int64_t end, double rate) {
  LinkState& ls = touch(l);
  if (ls.round != fp_.round_id_) {  // the round's first message on l
    ls.round = fp_.round_id_;
    ls.base_end = ls.last_end;
    touched_round_.push_back(l);
  } else {
    round_exclusive_ = false;
  }
  Interval iv{start, end, rate, fp_.round_id_};
  if (start < ls.last_end) {  // it may meet earlier messages: sum the rates
    round_exclusive_ = false;
    if (start < ls.hard_end || !fits(l, ls, iv)) return false;
  } else if (ls.last_end <= watermark_) {
    ls.live.clear();  // no later message can meet any of them
  } else if (ls.live.size() >= 16) {
    std::erase_if(ls.live, [&](const Interval& x) { return x.hi() <= watermark_; });
  }
  ls.live.push_back(iv);
  ls.last_end = std::max(ls.last_end, iv.hi());
  return true;
}

// Whether link l carries `iv` next to its live intervals (dropping the dead ones); records the overlap for
// the link usage.
bool FastPath::Evaluation::fits(LinkId l, LinkState& ls, const Interval& iv) {
  int64_t floor = std::max(ls.hard_end, watermark_);
  int64_t start = iv.start, end = iv.end, hi = iv.hi();
  sweep_.clear();
  Interval one{};
  for (size_t i = 0; i < ls.live.size();) {
    const Interval& x = ls.live[i];
    if (x.hi() <= floor) {
      ls.live[i] = ls.live.back();
      ls.live.pop_back();
      continue;
    }
    if (x.start < hi && x.hi() > start) {
      one = x;
      sweep_.push_back({std::max(x.start, start), 1, x.rate});
      sweep_.push_back({std::min(x.hi(), hi), -1, -x.rate});
    }
    ++i;
  }
  if (sweep_.empty()) return true;
  double load = 0;
  int32_t count = 0, peak = 0;
  int64_t covered = 0;  // of the message's real interval, the time some other message is on the link
  if (sweep_.size() == 2) {
    load = one.rate;
    peak = 1;
    covered = std::max<int64_t>(0, std::min(one.end, end) - std::max(one.start, start));
  } else {
    std::sort(sweep_.begin(), sweep_.end(), [](const SweepEvent& a, const SweepEvent& b) {
      return a.t != b.t ? a.t < b.t : a.count < b.count;  // ends before starts at one instant
    });
    double cur = 0;
    int64_t since = 0;
    for (const SweepEvent& e : sweep_) {
      if (e.count > 0 && count == 0) since = e.t;
      cur += e.rate;
      count += e.count;
      if (count == 0) {
        cur = 0;  // no drift in the running sum across idle gaps
        covered += std::max<int64_t>(0, std::min(e.t, end) - std::max(since, start));
      }
      load = std::max(load, cur);
      peak = std::max(peak, count);
    }
  }
  // An incast link's capacity with the most messages on it at once, each counted a sender: at most its
  // capacity with the senders it really has (the goodput falls with senders), so the check stays exact.
  double capacity =
      fp_.transport_.net().capacity_with(l, static_cast<uint32_t>(peak + 1)) * (1 + kCapacitySlack);
  if (load + iv.rate > capacity) return false;
  fixes_.push_back({l, covered, static_cast<uint32_t>(peak + 1)});
  return true;
}

// Each member starts the next round when its sends and receives are done, the reduction its round carries
// is done, and it has reduced what it got (unless its next round carries that).
void FastPath::Evaluation::reduce_step() {
  for (uint32_t r = 0; r < p_; ++r)
    next_[r] = std::max({start_[r] + carry_[r], send_end_[r], arrive_[r]}) +
               Time::from_seconds(reduction_[r].after).picoseconds();
}

RoundReduction round_reduction(const CollectiveTask& spec, const CommModel& comm, uint32_t r, uint32_t s) {
  const CollectivePlan& plan = *spec.plan;
  auto seconds = [&](uint32_t round) {
    double bytes = plan.reduce_bytes(r, round);
    if (bytes <= 0) return 0.0;
    bool cpu = spec.reduce_on_cpu_for_servers && r >= spec.first_server;
    return comm.reduce_seconds(bytes, plan.reduce_operand(r, round), cpu);
  };
  RoundReduction out;
  bool fused = plan.fuses_reductions();
  if (fused && s > 0) out.carry = seconds(s - 1);
  if (!fused || s + 1 == plan.rounds()) out.after = seconds(s);
  return out;
}

// When round s repeats round s-1 shifted uniformly, the further rounds of its class repeat the shift: moves
// every clock past them and returns how many were skipped.
uint32_t FastPath::Evaluation::skip_periodic(uint32_t s) {
  uint32_t rounds = plan_.rounds();
  if (s < 1 || plan_.step_class(s) != plan_.step_class(s - 1)) return 0;
  int64_t shift = start_[0] - prev_[0];
  bool uniform = true;
  for (uint32_t r = 1; r < p_ && uniform; ++r) uniform = start_[r] - prev_[r] == shift;
  uint32_t more = 0;
  while (uniform && s + 1 + more < rounds && plan_.step_class(s + 1 + more) == plan_.step_class(s)) ++more;
  if (!uniform || more == 0) return 0;
  // On each link the round's intervals must start after everything before them and span at most one shift.
  uint64_t round = fp_.round_id_;
  for (LinkId l : touched_round_) {
    const LinkState& ls = fp_.links_[l];
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (const Interval& x : ls.live)
      if (x.round == round) {
        lo = std::min(lo, x.start);
        hi = std::max(hi, x.hi());
      }
    if (lo < ls.base_end || hi - lo > shift) return 0;
  }
  int64_t moved = static_cast<int64_t>(more) * shift;
  for (uint32_t r = 0; r < p_; ++r) next_[r] += moved;
  // The round's intervals move to the last repeat; what came before them (the repeats included) ends by its
  // start.
  for (LinkId l : touched_round_) {
    LinkState& ls = fp_.links_[l];
    std::erase_if(ls.live, [&](const Interval& x) { return x.round != round; });
    int64_t lo = INT64_MAX;
    for (Interval& x : ls.live) {
      x.start += moved;
      x.end += moved;
      lo = std::min(lo, x.start);
    }
    ls.hard_end = std::max(ls.hard_end, lo);
    ls.last_end += moved;
  }
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
    const MessageShape& shape = shapes_[r];
    if (shape.route == nullptr || last_msg_end_[r] == INT64_MIN) continue;
    // Its last message is kept; its earlier ones (one sender per link) end before that one drains.
    Interval iv{last_msg_end_[r] - shape.duration, last_msg_end_[r], shape.rate, 0};
    for (LinkId l : *shape.route) {
      LinkState& ls = touch(l);
      ls.hard_end = std::max(ls.hard_end, iv.start);
      ls.live.push_back(iv);
      ls.last_end = std::max(ls.last_end, iv.hi());
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
    double bytes = shape.bytes * shape.wire * static_cast<double>(skipped_rounds_);
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
    memo = &memo_.emplace_back();
    memo->plan = spec.plan.get();
    memo->members = &spec.members;
    memo->cpu_servers = spec.reduce_on_cpu_for_servers;
    memo->first_server = spec.first_server;
    Evaluation eval(*this, spec, now);
    memo->outcome = eval.run(memo->usage, memo->fixes);
    // The library's own cost of the call comes before the first round (the flow model waits for it too).
    if (memo->outcome.ok) memo->outcome.duration += spec.plan->protocol().base.picoseconds();
  }
  if (memo->outcome.ok) {
    ++memo->runs;
    return memo->outcome;
  }
  if (memo->recorded) {
    ++memo->replays;
    return memo->flow_outcome;
  }
  return memo->outcome;
}

void FastPath::record_flow_run(const CollectiveTask& spec, int64_t duration, uint64_t messages,
                               std::vector<LinkDelta> usage) {
  Memo* memo = find(spec);
  if (!memo || memo->outcome.ok || memo->recorded) return;
  memo->recorded = true;
  memo->flow_outcome = FastOutcome{true, duration, messages, true};
  memo->flow_usage = std::move(usage);
}

void FastPath::add_usage(std::vector<LinkUsage>& usage) const {
  for (const Memo& m : memo_) {
    // Replays of a recorded flow-model run (the recorded run itself is in the flow network's usage, peaks
    // included).
    for (const LinkDelta& d : m.flow_usage) {
      LinkUsage& lu = usage.at(d.link);
      lu.bytes += d.bytes * static_cast<double>(m.replays);
      lu.busy_s += Time::ps(d.busy_ps * static_cast<int64_t>(m.replays)).seconds();
    }
    if (m.runs == 0) continue;
    int64_t runs = static_cast<int64_t>(m.runs);
    for (const RouteUsage& u : m.usage)
      for (LinkId l : *u.route) {
        LinkUsage& lu = usage.at(l);
        lu.bytes += u.bytes * static_cast<double>(runs);
        lu.busy_s += Time::ps(u.busy_ps * runs).seconds();
        lu.peak_flows = std::max<uint32_t>(lu.peak_flows, 1);
      }
    for (const LinkFix& f : m.fixes) {
      LinkUsage& lu = usage.at(f.link);
      lu.busy_s -= Time::ps(f.overlap_ps * runs).seconds();
      lu.peak_flows = std::max(lu.peak_flows, f.peak);
    }
  }
}

}  // namespace ddlsim
