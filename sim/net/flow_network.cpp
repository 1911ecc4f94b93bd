#include "sim/net/flow_network.hpp"

#include <algorithm>
#include <cassert>
#include <limits>
#include <stdexcept>

namespace ddlsim {

LinkId FlowNetwork::add_link(Rate capacity, Time latency) {
  assert(capacity.value > 0);
  Link l;
  l.capacity = capacity.value;
  l.latency = latency;
  links_.push_back(std::move(l));
  return static_cast<LinkId>(links_.size() - 1);
}

Time FlowNetwork::route_latency(std::span<const LinkId> route) const {
  Time t;
  for (LinkId l : route) t += links_[l].latency;
  return t;
}

Rate FlowNetwork::route_capacity(std::span<const LinkId> route) const {
  double c = std::numeric_limits<double>::infinity();
  for (LinkId l : route) c = std::min(c, links_[l].capacity);
  return Rate{c};
}

FlowId FlowNetwork::add_flow(std::span<const LinkId> route, double bytes, double rate_cap, uint64_t tag,
                             Time now) {
  FlowId id;
  if (!free_flows_.empty()) {
    id = free_flows_.back();
    free_flows_.pop_back();
  } else {
    id = static_cast<FlowId>(flows_.size());
    flows_.emplace_back();
  }
  Flow& f = flows_[id];
  f.route.assign(route.begin(), route.end());
  f.slot.resize(route.size());
  for (size_t i = 0; i < route.size(); ++i) {
    Link& l = links_[route[i]];
    f.slot[i] = static_cast<uint32_t>(l.flows.size());
    l.flows.push_back(id);
  }
  f.remaining = bytes;
  f.rate = 0;
  f.cap = rate_cap > 0 ? rate_cap : std::numeric_limits<double>::infinity();
  f.updated = now;
  f.finish = Time::max();
  f.tag = tag;
  f.order = next_order_++;
  f.active = true;
  ++active_;
  ++flows_started_;
  new_flows_.push_back(id);
  return id;
}

Time FlowNetwork::next_completion() {
  return heap_.empty() ? Time::max() : flows_[heap_.front()].finish;
}

// Completion heap: a binary heap of flow ids ordered by (finish, creation order), each flow at most once, its
// position kept in the flow so a rate change re-keys it in place.
bool FlowNetwork::earlier(FlowId a, FlowId b) const {
  const Flow& x = flows_[a];
  const Flow& y = flows_[b];
  return x.finish != y.finish ? x.finish < y.finish : x.order < y.order;
}

void FlowNetwork::heap_place(size_t i, FlowId id) {
  heap_[i] = id;
  flows_[id].heap_pos = static_cast<uint32_t>(i);
}

void FlowNetwork::heap_sift(size_t i) {
  FlowId id = heap_[i];
  while (i > 0 && earlier(id, heap_[(i - 1) / 2])) {
    heap_place(i, heap_[(i - 1) / 2]);
    i = (i - 1) / 2;
  }
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= heap_.size()) break;
    if (c + 1 < heap_.size() && earlier(heap_[c + 1], heap_[c])) ++c;
    if (!earlier(heap_[c], id)) break;
    heap_place(i, heap_[c]);
    i = c;
  }
  heap_place(i, id);
}

void FlowNetwork::heap_update(FlowId id) {
  Flow& f = flows_[id];
  if (f.heap_pos == kNotInHeap) {
    heap_.push_back(id);
    f.heap_pos = static_cast<uint32_t>(heap_.size() - 1);
  }
  heap_sift(f.heap_pos);
}

