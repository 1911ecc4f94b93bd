#include "sim/train/engine.hpp"

#include <algorithm>
#include <stdexcept>

#include "sim/core/interrupt.hpp"

namespace ddlsim {

Engine::Engine(const Topology& topo, const CommModel& comm, const TaskGraph& graph, EngineOptions options)
    : graph_(graph),
      options_(options),
      records_(graph.size()),
      parts_left_(graph.size()),
      tasks_(graph),
      transport_(topo, comm, events_),
      collectives_(transport_, events_, stats_, [this](TaskId t) { finish(t); }),
      device_(graph) {}

Engine::~Engine() = default;

Time Engine::run() {
  tasks_.begin([this](TaskId t) { start(t); });
  FlowNetwork& net = transport_.net();
  Time last;
  for (uint32_t instants = 0;; ++instants) {
    if ((instants & 4095) == 0) {
      throw_if_interrupted();  // SIGINT/SIGTERM: abandon this simulation
      if (progress_ && graph_.size() > 0)
        progress_(static_cast<double>(ended_) / static_cast<double>(graph_.size()));
    }
    Time t = std::min(net.next_completion(), events_.next_time());
    if (t == Time::max()) break;
    if (t.past_limit()) throw_time_overflow();  // (durations and instants within 2^62 ps: no sum wrapped)
    now_ = t;
    last = t;
    events_.advance(t);
    // Everything at this instant first, then one rate update: simultaneous starts are solved together.
    while (true) {
      if (net.next_completion() == now_) {
        flow_done(net.pop_completion());
        continue;
      }
      if (events_.next_time() == now_) {
        ++stats_.events;
        handle(events_.pop());
        continue;
      }
      break;
    }
    net.resolve(now_);
  }
  for (TaskId t = 0; t < graph_.size(); ++t)
    if (records_[t].end == Time::max()) throw std::logic_error("task graph has a cycle or a task never ran");
  stats_.flows = net.flows_started();
  stats_.region_solves = net.region_solves();
  stats_.region_flows = net.region_flows_solved();
  return last;
}

void Engine::handle(const Event& e) {
  switch (e.kind) {
    case EventKind::TaskEnd:
      // Compute that ran while collective kernels were resident on its GPU takes longer.
      if (Time extra = device_.extension(e.a, now_); extra > Time())
        events_.schedule(now_ + extra, EventKind::TaskEnd, e.a);
      else
        finish(e.a);
      break;
    case EventKind::FlowStart:
      transport_.start_flow(e.a, now_);
      break;
    case EventKind::MessageDone:
      collectives_.message_done(e.a, e.b, now_);
      break;
    case EventKind::RoundDone:
      collectives_.round_done(e.a, e.b, now_);
      break;
    case EventKind::DirectDone:
      flow_done(transport_.finish_direct(e.a, now_));
      break;
  }
}

void Engine::start(TaskId t) {
  const Task& task = graph_.task(t);
  records_[t].start = now_;
  switch (task.kind) {
    case TaskKind::Compute:
      device_.compute_started(t, now_);
      events_.schedule(now_ + task.duration, EventKind::TaskEnd, t);
      break;
    case TaskKind::Delay:
      events_.schedule(now_ + task.duration, EventKind::TaskEnd, t);
      break;
    case TaskKind::Transfer:
      start_transfer(t);
      break;
    case TaskKind::Collective:
      collectives_.start(t, graph_.collectives()[task.collective], options_.fast_collectives, now_);
      break;
  }
}

void Engine::finish(TaskId t) {
  records_[t].end = now_;
  ++ended_;
  device_.task_finished(t, now_);
  if (TaskId next = tasks_.release(t); next != TaskScheduler::kNone) start(next);
  tasks_.complete(t, [this](TaskId s) { start(s); });
}

void Engine::start_transfer(TaskId t) {
  const Task& task = graph_.task(t);
  ++stats_.messages;
  if (task.src == task.dst) {
    events_.schedule(now_, EventKind::TaskEnd, t);
    return;
  }
  parts_left_[t] = static_cast<uint8_t>(transport_.send(task.src, task.dst, task.bytes, t, now_));
}

void Engine::flow_done(uint64_t tag) {
  if (CollectiveExecutor::is_message_tag(tag)) {
    collectives_.flow_done(tag, now_);
    return;
  }
  TaskId t = static_cast<TaskId>(tag);
  if (--parts_left_[t] == 0) finish(t);
}

std::vector<LinkUsage> Engine::link_usage() const {
  std::vector<LinkUsage> usage = transport_.net().link_usage();
  collectives_.add_fast_usage(usage);
  return usage;
}

std::string link_name(const Topology& topo, LinkId l) {
  const DirectedLink& link = topo.links().at(l);
  return topo.vertex(link.from).name + " > " + topo.vertex(link.to).name;
}

std::vector<LinkLoad> top_links(const Engine& engine, const Topology& topo, Time makespan, size_t n) {
  std::vector<LinkUsage> usage = engine.link_usage();
  std::stable_sort(usage.begin(), usage.end(),
                   [](const LinkUsage& a, const LinkUsage& b) { return a.bytes > b.bytes; });
  std::vector<LinkLoad> out;
  for (size_t i = 0; i < std::min(n, usage.size()) && usage[i].bytes > 0; ++i)
    out.push_back({link_name(topo, usage[i].link), usage[i].bytes,
                   makespan > Time() ? usage[i].busy_s / makespan.seconds() : 0, usage[i].peak_flows,
                   usage[i].link});
  return out;
}

}  // namespace ddlsim
