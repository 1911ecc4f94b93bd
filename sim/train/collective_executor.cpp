#include "sim/train/collective_executor.hpp"

namespace ddlsim {

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
  // Recording: the collective started alone on an idle network, so its flow-model run is recorded for
  // replays (unless other flows turn out to have shared the network meanwhile).
  bool recording = false;
  Time start;
  uint64_t flows_before = 0, flows = 0, messages_before = 0;
  std::vector<LinkUsage> usage_before;
};

CollectiveExecutor::CollectiveExecutor(Transport& transport, EventQueue& events, EngineStats& stats,
                                       std::function<void(TaskId)> done)
    : transport_(transport), events_(events), stats_(stats), done_(std::move(done)), fast_(transport) {}

CollectiveExecutor::~CollectiveExecutor() = default;

Time CollectiveExecutor::reduce_delay(const Run& run, uint32_t member, uint32_t round) const {
  double bytes = run.plan->reduce_bytes(member, round);
  if (bytes <= 0) return Time();
  bool cpu = run.spec->reduce_on_cpu_for_servers && member >= run.spec->first_server;
  return Time::from_seconds(
      transport_.comm().reduce_seconds(bytes, run.plan->reduce_operand(member, round), cpu));
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
  uint32_t id = static_cast<uint32_t>(runs_.size());
  if (fast && alone(spec, now)) {  // the fast path declined: record this run for the next ones
    run->recording = true;
    run->start = now;
    run->flows_before = transport_.net().flows_started();
    run->messages_before = stats_.messages;
    run->usage_before = transport_.net().link_usage();
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
      events_.schedule(now + base, EventKind::RoundDone, id, m);
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
  for (const Send& snd : run.scratch) {
    uint32_t slot;
    if (run.free_messages.empty()) {
      slot = static_cast<uint32_t>(run.messages.size());
      run.messages.push_back({});
    } else {
      slot = run.free_messages.back();
      run.free_messages.pop_back();
    }
    run.messages[slot] = Message{m, snd.peer, s, 1};
    ++stats_.messages;
    uint64_t tag = kMessageTag | (static_cast<uint64_t>(id) << 32) | slot;
    VertexId src = run.spec->members[m], dst = run.spec->members[snd.peer];
    if (src == dst) {
      events_.schedule(now, EventKind::MessageDone, id, slot);
    } else {
      run.messages[slot].parts = transport_.send(src, dst, snd.bytes, tag, now, run.plan->protocol());
      run.flows += run.messages[slot].parts;
    }
  }
}

// Member m enters round s (and the rounds after it that have nothing to wait for).
void CollectiveExecutor::enter_round(uint32_t id, uint32_t m, uint32_t s, Time now) {
  Run& run = *runs_[id];
  const CollectivePlan& plan = *run.plan;
  while (true) {
    run.round[m] = s;
    if (s == plan.rounds()) {
      if (++run.done == plan.members()) {
        TaskId t = run.task;
        if (run.recording) record(run, now);
        runs_[id].reset();
        done_(t);
      }
      return;
    }
    send_round(id, run, m, s, now);
    if (run.sends_left[m] > 0 || run.recvs_left[m] > 0) return;
    Time delay = reduce_delay(run, m, s);
    if (delay > Time()) {
      events_.schedule(now + delay, EventKind::RoundDone, id, m);
      return;
    }
    ++s;
  }
}

// The network carried this collective alone from its start to now (no other flow started, none waits):
// its run is the one to replay.
void CollectiveExecutor::record(const Run& run, Time now) {
  const FlowNetwork& net = transport_.net();
  if (!transport_.idle() || net.flows_started() - run.flows_before != run.flows) return;
  std::vector<LinkDelta> usage;
  std::vector<LinkUsage> after = net.link_usage();
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
  Time delay = reduce_delay(run, m, run.round[m]);
  if (delay > Time()) {
    events_.schedule(now + delay, EventKind::RoundDone, id, m);
    return;
  }
  enter_round(id, m, run.round[m] + 1, now);
}

void CollectiveExecutor::round_done(uint32_t id, uint32_t m, Time now) {
  enter_round(id, m, runs_[id]->round[m] + 1, now);
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