uint64_t FlowNetwork::pop_completion() {
  assert(!heap_.empty());
  FlowId id = heap_.front();
  FlowId last = heap_.back();
  heap_.pop_back();
  flows_[id].heap_pos = kNotInHeap;
  if (last != id) {
    heap_place(0, last);
    heap_sift(0);
  }
  Flow& f = flows_[id];
  for (size_t i = 0; i < f.route.size(); ++i) {
    Link& l = links_[f.route[i]];
    uint32_t s = f.slot[i];
    FlowId moved = l.flows.back();
    l.flows[s] = moved;
    l.flows.pop_back();
    if (moved != id) {
      Flow& m = flows_[moved];
      for (size_t j = 0; j < m.route.size(); ++j)
        if (m.route[j] == f.route[i] && m.slot[j] == l.flows.size()) {
          m.slot[j] = s;
          break;
        }
    }
    if (!l.flows.empty() && !l.dirty) {
      l.dirty = true;
      dirty_links_.push_back(f.route[i]);
    }
  }
  f.active = false;
  --active_;
  free_flows_.push_back(id);
  return f.tag;
}

void FlowNetwork::set_rate(FlowId id, double rate, Time now) {
  Flow& f = flows_[id];
  if (f.updated != now) {
    f.remaining = std::max(0.0, f.remaining - f.rate * (now - f.updated).seconds());
    f.updated = now;
  }
  if (rate == f.rate && f.finish != Time::max()) return;  // unchanged: the heap entry is still right
  f.rate = rate;
  f.finish = now + Time::from_seconds(f.remaining / rate);
  heap_update(id);
}

void FlowNetwork::resolve(Time now) {
  if (new_flows_.empty() && dirty_links_.empty()) return;
  ++stamp_;
  // Every seed not yet reached starts a component of its own; components are solved independently.
  for (FlowId seed : new_flows_) {
    if (!flows_[seed].active || flows_[seed].stamp == stamp_) continue;
    bfs_flows_.assign(1, seed);
    flows_[seed].stamp = stamp_;
    collect_component(now);
  }
  for (LinkId seed : dirty_links_) {
    Link& l = links_[seed];
    l.dirty = false;
    if (l.stamp == stamp_ || l.flows.empty()) continue;
    bfs_flows_.clear();
    for (FlowId f : l.flows)
      if (flows_[f].stamp != stamp_) {
        flows_[f].stamp = stamp_;
        bfs_flows_.push_back(f);
      }
    collect_component(now);
  }
  new_flows_.clear();
  dirty_links_.clear();
}

void FlowNetwork::collect_component(Time now) {
  comp_flows_.clear();
  comp_links_.clear();
  while (!bfs_flows_.empty()) {
    FlowId fid = bfs_flows_.back();
    bfs_flows_.pop_back();
    comp_flows_.push_back(fid);
    for (LinkId lid : flows_[fid].route) {
      Link& l = links_[lid];
      if (l.stamp == stamp_) continue;
      l.stamp = stamp_;
      comp_links_.push_back(lid);
      for (FlowId other : l.flows)
        if (flows_[other].stamp != stamp_) {
          flows_[other].stamp = stamp_;
          bfs_flows_.push_back(other);
        }
    }
  }
  solve_component(now);
}

