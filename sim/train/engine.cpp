#include "sim/train/engine.hpp"

#include <algorithm>
#include <cassert>
#include <stdexcept>

namespace ddlsim {

namespace {
constexpr uint64_t kMessageTag = 1ULL << 63;
}

struct Engine::CollectiveRun {
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
};

Engine::Engine(const Topology& topo, const CommModel& comm, const TaskGraph& graph, EngineOptions options)
    : topo_(topo), comm_(comm), graph_(graph), options_(options), router_(topo) {
  topo.build_network(net_);
  records_.resize(graph.size());
  waiting_.resize(graph.size());
  parts_left_.resize(graph.size());
  resource_busy_.resize(graph.resource_count());
  resource_queue_.resize(graph.resource_count());
  if (graph.collective_compute_slowdown > 0) {
    for (TaskId t = 0; t < graph.size(); ++t) {
      const Task& task = graph.task(t);
      if (task.kind != TaskKind::Collective) continue;
      const std::vector<TaskId>& launch = graph.collectives()[task.collective].launch;
      for (uint32_t m = 0; m < launch.size(); ++m) launches_[launch[m]].push_back(m);
      if (launch.size() > resident_.size()) {
        resident_.resize(launch.size());
        resident_since_.resize(launch.size());
        resident_total_.resize(launch.size());
      }
    }
    resident_at_start_.resize(graph.size());
    extended_.resize(graph.size());
  }
}

Engine::~Engine() = default;

int64_t Engine::resident_time(int32_t worker) const {
  size_t w = static_cast<size_t>(worker);
  if (w >= resident_.size()) return 0;
  return resident_total_[w] + (resident_[w] > 0 ? now_.picoseconds() - resident_since_[w] : 0);
}

void Engine::schedule(Time t, EventKind kind, uint32_t a, uint32_t b) {
  queue_.push(Event{t, seq_++, kind, a, b});
}

Time Engine::run() {
  for (TaskId t = 0; t < graph_.size(); ++t) waiting_[t] = graph_.predecessor_count(t);
  for (TaskId t = 0; t < graph_.size(); ++t)
    if (waiting_[t] == 0) ready(t);
  Time last;
  while (true) {
    Time t_net = net_.next_completion();
    Time t_ev = queue_.empty() ? Time::max() : queue_.top().time;
    Time t = std::min(t_net, t_ev);
    if (t == Time::max()) break;
    now_ = t;
    last = t;
    // Everything at this instant first, then one rate update: simultaneous starts are solved together.
    while (true) {
      if (net_.next_completion() == now_) {
        flow_done(net_.pop_completion());
        continue;
      }
      if (!queue_.empty() && queue_.top().time == now_) {
        Event e = queue_.top();
        queue_.pop();
        ++stats_.events;
        handle(e);
        continue;
      }
      break;
    }
    net_.resolve(now_);
  }
  for (TaskId t = 0; t < graph_.size(); ++t)
    if (records_[t].end == Time::max()) throw std::logic_error("task graph has a cycle or a task never ran");
  stats_.flows = net_.flows_started();
  return last;
}

void Engine::handle(const Event& e) {
  switch (e.kind) {
    case EventKind::TaskEnd:
      if (!resident_.empty() && graph_.task(e.a).kind == TaskKind::Compute && graph_.task(e.a).worker >= 0 &&
          !extended_[e.a]) {
        // Compute that ran while collective kernels were resident on its GPU takes longer by slowdown x
        // overlap (the overlap during the extension itself is not counted again).
        int64_t overlap = resident_time(graph_.task(e.a).worker) - resident_at_start_[e.a];
        Time extra = Time::from_seconds(graph_.collective_compute_slowdown * Time::ps(overlap).seconds());
        extended_[e.a] = true;
        if (extra > Time()) {
          schedule(now_ + extra, EventKind::TaskEnd, e.a);
          break;
        }
      }
      finish(e.a);
      break;
    case EventKind::FlowStart: {
      FlowRequest& r = requests_[e.a];
      net_.add_flow(*r.route, r.bytes, r.cap, r.tag, now_);
      free_requests_.push_back(e.a);
      --pending_flow_starts_;
      break;
    }
    case EventKind::MessageDone:
      flow_done((static_cast<uint64_t>(e.a) << 32) | e.b | kMessageTag);
      break;
    case EventKind::RoundDone:
      enter_round(e.a, e.b, runs_[e.a]->round[e.b] + 1);
      break;
  }
}

void Engine::ready(TaskId t) {
  uint32_t res = graph_.task(t).resource;
  if (res != kNoResource) {
    if (resource_busy_[res]) {
      resource_queue_[res].push(t);
      return;
    }
    resource_busy_[res] = true;
  }
  start(t);
}

void Engine::start(TaskId t) {
  const Task& task = graph_.task(t);
  records_[t].start = now_;
  switch (task.kind) {
    case TaskKind::Compute:
      if (!resident_.empty() && task.worker >= 0) resident_at_start_[t] = resident_time(task.worker);
      schedule(now_ + task.duration, EventKind::TaskEnd, t);
      break;
    case TaskKind::Delay:
      schedule(now_ + task.duration, EventKind::TaskEnd, t);
      break;
    case TaskKind::Transfer:
      start_transfer(t);
      break;
    case TaskKind::Collective:
      start_collective(t);
      break;
  }
}

void Engine::finish(TaskId t) {
  records_[t].end = now_;
  if (!launches_.empty()) {
    if (auto it = launches_.find(t); it != launches_.end())
      for (uint32_t m : it->second)
        if (resident_[m]++ == 0) resident_since_[m] = now_.picoseconds();
    const Task& task = graph_.task(t);
    if (task.kind == TaskKind::Collective)
      for (size_t m = 0; m < graph_.collectives()[task.collective].launch.size(); ++m)
        if (--resident_[m] == 0) resident_total_[m] += now_.picoseconds() - resident_since_[m];
  }
  uint32_t res = graph_.task(t).resource;
  if (res != kNoResource) {
    if (resource_queue_[res].empty()) {
      resource_busy_[res] = false;
    } else {
      TaskId next = resource_queue_[res].front();
      resource_queue_[res].pop();
      start(next);
    }
  }
  auto [b, e] = graph_.successors(t);
  for (const TaskId* s = b; s != e; ++s)
    if (--waiting_[*s] == 0) ready(*s);
}

void Engine::message_timing(VertexId src, VertexId dst, double bytes, Time& latency, double& rate) {
  const std::vector<LinkId>& route = router_.route(src, dst);
  const CommRange& range = (router_.same_node(src, dst) ? comm_.intra : comm_.inter).lookup(bytes);
  latency = net_.route_latency(route) + range.alpha;
  rate = net_.route_capacity(route).value * range.efficiency;
  if (range.bandwidth > 0) rate = std::min(rate, range.bandwidth);
}

uint32_t Engine::send(VertexId src, VertexId dst, double bytes, uint64_t tag) {
  if (now_ < isolated_until_)
    throw std::logic_error("a transfer started while an isolated collective owned the network");
  const CommClass& cls = router_.same_node(src, dst) ? comm_.intra : comm_.inter;
  const CommRange& range = cls.lookup(bytes);
  uint32_t paths = router_.same_node(src, dst) ? 1 : std::max<uint32_t>(1, comm_.multipath);
  for (uint32_t p = 0; p < paths; ++p) {
    const std::vector<LinkId>& route = router_.route(src, dst, p);
    double rate_cap = net_.route_capacity(route).value * range.efficiency;
    if (range.bandwidth > 0) rate_cap = std::min(rate_cap, range.bandwidth / paths);
    if (range.efficiency >= 1 && range.bandwidth <= 0) rate_cap = 0;  // links alone decide
    uint32_t slot;
    if (free_requests_.empty()) {
      slot = static_cast<uint32_t>(requests_.size());
      requests_.emplace_back();
    } else {
      slot = free_requests_.back();
      free_requests_.pop_back();
    }
    requests_[slot] = FlowRequest{&route, bytes / paths, rate_cap, tag};
    ++pending_flow_starts_;
    schedule(now_ + net_.route_latency(route) + range.alpha, EventKind::FlowStart, slot);
  }
  return paths;
}

void Engine::start_transfer(TaskId t) {
  const Task& task = graph_.task(t);
  ++stats_.messages;
  if (task.src == task.dst) {
    schedule(now_, EventKind::TaskEnd, t);
    return;
  }
  parts_left_[t] = static_cast<uint8_t>(send(task.src, task.dst, task.bytes, t));
}

void Engine::flow_done(uint64_t tag) {
  if (tag & kMessageTag) {
    message_done(static_cast<uint32_t>((tag >> 32) & 0x7fffffff), static_cast<uint32_t>(tag));
    return;
  }
  TaskId t = static_cast<TaskId>(tag);
  if (--parts_left_[t] == 0) finish(t);
}

Time Engine::reduce_delay(const CollectiveRun& run, uint32_t member, uint32_t round) const {
  double bytes = run.plan->reduce_bytes(member, round);
  if (bytes <= 0) return Time();
  bool cpu = run.spec->reduce_on_cpu_for_servers && member >= run.spec->first_server;
  return Time::from_seconds(comm_.reduce_seconds(bytes, run.plan->reduce_operand(member, round), cpu));
}

void Engine::start_collective(TaskId t) {
  if (options_.fast_collectives && try_fast_collective(t)) return;
  ++stats_.slow_collectives;
  const CollectiveTask& spec = graph_.collectives()[graph_.task(t).collective];
  auto run = std::make_unique<CollectiveRun>();
  run->task = t;
  run->spec = &spec;
  run->plan = spec.plan.get();
  uint32_t p = run->plan->members();
  run->round.assign(p, 0);
  run->sends_left.assign(p, 0);
  run->recvs_left.assign(p, 0);
  uint32_t id = static_cast<uint32_t>(runs_.size());
  runs_.push_back(std::move(run));
  if (p == 0 || runs_[id]->plan->rounds() == 0) {
    runs_[id].reset();
    schedule(now_, EventKind::TaskEnd, t);
    return;
  }
  for (uint32_t m = 0; m < p; ++m) enter_round(id, m, 0);
}

void Engine::enter_round(uint32_t id, uint32_t m, uint32_t s) {
  CollectiveRun& run = *runs_[id];
  const CollectivePlan& plan = *run.plan;
  while (true) {
    run.round[m] = s;
    if (s == plan.rounds()) {
      if (++run.done == plan.members()) {
        TaskId t = run.task;
        runs_[id].reset();
        finish(t);
      }
      return;
    }
    run.scratch.clear();
    plan.sends(m, s, run.scratch);
    run.sends_left[m] = static_cast<uint32_t>(run.scratch.size());
    uint32_t recvs = plan.receives(m, s);
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
        schedule(now_, EventKind::MessageDone, id, slot);
      } else {
        run.messages[slot].parts = send(src, dst, snd.bytes, tag);
      }
    }
    if (run.sends_left[m] > 0 || run.recvs_left[m] > 0) return;
    Time delay = reduce_delay(run, m, s);
    if (delay > Time()) {
      schedule(now_ + delay, EventKind::RoundDone, id, m);
      return;
    }
    ++s;
  }
}

