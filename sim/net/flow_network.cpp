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
  if (!stats_.empty()) stats_.emplace_back();  // (sized at the first flow)
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
  if (stats_.empty()) stats_.resize(links_.size());  // on the first flow: none without flows
  Flow& f = flows_[id];
  f.route.assign(route.begin(), route.end());
  f.slot.resize(route.size());
  for (size_t i = 0; i < route.size(); ++i) {
    Link& l = links_[route[i]];
    f.slot[i] = static_cast<uint32_t>(l.flows.size());
    l.flows.push_back(id);
    LinkStats& u = stats_[route[i]];
    u.bytes += bytes;
    uint32_t on = static_cast<uint32_t>(l.flows.size());
    if (on == 1) u.busy_since = now.picoseconds();
    if (on > u.peak) u.peak = on;
  }
  f.remaining = bytes;
  f.rate = 0;
  f.cap = rate_cap > 0 ? rate_cap : std::numeric_limits<double>::infinity();
  f.updated = now;
  f.finish = Time::max();
  f.tag = tag;
  f.order = next_order_++;
  f.bottleneck = kUncertified;
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
    if (l.flows.empty()) stats_[f.route[i]].busy_ps += f.finish.picoseconds() - stats_[f.route[i]].busy_since;
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

namespace {
// Relative slack of the certificate checks (saturated link, largest rate, at the cap): far above the rounding
// of sums over a link's flows, far below anything a completion time can show.
constexpr double kSlack = 1e-11;
// Rounds of growth before the region becomes its whole connected component (bounds the work of a cascade).
constexpr int kGrowthRounds = 6;
}  // namespace

void FlowNetwork::resolve(Time now) {
  if (new_flows_.empty() && dirty_links_.empty()) return;
  ++stamp_;
  region_flows_.clear();
  region_links_.clear();
  for (FlowId f : new_flows_) {
    if (!flows_[f].active || flows_[f].stamp == stamp_) continue;
    if (alone(f))  // nothing else on its links: no sharing to solve, nobody else affected
      set_rate(f, alone_rate(f), now);
    else
      add_to_region(f);
  }
  // A link a flow left can give more only to the flows certified on it; the others keep their certificates.
  for (LinkId l : dirty_links_) {
    links_[l].dirty = false;
    for (FlowId f : links_[l].flows)
      if (flows_[f].stamp != stamp_ && (flows_[f].bottleneck == l || flows_[f].bottleneck == kUncertified))
        add_to_region(f);
  }
  new_flows_.clear();
  dirty_links_.clear();
  if (region_flows_.empty()) return;
  for (int round = 0;; ++round) {
    if (!solve_region()) break;  // every region flow alone on its links: nothing held is affected
    if (round == kGrowthRounds) {
      ++fallbacks_;
      grow_to_components();
      solve_region();
      ++check_;
      for (FlowId f : region_flows_) flows_[f].bottleneck = certify(f);
      break;
    }
    if (!grow_region()) break;
    ++growths_;
  }
  for (FlowId f : region_flows_) set_rate(f, flows_[f].trial, now);
}

bool FlowNetwork::alone(FlowId f) const {
  for (LinkId lid : flows_[f].route)
    if (links_[lid].flows.size() != 1) return false;
  return true;
}

// The rate of a flow alone on its links: its cap or its smallest capacity, where its certificate holds.
double FlowNetwork::alone_rate(FlowId f) {
  Flow& fl = flows_[f];
  double r = fl.cap;
  fl.bottleneck = kCapped;
  for (LinkId lid : fl.route)
    if (links_[lid].capacity < r) {
      r = links_[lid].capacity;
      fl.bottleneck = lid;
    }
  return r;
}

void FlowNetwork::add_to_region(FlowId f) {
  flows_[f].stamp = stamp_;
  region_flows_.push_back(f);
  for (LinkId l : flows_[f].route)
    if (links_[l].stamp != stamp_) {
      links_[l].stamp = stamp_;
      region_links_.push_back(l);
    }
}

double FlowNetwork::current_rate(FlowId f) const {
  return flows_[f].stamp == stamp_ ? flows_[f].trial : flows_[f].rate;
}