// Progressive filling: raise every unfixed flow's rate together; the first link to saturate (or flow to reach
// its cap) fixes the flows that cross it; repeat with what is left. The result is the max-min fair
// allocation.
void FlowNetwork::solve_component(Time now) {
  ++solves_;
  if (comp_flows_.size() == 1) {  // alone on its links: no sharing to solve
    FlowId f = comp_flows_[0];
    double r = flows_[f].cap;
    for (LinkId l : flows_[f].route) r = std::min(r, links_[l].capacity);
    set_rate(f, r, now);
    return;
  }
  // Heap-driven rounds: a round takes every link whose fair share (residual / unfixed flows) is within a
  // relative 1e-12 of the smallest, and every flow capped at or below it; their unfixed flows are fixed at
  // that share. Shares of the other links only grow when flows are fixed below them, so the heap holds them
  // lazily.
  using Key = std::pair<double, LinkId>;
  link_heap_.clear();
  for (LinkId lid : comp_links_) {
    Link& l = links_[lid];
    l.residual = l.capacity;
    l.unfixed = static_cast<uint32_t>(l.flows.size());
    l.share = l.residual / l.unfixed;
    link_heap_.push_back({l.share, lid});
  }
  std::make_heap(link_heap_.begin(), link_heap_.end(), std::greater<Key>());
  capped_.clear();
  for (uint32_t i = 0; i < comp_flows_.size(); ++i) {
    Flow& fl = flows_[comp_flows_[i]];
    fl.fixed = false;
    if (fl.cap < std::numeric_limits<double>::infinity()) capped_.push_back(comp_flows_[i]);
  }
  // Usually every cap is the same (one NIC type): sort only when they differ.
  auto by_cap = [&](FlowId a, FlowId b) { return flows_[a].cap < flows_[b].cap; };
  if (!std::is_sorted(capped_.begin(), capped_.end(), by_cap))
    std::sort(capped_.begin(), capped_.end(), by_cap);
  size_t next_capped = 0;
  size_t left = comp_flows_.size();
  constexpr double kTie = 1e-12;
  std::vector<FlowId>& todo = bfs_flows_;  // reuse as scratch: empty here
  auto valid_top = [&] {
    while (!link_heap_.empty()) {
      const Key& k = link_heap_.front();
      const Link& l = links_[k.second];
      if (l.unfixed > 0 && l.share == k.first) return true;
      std::pop_heap(link_heap_.begin(), link_heap_.end(), std::greater<Key>());
      link_heap_.pop_back();
    }
    return false;
  };
  while (left > 0) {
    while (next_capped < capped_.size() && flows_[capped_[next_capped]].fixed) ++next_capped;
    double share = std::numeric_limits<double>::infinity();
    if (valid_top()) share = link_heap_.front().first;
    if (next_capped < capped_.size()) share = std::min(share, flows_[capped_[next_capped]].cap);
    double limit = share * (1 + kTie);
    todo.clear();
    for (size_t i = next_capped; i < capped_.size() && flows_[capped_[i]].cap <= limit; ++i)
      if (!flows_[capped_[i]].fixed) {
        flows_[capped_[i]].fixed = true;
        todo.push_back(capped_[i]);
      }
    while (valid_top() && link_heap_.front().first <= limit) {
      LinkId lid = link_heap_.front().second;
      std::pop_heap(link_heap_.begin(), link_heap_.end(), std::greater<Key>());
      link_heap_.pop_back();
      for (FlowId f : links_[lid].flows)
        if (!flows_[f].fixed) {
          flows_[f].fixed = true;
          todo.push_back(f);
        }
    }
    if (todo.empty())
      throw std::logic_error("max-min solver: an unfixed flow crosses no link and has no cap");
    // Each link loses share once per flow fixed on it: one multiplication per link keeps the sums independent
    // of the order in which links were popped.
    touched_links_.clear();
    for (FlowId f : todo)
      for (LinkId lid : flows_[f].route)
        if (links_[lid].fixing++ == 0) touched_links_.push_back(lid);
    for (FlowId f : todo) set_rate(f, share, now);
    for (LinkId lid : touched_links_) {
      Link& l = links_[lid];
      l.residual = std::max(0.0, l.residual - share * l.fixing);
      l.unfixed -= l.fixing;
      l.fixing = 0;
      if (l.unfixed == 0) continue;
      double sh = l.residual / l.unfixed;
      if (sh != l.share) {
        l.share = sh;
        link_heap_.push_back({sh, lid});
        std::push_heap(link_heap_.begin(), link_heap_.end(), std::greater<Key>());
      }
    }
    left -= todo.size();
  }
  todo.clear();
}

std::vector<FlowId> FlowNetwork::active_flow_ids() const {
  std::vector<FlowId> out;
  for (FlowId f = 0; f < flows_.size(); ++f)
    if (flows_[f].active) out.push_back(f);
  return out;
}

}  // namespace ddlsim