void Engine::round_complete(uint32_t id, uint32_t m) {
  CollectiveRun& run = *runs_[id];
  Time delay = reduce_delay(run, m, run.round[m]);
  if (delay > Time()) {
    schedule(now_ + delay, EventKind::RoundDone, id, m);
    return;
  }
  enter_round(id, m, run.round[m] + 1);
}

void Engine::message_done(uint32_t id, uint32_t slot) {
  CollectiveRun& run = *runs_[id];
  if (--run.messages[slot].parts > 0) return;  // other paths of a split message still draining
  Message msg = run.messages[slot];
  run.free_messages.push_back(slot);
  bool sender_ready = --run.sends_left[msg.from] == 0 && run.recvs_left[msg.from] == 0;
  if (run.round[msg.to] == msg.round) {
    bool receiver_ready = --run.recvs_left[msg.to] == 0 && run.sends_left[msg.to] == 0;
    if (receiver_ready && msg.to != msg.from) round_complete(id, msg.to);
  } else {
    ++run.early[(static_cast<uint64_t>(msg.to) << 32) | msg.round];
  }
  if (sender_ready && runs_[id]) round_complete(id, msg.from);
}

}  // namespace ddlsim

namespace ddlsim {

// Max-plus evaluation of a round plan when every message would get its route's full rate: a member starts
// round s+1 at max(its sends' ends, its receives' ends) + reduce time. That holds exactly iff no two messages
// are on a link at the same time, which the loop checks conservatively (messages are visited round by round,
// so a message that starts before the last end seen on one of its links aborts the fast path even if the true
// intervals were disjoint). When two consecutive rounds have the same plan class and the second starts as a
// uniform shift of the first, every further round of that class repeats the shift, so those rounds are
// skipped arithmetically.
bool Engine::try_fast_collective(TaskId t) {
  const CollectiveTask& spec = graph_.collectives()[graph_.task(t).collective];
  if (!spec.isolated || !net_.empty() || pending_flow_starts_ > 0 || now_ < isolated_until_) return false;
  const CollectivePlan& plan = *spec.plan;
  FastMemo* memo = nullptr;
  for (FastMemo& m : fast_memo_)
    if (m.plan == &plan && m.cpu_servers == spec.reduce_on_cpu_for_servers &&
        m.first_server == spec.first_server && (m.members == &spec.members || *m.members == spec.members))
      memo = &m;
  if (memo) {
    if (!memo->ok) return false;
    return finish_fast_collective(t, now_.picoseconds() + memo->duration, memo->messages);
  }
  uint32_t p = plan.members(), rounds = plan.rounds();
  if (last_end_.empty()) last_end_.assign(net_.link_count(), INT64_MIN);
  std::vector<int64_t> start(p, now_.picoseconds()), next(p), prev(p), arrive(p), send_end(p);
  std::vector<LinkId> touched_round;
  std::vector<Send> sends;
  struct MessageShape {
    uint32_t peer = UINT32_MAX;
    double bytes = -1;
    const std::vector<LinkId>* route = nullptr;
    int64_t latency = 0, duration = 0;
  };
  std::vector<MessageShape> shapes(p);
  uint64_t messages = 0;
  bool ok = true;
  if (link_round_.empty()) link_round_.assign(net_.link_count(), 0);
  // Exclusive pattern: when a checked round had one message per member and no link carried two of them, later
  // rounds that repeat each member's (peer, size) use the same links, one sender per link, one message after
  // the other - they cannot overlap, so their link checks are skipped; each member's last message end is
  // written back to its links before the next checked round.
  bool exclusive = false, pending = false;
  std::vector<int64_t> last_msg_end(p, INT64_MIN);
  auto materialize = [&] {
    for (uint32_t r = 0; r < p && pending; ++r) {
      if (shapes[r].route == nullptr || last_msg_end[r] == INT64_MIN) continue;
      for (LinkId l : *shapes[r].route) {
        if (last_end_[l] == INT64_MIN) touched_.push_back(l);
        last_end_[l] = std::max(last_end_[l], last_msg_end[r]);
      }
    }
    pending = false;
  };
  uint64_t round_messages = 0;
  for (uint32_t s = 0; s < rounds && ok; ++s) {
    bool skip = exclusive;
    bool round_exclusive = true;
    // A skipped round whose pattern turns out to differ is run again from its start, with the checks.
    for (bool again = true; again;) {
      again = false;
      std::fill(arrive.begin(), arrive.end(), INT64_MIN);
      touched_round.clear();
      round_messages = 0;
      round_exclusive = true;
      ++round_id_;
      for (uint32_t r = 0; r < p && ok; ++r) {
        send_end[r] = start[r];
        sends.clear();
        plan.sends(r, s, sends);
        if (skip) {
          const MessageShape& shape = shapes[r];
          if (sends.size() != 1 || shape.route == nullptr || shape.peer != sends[0].peer ||
              shape.bytes != sends[0].bytes || sends[0].bytes <= 0) {
            materialize();  // the pattern changed: back to checking, from the start of this round
            skip = exclusive = false;
            again = true;
            break;
          }
          int64_t end = start[r] + shape.latency + shape.duration;
          last_msg_end[r] = end;
          pending = true;
          ++round_messages;
          send_end[r] = std::max(send_end[r], end);
          arrive[shape.peer] = std::max(arrive[shape.peer], end);
          continue;
        }
        if (sends.size() != 1) round_exclusive = false;
        for (const Send& snd : sends) {
          ++round_messages;
          VertexId src = spec.members[r], dst = spec.members[snd.peer];
          int64_t end = start[r];
          if (src == dst || snd.bytes <= 0) round_exclusive = false;
          if (src != dst) {
            if (comm_.multipath > 1 && !router_.same_node(src, dst)) {
              ok = false;
              break;
            }
            // Most plans send the same message shape from a member round after round: remember its timing.
            MessageShape& shape = shapes[r];
            if (shape.peer != snd.peer || shape.bytes != snd.bytes) {
              Time latency;
              double rate;
              message_timing(src, dst, snd.bytes, latency, rate);
              shape = {snd.peer, snd.bytes, &router_.route(src, dst), latency.picoseconds(),
                       snd.bytes > 0 ? Time::from_seconds(snd.bytes / rate).picoseconds() : 0};
            }
            int64_t drain = start[r] + shape.latency;
            end = drain + shape.duration;
            if (snd.bytes > 0) {
              for (LinkId l : *shape.route) {
                if (drain < last_end_[l]) {
                  ok = false;
                  break;
                }
                if (last_end_[l] == INT64_MIN) touched_.push_back(l);
                last_end_[l] = std::max(last_end_[l], end);
                touched_round.push_back(l);
                if (link_round_[l] == round_id_) round_exclusive = false;
                link_round_[l] = round_id_;
              }
            }
          }
          send_end[r] = std::max(send_end[r], end);
          arrive[snd.peer] = std::max(arrive[snd.peer], end);
        }
      }
    }
    if (!skip) exclusive = ok && round_exclusive;
    if (!ok) break;
    messages += round_messages;
    for (uint32_t r = 0; r < p; ++r) {
      double rb = plan.reduce_bytes(r, s);
      bool cpu = spec.reduce_on_cpu_for_servers && r >= spec.first_server;
      int64_t reduce =
          rb > 0 ? Time::from_seconds(comm_.reduce_seconds(rb, plan.reduce_operand(r, s), cpu)).picoseconds()
                 : 0;
      next[r] = std::max({start[r], send_end[r], arrive[r]}) + reduce;
    }
    if (s >= 1 && plan.round_class(s) == plan.round_class(s - 1)) {
      int64_t shift = start[0] - prev[0];
      bool uniform = true;
      for (uint32_t r = 1; r < p && uniform; ++r) uniform = start[r] - prev[r] == shift;
      uint32_t more = 0;
      while (uniform && s + 1 + more < rounds && plan.round_class(s + 1 + more) == plan.round_class(s))
        ++more;
      if (uniform && more > 0) {
        for (uint32_t r = 0; r < p; ++r) next[r] += static_cast<int64_t>(more) * shift;
        std::sort(touched_round.begin(), touched_round.end());
        touched_round.erase(std::unique(touched_round.begin(), touched_round.end()), touched_round.end());
        for (LinkId l : touched_round) last_end_[l] += static_cast<int64_t>(more) * shift;
        if (pending)
          for (int64_t& e : last_msg_end)
            if (e != INT64_MIN) e += static_cast<int64_t>(more) * shift;
        messages += more * round_messages;
        s += more;
      }
    }
    prev.swap(start);
    start.swap(next);
  }
  for (LinkId l : touched_) last_end_[l] = INT64_MIN;
  touched_.clear();
  int64_t end = now_.picoseconds();
  for (int64_t v : start) end = std::max(end, v);
  fast_memo_.push_back({&plan, &spec.members, spec.reduce_on_cpu_for_servers, spec.first_server, ok,
                        end - now_.picoseconds(), messages});
  if (!ok) return false;
  return finish_fast_collective(t, end, messages);
}

bool Engine::finish_fast_collective(TaskId t, int64_t end, uint64_t messages) {
  ++stats_.fast_collectives;
  stats_.messages += messages;
  stats_.fast_messages += messages;
  isolated_until_ = Time::ps(end);
  schedule(Time::ps(end), EventKind::TaskEnd, t);
  return true;
}

}  // namespace ddlsim