void FlowNetwork::refresh_link(LinkId lid) {
  Link& l = links_[lid];
  if (l.checked == check_) return;
  l.checked = check_;
  l.load = 0;
  l.top = 0;
  for (FlowId f : l.flows) {
    double r = current_rate(f);
    l.load += r;
    l.top = std::max(l.top, r);
  }
}

// Max-min certificate of one flow: it runs at its cap (kCapped), or it is (one of) the largest on a saturated
// link (that link); kUncertified when neither holds.
LinkId FlowNetwork::certify(FlowId f) {
  double r = current_rate(f);
  if (r >= flows_[f].cap * (1 - kSlack)) return kCapped;
  for (LinkId lid : flows_[f].route) {
    refresh_link(lid);
    const Link& l = links_[lid];
    if (l.load >= l.capacity * (1 - kSlack) && r >= l.top * (1 - kSlack)) return lid;
  }
  return kUncertified;
}

// Checks the certificates the region's trial rates may have broken and adds to the region every flow that
// must move: a held flow whose bottleneck was a region link and that has none now (it may rise), and, for a
// region flow without a bottleneck, the held flows above it on its links (they must come down). A held flow
// certified on a link outside the region keeps its certificate: nothing on that link changed. Every flow
// checked keeps the link it is certified on. Returns whether the region grew.
bool FlowNetwork::grow_region() {
  ++check_;
  grown_.clear();
  bool stuck = false;  // a region flow failed with no held flow above it (rounding): take the components
  for (FlowId f : region_flows_) {
    Flow& fl = flows_[f];
    fl.bottleneck = certify(f);
    if (fl.bottleneck != kUncertified) continue;
    size_t before = grown_.size();
    for (LinkId on : fl.route) {
      const Link& l = links_[on];  // refreshed by certify
      if (l.load < l.capacity * (1 - kSlack)) continue;
      for (FlowId g : l.flows)
        if (flows_[g].stamp != stamp_ && flows_[g].rate > fl.trial * (1 + kSlack)) grown_.push_back(g);
    }
    stuck = stuck || grown_.size() == before;
  }
  for (LinkId lid : region_links_)
    for (FlowId g : links_[lid].flows) {
      Flow& gl = flows_[g];
      if (gl.stamp == stamp_ || gl.checked == check_) continue;
      if (gl.bottleneck != kCapped && gl.bottleneck != kUncertified && links_[gl.bottleneck].stamp != stamp_)
        continue;
      gl.checked = check_;
      gl.bottleneck = certify(g);
      if (gl.bottleneck == kUncertified) grown_.push_back(g);
    }
  size_t size = region_flows_.size();
  if (stuck) grow_to_components();
  for (FlowId g : grown_)
    if (flows_[g].stamp != stamp_) add_to_region(g);
  return region_flows_.size() > size;
}

void FlowNetwork::grow_to_components() {
  for (size_t i = 0; i < region_flows_.size(); ++i)
    for (LinkId lid : flows_[region_flows_[i]].route)
      for (FlowId g : links_[lid].flows)
        if (flows_[g].stamp != stamp_) add_to_region(g);
}

