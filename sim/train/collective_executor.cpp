#include "sim/train/collective_executor.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

namespace ddlsim {

namespace {
void add_deltas(std::vector<LinkUsage>& usage, const std::vector<LinkDelta>& deltas) {
  for (const LinkDelta& d : deltas) {
    usage.at(d.link).bytes += d.bytes;
    usage.at(d.link).busy_s += Time::ps(d.busy_ps).seconds();
  }
}
}  // namespace

struct CollectiveExecutor::Run {
  TaskId task;
  const CollectiveTask* spec;
  const CollectivePlan* plan;
  std::vector<uint32_t> round, sends_left, recvs_left;
  std::unordered_map<uint64_t, uint32_t>
      early;  // (member << 32 | round) -> arrivals before the member got there
  std::vector<Message> messages;
  std::vector<uint32_t> free_messages;
  uint32_t done = 0;
  std::vector<Send> scratch;
  // Per member, for its current round: when the reduction it carries ends (round_reduction), and the
  // reduction after it.
  std::vector<Time> carried, after;
  // Recording: the collective started alone on an idle network, so its flow-model run is recorded for
  // replays (unless other flows turn out to have shared the network meanwhile).
  bool recording = false;
  Time start;
  uint64_t parts_before = 0, parts = 0, messages_before = 0;  // message parts sent (flows or direct)
  std::vector<LinkUsage> usage_before;
  // Periodic skipping (recording runs only): per member, when it last entered a round, how
  // long its round before took, whether that equals the one before it, and when its pending reduction ends
  // (Time::max(): none); how many members are steady; the state when member 0 entered its last round; the
  // time skipped periods stood for and what they put on links.
  std::vector<int64_t> entered, took;
  std::vector<char> steady;
  std::vector<Time> reducing;
  uint32_t steady_members = 0;
  std::unique_ptr<Snapshot> last;
  int64_t skipped = 0;
  std::vector<LinkDelta> skipped_usage;
  std::vector<char> unbound;  // links none of its messages can oversubscribe (Transport::unbound_links)
  // Per member, the paths to the peers it sent to last, most recent first: a member sends to the same few
  // peers round after round, and this spares the transport's path lookup for them.
  struct PeerPath {
    uint32_t peer = UINT32_MAX, flag = 0;
    const Transport::Path* path = nullptr;
  };
  static constexpr size_t kPeerPaths = 4;
  std::vector<std::array<PeerPath, kPeerPaths>> peer_paths;
  const Transport::Path& path_to(Transport& transport, uint32_t m, uint32_t peer,
                                 const MessageProtocol& protocol) {
    if (peer_paths.empty()) peer_paths.resize(plan->members());
    std::array<PeerPath, kPeerPaths>& known = peer_paths[m];
    const uint32_t flag = Transport::rail(protocol);
    size_t i = 0;
    while (i < kPeerPaths && !(known[i].peer == peer && known[i].flag == flag)) ++i;
    PeerPath found =
        i < kPeerPaths
            ? known[i]
            : PeerPath{peer, flag, &transport.path(spec->members[m], spec->members[peer], protocol)};
    const size_t at = std::min(i, kPeerPaths - 1);  // found moves to the front; a new one drops the last
    std::rotate(known.begin(), known.begin() + at, known.begin() + at + 1);
    known[0] = found;
    return *found.path;
  }
};

// A run's state at member 0's entry into `round`, rounds relative to it and times to `at` (see the header).
struct CollectiveExecutor::Snapshot {
  uint32_t round = 0;
  Time at;
  uint32_t low = 0, high = 0;  // the lowest round anything is in or for, the highest a member is in
  std::vector<int64_t> state;  // members, messages in flight, early arrivals, flows (integers)
  std::vector<double> flows;   // each flow's bytes left and rate, in the order of `state`'s flows
  uint64_t messages = 0;       // stats messages
  std::vector<LinkUsage> usage;
  bool has_usage = false;
};

CollectiveExecutor::CollectiveExecutor(Transport& transport, EventQueue& events, EngineStats& stats,
                                       std::function<void(TaskId)> done)
    : transport_(transport), events_(events), stats_(stats), done_(std::move(done)), fast_(transport) {}

CollectiveExecutor::~CollectiveExecutor() = default;

// Member m's sends and receives of its round are done at `now`: the time until it may enter the next one.
Time CollectiveExecutor::reduce_delay(const Run& run, uint32_t m, Time now) const {
  return std::max(Time(), run.carried[m] - now) + run.after[m];
}

// The fast path needs the collective's isolation promise and an idle network; it then owns the network until
// the collective's end.
bool CollectiveExecutor::start_fast(TaskId t, const CollectiveTask& spec, Time now) {
  if (!alone(spec, now)) return false;
  FastOutcome out = fast_.run(spec, now);
  if (!out.ok) return false;
  stats_.messages += out.messages;
  if (out.replayed) {
    ++stats_.slow_collectives;
    ++stats_.replayed_collectives;
  } else {
    ++stats_.fast_collectives;
    stats_.fast_messages += out.messages;
  }
  Time end = Time::ps(now.picoseconds() + out.duration);
  transport_.isolate_until(end);
  events_.schedule(end, EventKind::TaskEnd, t);
  return true;
}

void CollectiveExecutor::start(TaskId t, const CollectiveTask& spec, bool fast, Time now) {
  // Adaptive routing: once per plan, before it first runs, its messages leave the links they would
  // oversubscribe together where a detour has room (Transport::adapt_routes).
  if (transport_.router().adaptive() && adapted_.insert(spec.plan.get()).second) {
    std::vector<Transport::MessageEnds> messages;
    if (class_messages(spec, messages)) transport_.adapt_routes(messages, spec.plan->protocol());
  }
  if (fast && start_fast(t, spec, now)) return;
  ++stats_.slow_collectives;
  auto run = std::make_unique<Run>();
  run->task = t;
  run->spec = &spec;
  run->plan = spec.plan.get();
  uint32_t p = run->plan->members();
  run->round.assign(p, 0);
  run->sends_left.assign(p, 0);
  run->recvs_left.assign(p, 0);
  run->carried.assign(p, Time());
  run->after.assign(p, Time());
  uint32_t id = static_cast<uint32_t>(runs_.size());
  if (fast && alone(spec, now)) {  // the fast path declined: record this run for the next ones
    run->recording = true;
    run->start = now;
    run->parts_before = transport_.parts_sent();
    run->messages_before = stats_.messages;
    run->usage_before = transport_.net().link_usage();
    run->entered.assign(p, now.picoseconds());
    run->took.assign(p, -1);
    run->steady.assign(p, 0);
    run->reducing.assign(p, Time::max());
    run->unbound = unbound_links(*run);
  }
  runs_.push_back(std::move(run));
  if (p == 0 || runs_[id]->plan->rounds() == 0) {
    runs_[id].reset();
    events_.schedule(now, EventKind::TaskEnd, t);
    return;
  }
  const Time base = runs_[id]->plan->protocol().base;
  if (base > Time()) {  // the library's own cost of the call, before the first round
    for (uint32_t m = 0; m < p; ++m) {
      runs_[id]->round[m] = UINT32_MAX;  // round_done enters round 0
      round_done_at(*runs_[id], id, m, now + base);
    }
    return;
  }
  for (uint32_t m = 0; m < p; ++m) enter_round(id, m, 0, now);
}

// Member m's messages of round s start; its receives still expected are counted (less the early ones).
inline void CollectiveExecutor::send_round(uint32_t id, Run& run, uint32_t m, uint32_t s, Time now) {
  run.scratch.clear();
  run.plan->sends(m, s, run.scratch);
  run.sends_left[m] = static_cast<uint32_t>(run.scratch.size());
  uint32_t recvs = run.plan->receives(m, s);
  if (!run.early.empty()) {
    auto it = run.early.find((static_cast<uint64_t>(m) << 32) | s);
    if (it != run.early.end()) {
      recvs -= it->second;
      run.early.erase(it);
    }
  }
  run.recvs_left[m] = recvs;
  const RoundReduction reduction = round_reduction(*run.spec, transport_.comm(), m, s);
  run.carried[m] = now + Time::from_seconds(reduction.carry);
  run.after[m] = Time::from_seconds(reduction.after);
  for (const Send& snd : run.scratch) {
    uint32_t slot;
    if (run.free_messages.empty()) {
      slot = static_cast<uint32_t>(run.messages.size());
      run.messages.push_back({});
    } else {
      slot = run.free_messages.back();
      run.free_messages.pop_back();
    }
    run.messages[slot] = Message{m, snd.peer, s, 1, now};
    ++stats_.messages;
    uint64_t tag = kMessageTag | (static_cast<uint64_t>(id) << 32) | slot;
    VertexId src = run.spec->members[m], dst = run.spec->members[snd.peer];
    if (src == dst) {
      events_.schedule(now, EventKind::MessageDone, id, slot);
    } else {
      const MessageProtocol protocol = run.plan->message_protocol(snd, reduction.carry);
      run.messages[slot].parts =
          transport_.send(run.path_to(transport_, m, snd.peer, protocol), src, dst, snd.bytes, tag, now,
                          protocol, run.unbound.empty() ? nullptr : &run.unbound);
      run.parts += run.messages[slot].parts;
    }
  }
}

// Member m enters round s (and the rounds after it that have nothing to wait for).
void CollectiveExecutor::enter_round(uint32_t id, uint32_t m, uint32_t s, Time now) {
  Run& run = *runs_[id];
  const CollectivePlan& plan = *run.plan;
  while (true) {
    if (run.recording && m == 0 && s < plan.rounds()) s += skip_periods(id, run, s, now);
    run.round[m] = s;
    if (s == plan.rounds()) {
      if (++run.done == plan.members()) {
        TaskId t = run.task;
        const Time end = now + Time::ps(run.skipped);
        // Direct messages and skipped periods took the isolation promise (no other message while it ran).
        if (run.recording && transport_.parts_sent() - run.parts_before != run.parts)
          throw std::logic_error("a transfer started while an isolated collective ran on the flow model");
        if (run.recording) record(run, end);
        skipped_usage_.insert(skipped_usage_.end(), run.skipped_usage.begin(), run.skipped_usage.end());
        runs_[id].reset();
        if (end > now) {  // the skipped periods still to come: the network stays this collective's until then
          transport_.isolate_until(end);
          events_.schedule(end, EventKind::TaskEnd, t);
        } else {
          done_(t);
        }
      }
      return;
    }
    if (run.recording) note_entry(run, m, now);
    send_round(id, run, m, s, now);
    if (run.sends_left[m] > 0 || run.recvs_left[m] > 0) return;
    Time delay = reduce_delay(run, m, now);
    if (delay > Time()) {
      round_done_at(run, id, m, now + delay);
      return;
    }
    ++s;
  }
}

void CollectiveExecutor::round_done_at(Run& run, uint32_t id, uint32_t m, Time t) {
  if (run.recording) run.reducing[m] = t;
  events_.schedule(t, EventKind::RoundDone, id, m);
}

// Every member's messages between distinct endpoints in one round of each round class (false when the plan
// is too large to look at whole).
bool CollectiveExecutor::class_messages(const CollectiveTask& spec,
                                        std::vector<Transport::MessageEnds>& messages) const {
  const CollectivePlan& plan = *spec.plan;
  std::vector<uint32_t> rounds, classes;
  uint64_t sends = 0;
  for (uint32_t s = 0; s < plan.rounds(); ++s) {
    uint32_t c = plan.round_class(s);
    if (std::find(classes.begin(), classes.end(), c) != classes.end()) continue;
    classes.push_back(c);
    rounds.push_back(s);
    sends += plan.members();
    if (sends > kUnboundBudget || classes.size() > 64) return false;
  }
  std::vector<Send> out;
  for (uint32_t s : rounds)
    for (uint32_t m = 0; m < plan.members(); ++m) {
      out.clear();
      plan.sends(m, s, out);
      for (const Send& x : out)
        if (spec.members[m] != spec.members[x.peer])
          messages.push_back({spec.members[m], spec.members[x.peer], x.bytes, x.channels, s});
    }
  return true;
}

// The links a run alone on the network cannot oversubscribe, from its class_messages (empty when there are
// too many to look at: then every message is a flow).
std::vector<char> CollectiveExecutor::unbound_links(const Run& run) {
  std::vector<Transport::MessageEnds> messages;
  if (!class_messages(*run.spec, messages)) return {};
  return transport_.unbound_links(messages, run.plan->protocol());
}

// Member m enters a round at `now`: is its round as long as the one before?
void CollectiveExecutor::note_entry(Run& run, uint32_t m, Time now) {
  int64_t took = now.picoseconds() - run.entered[m];
  char steady = took == run.took[m] ? 1 : 0;
  run.steady_members = run.steady_members + steady - run.steady[m];
  run.steady[m] = steady;
  run.took[m] = took;
  run.entered[m] = now.picoseconds();
}

// The state of run `id` as member 0 enters round s at `now` (before it does); false when it cannot be
// compared (a member still before its first round, or flows other than this run's on the network).
bool CollectiveExecutor::snapshot(uint32_t id, const Run& run, uint32_t s, Time now, Snapshot& out) const {
  const uint32_t p = run.plan->members();
  out.round = s;
  out.at = now;
  out.low = out.high = s;
  out.state.clear();
  out.flows.clear();
  auto rel = [s](uint32_t r) { return static_cast<int64_t>(r) - static_cast<int64_t>(s); };
  for (uint32_t m = 0; m < p; ++m) {
    uint32_t r = run.round[m];
    if (r >= run.plan->rounds()) return false;
    out.low = std::min(out.low, r);
    out.high = std::max(out.high, r);
    int64_t reducing = run.reducing[m] == Time::max() ? -1 : (run.reducing[m] - now).picoseconds();
    int64_t carried = run.carried[m] > now ? (run.carried[m] - now).picoseconds() : -1;
    out.state.insert(out.state.end(), {rel(r), run.sends_left[m], run.recvs_left[m], reducing, carried});
  }
  std::vector<std::array<int64_t, 5>> messages;
  for (const Message& g : run.messages) {
    if (g.parts == 0) continue;  // a free slot
    out.low = std::min(out.low, g.round);
    messages.push_back({g.from, g.to, rel(g.round), g.parts, (g.sent - now).picoseconds()});
  }
  std::sort(messages.begin(), messages.end());
  out.state.push_back(static_cast<int64_t>(messages.size()));
  for (const auto& x : messages) out.state.insert(out.state.end(), x.begin(), x.end());
  std::vector<std::array<int64_t, 3>> early;
  for (const auto& [key, n] : run.early) {
    uint32_t r = static_cast<uint32_t>(key);
    out.low = std::min(out.low, r);
    early.push_back({static_cast<int64_t>(key >> 32), rel(r), n});
  }
  std::sort(early.begin(), early.end());
  out.state.push_back(static_cast<int64_t>(early.size()));
  for (const auto& x : early) out.state.insert(out.state.end(), x.begin(), x.end());
  // Flows by (message, route), each with its bytes left and rate.
  const FlowNetwork& net = transport_.net();
  std::vector<std::pair<std::array<int64_t, 4>, std::pair<double, double>>> flows;
  for (FlowId f : net.active_flow_ids()) {
    uint64_t tag = net.tag(f);
    if (!is_message_tag(tag) || ((tag >> 32) & 0x7fffffff) != id) return false;
    const Message& g = run.messages[static_cast<uint32_t>(tag)];
    uint64_t route = 14695981039346656037ULL;  // FNV-1a over the route's links (multipath parts differ)
    for (LinkId l : net.route(f)) route = (route ^ l) * 1099511628211ULL;
    flows.push_back(
        {{g.from, g.to, rel(g.round), static_cast<int64_t>(route)}, {net.remaining(f, now), net.rate(f)}});
  }
  std::sort(flows.begin(), flows.end());
  out.state.push_back(static_cast<int64_t>(flows.size()));
  for (const auto& [key, value] : flows) {
    out.state.insert(out.state.end(), key.begin(), key.end());
    out.flows.insert(out.flows.end(), {value.first, value.second});
  }
  out.messages = stats_.messages;
  return true;
}

// Called as member 0 enters round s: when the run's state repeats the one at its entry into round s-1, skips
// the further periods the plan's rounds allow (see the header) and returns how many rounds every member
// advanced.
uint32_t CollectiveExecutor::skip_periods(uint32_t id, Run& run, uint32_t s, Time now) {
  const CollectivePlan& plan = *run.plan;
  if (run.steady_members < plan.members()) {
    run.last.reset();
    return 0;
  }
  auto cur = std::make_unique<Snapshot>();
  if (!snapshot(id, run, s, now, *cur)) {
    run.last.reset();
    return 0;
  }
  std::unique_ptr<Snapshot> prev = std::move(run.last);
  run.last = std::move(cur);
  Snapshot& now_state = *run.last;
  if (!prev || prev->round + 1 != s || prev->at == now || prev->state != now_state.state) return 0;
  // Bytes left and rates equal but for rounding (a class's virtual clock runs on absolute bytes).
  for (size_t i = 0; i < prev->flows.size(); ++i)
    if (std::abs(prev->flows[i] - now_state.flows[i]) > 1e-9 * std::max(std::abs(prev->flows[i]), 1.0))
      return 0;
  // A period's link usage is the difference of two states' (every link's, so taken only once the state
  // repeats): the first repeat takes it, the next one skips.
  now_state.usage = transport_.net().link_usage(now);
  now_state.has_usage = true;
  if (!prev->has_usage) return 0;
  // The period used rounds prev->low .. high+1 (member 0 enters s now); each period more uses one round
  // more, so every round from prev->low to the last one used must be of one class.
  uint32_t last = prev->low, cls = plan.step_class(prev->low);
  while (last + 1 < plan.rounds() && plan.step_class(last + 1) == cls) ++last;
  uint32_t used = std::max(now_state.high, s) + 1;
  if (last <= used) return 0;
  uint32_t k = last - used;
  int64_t period = (now - prev->at).picoseconds();
  run.skipped += static_cast<int64_t>(k) * period;
  for (uint32_t& r : run.round) r += k;
  for (Message& g : run.messages)
    if (g.parts > 0) g.round += k;
  if (!run.early.empty()) {
    std::unordered_map<uint64_t, uint32_t> early;
    for (const auto& [key, n] : run.early) early[key + k] = n;
    run.early = std::move(early);
  }
  stats_.messages += k * (now_state.messages - prev->messages);
  stats_.skipped_rounds += k;
  for (size_t l = 0; l < now_state.usage.size(); ++l) {
    double bytes = now_state.usage[l].bytes - prev->usage[l].bytes;
    int64_t busy = Time::from_seconds(now_state.usage[l].busy_s - prev->usage[l].busy_s).picoseconds();
    if (bytes != 0 || busy != 0)
      run.skipped_usage.push_back({static_cast<LinkId>(l), bytes * k, busy * static_cast<int64_t>(k)});
  }
  run.last.reset();
  return k;
}

// The network carried this collective alone from its start to now (no other message started, checked by the
// caller, and none waits): its run is the one to replay.
void CollectiveExecutor::record(const Run& run, Time now) {
  const FlowNetwork& net = transport_.net();
  if (!transport_.idle()) return;
  std::vector<LinkDelta> usage;
  std::vector<LinkUsage> after = net.link_usage();
  add_deltas(after, run.skipped_usage);
  for (size_t l = 0; l < after.size(); ++l) {
    const LinkUsage& b = l < run.usage_before.size() ? run.usage_before[l] : LinkUsage{};
    if (after[l].bytes != b.bytes || after[l].busy_s != b.busy_s)
      usage.push_back({static_cast<LinkId>(l), after[l].bytes - b.bytes,
                       Time::from_seconds(after[l].busy_s - b.busy_s).picoseconds()});
  }
  fast_.record_flow_run(*run.spec, now.picoseconds() - run.start.picoseconds(),
                        stats_.messages - run.messages_before, std::move(usage));
}

void CollectiveExecutor::round_complete(uint32_t id, uint32_t m, Time now) {
  Run& run = *runs_[id];
  Time delay = reduce_delay(run, m, now);
  if (delay > Time()) {
    round_done_at(run, id, m, now + delay);
    return;
  }
  enter_round(id, m, run.round[m] + 1, now);
}

void CollectiveExecutor::round_done(uint32_t id, uint32_t m, Time now) {
  Run& run = *runs_[id];
  if (run.recording) run.reducing[m] = Time::max();
  enter_round(id, m, run.round[m] + 1, now);
}

void CollectiveExecutor::add_fast_usage(std::vector<LinkUsage>& usage) const {
  fast_.add_usage(usage);
  add_deltas(usage, skipped_usage_);
}

void CollectiveExecutor::message_done(uint32_t id, uint32_t slot, Time now) {
  Run& run = *runs_[id];
  if (--run.messages[slot].parts > 0) return;  // other paths of a split message still draining
  Message msg = run.messages[slot];
  run.free_messages.push_back(slot);
  bool sender_ready = --run.sends_left[msg.from] == 0 && run.recvs_left[msg.from] == 0;
  if (run.round[msg.to] == msg.round) {
    bool receiver_ready = --run.recvs_left[msg.to] == 0 && run.sends_left[msg.to] == 0;
    if (receiver_ready && msg.to != msg.from) round_complete(id, msg.to, now);
  } else {
    ++run.early[(static_cast<uint64_t>(msg.to) << 32) | msg.round];
  }
  if (sender_ready && runs_[id]) round_complete(id, msg.from, now);
}

}  // namespace ddlsim