// Progressive filling over the region, each link's capacity less the held flows' rates: raise every unfixed
// region flow's rate together; the first link to saturate (or flow to reach its cap) fixes the flows that
// cross it; repeat with what is left. Sets every region flow's trial rate; returns whether any of them shares
// a link.
bool FlowNetwork::solve_region() {
  ++solves_;
  for (LinkId lid : region_links_) {
    Link& l = links_[lid];
    l.residual = l.capacity;
    l.unfixed = 0;
    for (FlowId f : l.flows)
      if (flows_[f].stamp == stamp_)
        ++l.unfixed;
      else
        l.residual -= flows_[f].rate;
    l.residual = std::max(0.0, l.residual);
    l.share = l.residual / l.unfixed;
    l.demand = 0;
  }
  capped_.clear();
  size_t left = 0;
  for (FlowId f : region_flows_) {
    Flow& fl = flows_[f];
    fl.fixed = false;
    if (alone(f)) {  // its rate needs no sharing (and is exact)
      fl.trial = alone_rate(f);
      fl.fixed = true;
      for (LinkId lid : fl.route) links_[lid].unfixed = 0;
      continue;
    }
    ++left;
    if (fl.cap < std::numeric_limits<double>::infinity()) capped_.push_back(f);
    double most = fl.cap;  // no rate can exceed the smallest residual on the route
    for (LinkId lid : fl.route) most = std::min(most, links_[lid].residual);
    for (LinkId lid : fl.route) links_[lid].demand += most;
  }
  // A link whose flows together cannot fill it never fixes one: only the others are candidates (typically the
  // NICs; most fabric and PCIe links drop out).
  candidates_.clear();
  for (LinkId lid : region_links_) {
    Link& l = links_[lid];
    if (l.unfixed > 0 && l.demand >= l.residual * (1 - 1e-9)) candidates_.push_back(lid);
  }
  // Usually every cap is the same (one NIC type): sort only when they differ.
  auto by_cap = [&](FlowId a, FlowId b) { return flows_[a].cap < flows_[b].cap; };
  if (!std::is_sorted(capped_.begin(), capped_.end(), by_cap))
    std::sort(capped_.begin(), capped_.end(), by_cap);
  bool shared = left > 0;
  size_t next_capped = 0;
  constexpr double kTie = 1e-12;
  // Rounds: each takes every candidate link whose fair share (residual / unfixed flows) is within a relative
  // 1e-12 of the smallest, and every flow capped at or below it, and fixes their unfixed flows at that share.
  // A scan of the candidates per round (a region has few, and few distinct share levels).
  while (left > 0) {
    while (next_capped < capped_.size() && flows_[capped_[next_capped]].fixed) ++next_capped;
    double share = std::numeric_limits<double>::infinity();
    size_t kept = 0;
    for (LinkId lid : candidates_)
      if (links_[lid].unfixed > 0) {
        candidates_[kept++] = lid;
        share = std::min(share, links_[lid].share);
      }
    candidates_.resize(kept);
    if (next_capped < capped_.size()) share = std::min(share, flows_[capped_[next_capped]].cap);
    double limit = share * (1 + kTie);
    todo_.clear();
    for (size_t i = next_capped; i < capped_.size() && flows_[capped_[i]].cap <= limit; ++i)
      if (!flows_[capped_[i]].fixed) {
        flows_[capped_[i]].fixed = true;
        todo_.push_back(capped_[i]);
      }
    for (LinkId lid : candidates_) {
      if (links_[lid].share > limit) continue;
      for (FlowId f : links_[lid].flows)
        if (flows_[f].stamp == stamp_ && !flows_[f].fixed) {
          flows_[f].fixed = true;
          todo_.push_back(f);
        }
    }
    if (todo_.empty())
      throw std::logic_error("max-min solver: an unfixed flow crosses no link and has no cap");
    // Each link loses share once per flow fixed on it: one multiplication per link keeps the sums independent
    // of the order in which the flows were fixed.
    touched_links_.clear();
    for (FlowId f : todo_)
      for (LinkId lid : flows_[f].route)
        if (links_[lid].fixing++ == 0) touched_links_.push_back(lid);
    for (FlowId f : todo_) flows_[f].trial = share;
    for (LinkId lid : touched_links_) {
      Link& l = links_[lid];
      l.residual = std::max(0.0, l.residual - share * l.fixing);
      l.unfixed -= l.fixing;
      l.fixing = 0;
      if (l.unfixed == 0) continue;
      l.share = l.residual / l.unfixed;
    }
    left -= todo_.size();
  }
  return shared;
}

std::vector<LinkUsage> FlowNetwork::link_usage() const {
  std::vector<LinkUsage> out(links_.size());
  for (LinkId l = 0; l < links_.size(); ++l) {
    out[l].link = l;
    if (l >= stats_.size()) continue;
    out[l].bytes = stats_[l].bytes;
    out[l].busy_s = Time::ps(stats_[l].busy_ps).seconds();
    out[l].peak_flows = stats_[l].peak;
  }
  return out;
}

std::vector<FlowId> FlowNetwork::active_flow_ids() const {
  std::vector<FlowId> out;
  for (FlowId f = 0; f < flows_.size(); ++f)
    if (flows_[f].active) out.push_back(f);
  return out;
}

}  // namespace ddlsim
