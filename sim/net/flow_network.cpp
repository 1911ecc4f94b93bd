#include "sim/net/flow_network.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
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

double IncastCurve::goodput(double senders) const {
  if (points.empty() || senders <= points.front().first) return points.empty() ? 1 : points.front().second;
  for (size_t i = 1; i < points.size(); ++i)
    if (senders <= points[i].first) {
      const auto& [n0, g0] = points[i - 1];
      const auto& [n1, g1] = points[i];
      return g0 + (g1 - g0) * (senders - n0) / (n1 - n0);
    }
  return points.back().second;
}

void FlowNetwork::set_incast(LinkId l, const IncastCurve* curve) {
  assert(active_ == 0 && links_[l].incast == kNoIncast);
  if (!curve || !curve->on()) return;
  links_[l].incast = static_cast<uint32_t>(incasts_.size());
  incasts_.push_back({curve, links_[l].capacity, {}, false});
  links_[l].capacity *= curve->goodput(1);
}

double FlowNetwork::capacity_with(LinkId l, uint32_t senders) const {
  const Link& k = links_[l];
  if (k.incast == kNoIncast) return k.capacity;
  const Incast& in = incasts_[k.incast];
  return in.line * in.curve->goodput(senders);
}

// Counts a flow from `sender` (its route's first link) on incast link l in or out; a sender arriving or
// leaving queues l for a new capacity at the next resolve.
void FlowNetwork::count_sender(LinkId l, LinkId sender, bool in) {
  Incast& k = incasts_[links_[l].incast];
  size_t i = 0;
  while (i < k.senders.size() && k.senders[i].first != sender) ++i;
  if (in && i == k.senders.size()) k.senders.emplace_back(sender, 0);
  if (in ? ++k.senders[i].second > 1 : --k.senders[i].second > 0) return;
  if (!in) {
    k.senders[i] = k.senders.back();
    k.senders.pop_back();
  }
  if (!k.recap) {
    k.recap = true;
    recap_links_.push_back(l);
  }
}

Time FlowNetwork::route_latency(std::span<const LinkId> route) const {
  Time t;
  for (LinkId l : route) t += links_[l].latency;
  return t;
}

Rate FlowNetwork::route_capacity(std::span<const LinkId> route) const {
  double c = std::numeric_limits<double>::infinity();
  for (LinkId l : route) c = std::min(c, capacity_with(l, 1));  // (incast links: one sender)
  return Rate{c};
}

namespace {
// Restores binary-heap order (`before`) around h[i], writing each entry where it lands through `place` (which
// also records its index).
template <class Before, class Place>
void sift(const std::vector<uint32_t>& h, size_t i, Before before, Place place) {
  const uint32_t id = h[i];
  while (i > 0 && before(id, h[(i - 1) / 2])) {
    place(i, h[(i - 1) / 2]);
    i = (i - 1) / 2;
  }
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h.size()) break;
    if (c + 1 < h.size() && before(h[c + 1], h[c])) ++c;
    if (!before(h[c], id)) break;
    place(i, h[c]);
    i = c;
  }
  place(i, id);
}

uint64_t route_key(std::span<const LinkId> route, double cap) {
  uint64_t h = 14695981039346656037ULL;  // FNV-1a over the links and the cap's bits
  for (LinkId l : route) h = (h ^ l) * 1099511628211ULL;
  uint64_t bits = 0;
  std::memcpy(&bits, &cap, sizeof bits);
  return (h ^ bits) * 1099511628211ULL;
}
}  // namespace

FlowId FlowNetwork::add_flow(std::span<const LinkId> route, double bytes, double rate_cap, uint64_t tag,
                             Time now) {
  MessageId mid;
  if (!free_messages_.empty()) {
    mid = free_messages_.back();
    free_messages_.pop_back();
  } else {
    mid = static_cast<MessageId>(messages_.size());
    messages_.emplace_back();
  }
  Message& msg = messages_[mid];
  msg.user = tag;
  msg.order = next_order_++;
  msg.active = true;
  ++active_;
  ++flows_started_;
  // The route's link with the fewest flows is where an active flow with this route and cap would be found.
  size_t fewest = std::numeric_limits<size_t>::max();
  LinkId narrow = route.front();
  for (LinkId lid : route)
    if (links_[lid].flows.size() < fewest) {
      fewest = links_[lid].flows.size();
      narrow = lid;
    }
  const double cap = rate_cap > 0 ? rate_cap : std::numeric_limits<double>::infinity();
  // That flow: among the few flows on the narrowest link, else by key (bundles_ holds the flows that started
  // where every link carried more; a flow it misses only costs a second flow on the route, at the same rate).
  const bool keyed = fewest > kScanFlows;
  const uint64_t key = keyed ? route_key(route, cap) : 0;
  FlowId match = kNoFlow;
  auto same = [&](FlowId g) {
    const Flow& b = flows_[g];
    return b.cap == cap && b.route.size() == route.size() && b.route.back() == route.back() &&
           std::equal(b.route.begin(), b.route.end(), route.begin());
  };
  if (keyed) {
    if (auto it = bundles_.find(key); it != bundles_.end() && flows_[it->second].active &&
                                      flows_[it->second].key == key && same(it->second))
      match = it->second;
  } else if (fewest > 0) {
    for (FlowId g : links_[narrow].flows)
      if (same(g)) {
        match = g;
        break;
      }
  }
  if (match != kNoFlow) {
    for (LinkId lid : route) {
      Link& l = links_[lid];
      ++l.nw;
      count_on(lid, bytes, now);
      if (l.incast != kNoIncast) count_sender(lid, route.front(), true);
    }
    grow_flow(match, mid, bytes, now);
    ++bundled_;
    return mid;
  }
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
    ++l.nw;
    ++l.certs;  // (uncertified, below)
    count_on(route[i], bytes, now);
    if (l.incast != kNoIncast) count_sender(route[i], route.front(), true);
  }
  f.mem.clear();
  f.mem.push_back(mid);
  f.head = mid;
  f.user = tag;
  msg.flow = id;
  msg.pos = 0;
  msg.due = bytes;
  f.w = 1;
  f.key = key;
  f.remaining = bytes;
  f.rate = 0;
  f.cap = cap;
  f.updated = now;
  f.finish = Time::max();
  f.order = msg.order;
  f.bottleneck = kUncertified;
  f.cls = kNoClass;
  f.joining = false;
  f.active = true;
  f.pending = true;
  new_flows_.push_back(id);
  if (keyed) {
    bundles_[key] = id;  // (a key shared by another route: the newest flow takes it)
    if (bundles_.size() > 2 * flows_.size() + 1024)  // drop the keys of flows that ended (amortised)
      std::erase_if(bundles_, [&](const auto& e) {
        return !flows_[e.second].active || flows_[e.second].key != e.first;
      });
  }
  return mid;
}

// The head's bytes left at `now`.
double FlowNetwork::head_left(const Flow& f, Time now) const {
  if (f.cls != kNoClass) {
    const Link& l = links_[f.cls];
    return std::max(0.0, f.vtag - (l.vt + l.cls_rate * (now - l.vt_at).seconds()));
  }
  return std::max(0.0, f.remaining - f.rate * (now - f.updated).seconds());
}

// Message m of `bytes` joins flow id (same route, same cap). The flow leaves the links it held at its rate as
// if it had ended (they are re-shared) and starts again as a new flow of one more message: both are events
// the resolve takes as they come.
void FlowNetwork::grow_flow(FlowId id, MessageId m, double bytes, Time now) {
  Flow& f = flows_[id];
  if (f.cls != kNoClass) leave_class(id, now);
  const double left = head_left(f, now);
  Message& msg = messages_[m];
  msg.flow = id;
  msg.due = messages_[f.mem.front()].due - left + bytes;
  msg.pos = static_cast<uint32_t>(f.mem.size());
  f.mem.push_back(m);
  message_sift(f, msg.pos);
  f.remaining = f.mem.front() == m ? bytes : left;
  f.head = f.mem.front();
  f.order = messages_[f.head].order;
  f.user = messages_[f.head].user;
  f.updated = now;
  if (!f.pending) {  // it held its links: they lose it (as when a flow ends) until it is placed again
    const double gone = f.rate * f.w;
    for (LinkId lid : f.route) {
      Link& l = links_[lid];
      l.est -= gone;
      if (!l.dirty) {
        l.dirty = true;
        dirty_links_.push_back(lid);
      }
    }
    f.rate = 0;
    heap_erase(id);
    f.finish = Time::max();
    set_bottleneck(id, kUncertified);
    f.pending = true;
    new_flows_.push_back(id);
  }
  ++f.w;
}

bool FlowNetwork::message_before(MessageId a, MessageId b) const {
  const Message& x = messages_[a];
  const Message& y = messages_[b];
  return x.due != y.due ? x.due < y.due : x.order < y.order;
}

void FlowNetwork::message_sift(Flow& f, size_t i) {
  sift(
      f.mem, i, [&](MessageId a, MessageId b) { return message_before(a, b); },
      [&](size_t at, MessageId m) {
        f.mem[at] = m;
        messages_[m].pos = static_cast<uint32_t>(at);
      });
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

// (Written out: through `sift` this heap, the hottest, took 15% more instructions; cachegrind on
// `bench_engine alps-ring-256-flow`.)
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
  Flow& f = flows_[id];
  const MessageId done = f.head;
  const uint64_t user = f.user;
  messages_[done].active = false;
  free_messages_.push_back(done);
  --active_;
  const double gone = rate_of(id);
  if (f.w > 1) {  // the next message becomes the head, on the same clock at the same rate
    for (LinkId lid : f.route) {
      Link& l = links_[lid];
      --l.nw;
      l.est -= gone;
      if (l.incast != kNoIncast) count_sender(lid, f.route.front(), false);
      count_off(lid, f.finish);
      if (!l.dirty) {
        l.dirty = true;
        dirty_links_.push_back(lid);
      }
    }
    --f.w;
    const double due = messages_[done].due;
    f.mem.front() = f.mem.back();
    f.mem.pop_back();
    message_sift(f, 0);
    f.head = f.mem.front();
    const Message& next = messages_[f.head];
    const double step = std::max(0.0, next.due - due);
    f.order = next.order;
    f.user = next.user;
    if (f.cls != kNoClass) {
      LinkId cid = f.cls;
      Link& c = links_[cid];
      count_member(cid, id, -1);
      --c.mw;
      f.vtag += step;
      heap_erase(id);
      c.head = kNoFlow;
      class_sift(c, f.cls_pos);
      place_head(cid);
    } else {
      f.remaining = step;
      f.updated = f.finish;
      f.finish = f.updated + Time::from_seconds(step / f.rate);
      heap_update(id);
    }
    return user;
  }
  FlowId last = heap_.back();
  heap_.pop_back();
  f.heap_pos = kNotInHeap;
  if (last != id) {
    heap_place(0, last);
    heap_sift(0);
  }
  if (f.cls != kNoClass) {  // the class's first member: the next one takes its place in the heap
    LinkId cid = f.cls;
    Link& c = links_[cid];
    c.head = kNoFlow;
    class_remove(cid, id);
    f.cls = kNoClass;
    if (c.members.empty())
      c.vt = 0;
    else
      place_head(cid);
  }
  count_certs(f, -1);
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
    --l.nw;
    l.est = l.flows.empty() ? 0 : l.est - gone;
    if (l.incast != kNoIncast) count_sender(f.route[i], f.route.front(), false);
    count_off(f.route[i], f.finish);
    if (!l.flows.empty() && !l.dirty) {
      l.dirty = true;
      dirty_links_.push_back(f.route[i]);
    }
  }
  f.w = 0;
  f.mem.clear();
  f.active = false;
  free_flows_.push_back(id);
  return user;
}

void FlowNetwork::heap_erase(FlowId id) {
  Flow& f = flows_[id];
  if (f.heap_pos == kNotInHeap) return;
  size_t i = f.heap_pos;
  FlowId last = heap_.back();
  heap_.pop_back();
  f.heap_pos = kNotInHeap;
  if (last != id) {
    heap_place(i, last);
    heap_sift(i);
  }
}

// Class heap of a link: members by (finish tag, creation order), each member's index kept in cls_pos.
bool FlowNetwork::before_in_class(FlowId a, FlowId b) const {
  const Flow& x = flows_[a];
  const Flow& y = flows_[b];
  return x.vtag != y.vtag ? x.vtag < y.vtag : x.order < y.order;
}

void FlowNetwork::class_sift(Link& l, size_t i) {
  sift(
      l.members, i, [&](FlowId a, FlowId b) { return before_in_class(a, b); },
      [&](size_t at, FlowId f) {
        l.members[at] = f;
        flows_[f].cls_pos = static_cast<uint32_t>(at);
      });
}

void FlowNetwork::class_insert(LinkId lid, FlowId f) {
  Link& l = links_[lid];
  flows_[f].cls = lid;
  flows_[f].cls_pos = static_cast<uint32_t>(l.members.size());
  l.members.push_back(f);
  class_sift(l, l.members.size() - 1);
  l.mw += flows_[f].w;
  count_member(lid, f, flows_[f].w);
}

void FlowNetwork::class_remove(LinkId lid, FlowId f) {
  count_member(lid, f, -static_cast<int64_t>(flows_[f].w));
  Link& l = links_[lid];
  l.mw -= flows_[f].w;
  size_t i = flows_[f].cls_pos;
  FlowId last = l.members.back();
  l.members.pop_back();
  if (last != f) {
    l.members[i] = last;
    flows_[last].cls_pos = static_cast<uint32_t>(i);
    class_sift(l, i);
  }
}

// Counts the dw messages (dw < 0: out) of member f of class lid in the class's entry for each other link of
// its route; an entry leaves both lists when its count falls to zero.
void FlowNetwork::count_member(LinkId lid, FlowId f, int64_t dw) {
  for (LinkId m : flows_[f].route) {
    if (m == lid) continue;
    std::vector<std::pair<LinkId, uint32_t>>& classes = links_[m].in_classes;
    size_t k = 0;
    while (k < classes.size() && classes[k].first != lid) ++k;
    std::vector<ClassLink>& entries = links_[lid].cls_links;
    if (dw > 0) {
      if (k < classes.size()) {
        entries[classes[k].second].count += static_cast<uint32_t>(dw);
      } else {
        entries.push_back(ClassLink{m, static_cast<uint32_t>(dw), static_cast<uint32_t>(classes.size())});
        classes.emplace_back(lid, static_cast<uint32_t>(entries.size() - 1));
      }
      continue;
    }
    assert(k < classes.size());
    uint32_t idx = classes[k].second;
    if ((entries[idx].count -= static_cast<uint32_t>(-dw)) > 0) continue;
    classes[k] = classes.back();  // swap-remove from both lists, re-pointing the moved entries
    classes.pop_back();
    if (k < classes.size())
      links_[classes[k].first].cls_links[classes[k].second].back = static_cast<uint32_t>(k);
    entries[idx] = entries.back();
    entries.pop_back();
    if (idx < entries.size()) links_[entries[idx].link].in_classes[entries[idx].back].second = idx;
  }
}

// V at `now`; the reference (vt, vt_at) moves only when the class rate changes or a member leaves it, so
// members with equal tags get equal finish times.
void FlowNetwork::advance_class(Link& l, Time now) {
  if (l.vt_at != now) {
    l.vt += l.cls_rate * (now - l.vt_at).seconds();
    l.vt_at = now;
  }
}

// Puts the class's first member in the completion heap (re-keyed when it is there already).
void FlowNetwork::place_head(LinkId lid) {
  Link& l = links_[lid];
  FlowId first = l.members.front();
  if (l.head != first && l.head != kNoFlow) heap_erase(l.head);
  l.head = first;
  Flow& f = flows_[first];
  f.finish = l.vt_at + Time::from_seconds(std::max(0.0, f.vtag - l.vt) / l.cls_rate);
  heap_update(first);
}

// A member becomes an ordinary flow at the class rate with the bytes it has left.
void FlowNetwork::leave_class(FlowId id, Time now) {
  Flow& f = flows_[id];
  LinkId lid = f.cls;
  Link& l = links_[lid];
  advance_class(l, now);
  f.remaining = std::max(0.0, f.vtag - l.vt);
  f.rate = l.cls_rate;
  f.updated = now;
  class_remove(lid, id);
  f.cls = kNoClass;
  if (l.head == id) {
    l.head = kNoFlow;  // its heap entry stays right: same rate, same finish
  } else {
    f.finish = now + Time::from_seconds(f.remaining / f.rate);
    heap_update(id);
  }
  if (l.members.empty())
    l.vt = 0;
  else if (l.head == kNoFlow)
    place_head(lid);
}

void FlowNetwork::set_rate(FlowId id, double rate, Time now) {
  Flow& f = flows_[id];
  if (f.updated != now) {
    f.remaining = std::max(0.0, f.remaining - f.rate * (now - f.updated).seconds());
    f.updated = now;
  }
  if (rate == f.rate && f.finish != Time::max()) return;  // unchanged: the heap entry is still right
  const double change = (rate - f.rate) * f.w;
  for (LinkId l : f.route) links_[l].est += change;
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
// Times one link may be handed on by class steps in one resolve (a chain of re-shares that comes back to a
// link ends in the region solve instead).
constexpr uint32_t kMaxRefills = 64;
}  // namespace

void FlowNetwork::resolve(Time now) {
  if (new_flows_.empty() && dirty_links_.empty() && recap_links_.empty()) return;
  ++stamp_;
  now_ = now;
  // Incast links whose senders changed take their new capacity first; the ones that changed hand every flow
  // on them to the region below (a capacity change moves certificates that no class step accounts for).
  size_t recapped = 0;
  for (LinkId lid : recap_links_) {
    Link& l = links_[lid];
    Incast& in = incasts_[l.incast];
    in.recap = false;
    double c = in.line * in.curve->goodput(static_cast<double>(std::max<size_t>(1, in.senders.size())));
    if (c == l.capacity) continue;
    l.capacity = c;
    recap_links_[recapped++] = lid;
  }
  recap_links_.resize(recapped);
  region_flows_.clear();
  region_links_.clear();
  // New flows: alone on their links they take their rate; next to a class (or flows that may form one) they
  // try to join it; the rest go to the region.
  joins_.clear();
  size_t kept = 0;
  for (size_t i = 0; i < new_flows_.size(); ++i) {
    FlowId f = new_flows_[i];
    if (!flows_[f].active || flows_[f].join == stamp_) continue;
    flows_[f].join = stamp_;
    flows_[f].pending = false;
    if (alone(f)) {  // nothing else on its links: no sharing to solve, nobody else affected
      set_rate(f, alone_rate(f), now);
      continue;
    }
    LinkId target = class_target(f);
    if (target != kUncertified)
      joins_.emplace_back(target, f);
    else
      new_flows_[kept++] = f;
  }
  new_flows_.resize(kept);
  std::stable_sort(joins_.begin(), joins_.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < joins_.size();) {
    size_t j = i;
    join_group_.clear();
    while (j < joins_.size() && joins_[j].first == joins_[i].first) join_group_.push_back(joins_[j++].second);
    if (!class_step(joins_[i].first, join_group_, now))
      new_flows_.insert(new_flows_.end(), join_group_.begin(), join_group_.end());
    i = j;
  }
  // A link a flow left: one class step when its flows allow it, else the region takes the flows certified on
  // it (a link a flow left can give more only to them; the others keep their certificates).
  kept = 0;
  for (size_t i = 0; i < dirty_links_.size(); ++i) {
    LinkId l = dirty_links_[i];
    links_[l].dirty = false;
    if (links_[l].fast == stamp_ && links_[l].refill != stamp_) continue;
    // Without a class and without flows certified on it or uncertified, the flow that left changed no
    // certificate here: a class step would find no one to re-share, and the region nobody to take.
    if (links_[l].members.empty() && links_[l].certs == 0) {
      ++unaffected_;
      continue;
    }
    if (class_step(l, {}, now)) continue;
    dirty_links_[kept++] = l;
  }
  dirty_links_.resize(kept);
  for (FlowId f : new_flows_)
    if (flows_[f].stamp != stamp_) add_to_region(f);
  for (LinkId l : dirty_links_) {
    for (FlowId f : links_[l].flows)
      if (flows_[f].stamp != stamp_ && (flows_[f].bottleneck == l || flows_[f].bottleneck == kUncertified))
        add_to_region(f);
  }
  for (LinkId l : recap_links_)
    for (FlowId f : links_[l].flows)
      if (flows_[f].stamp != stamp_) add_to_region(f);
  new_flows_.clear();
  dirty_links_.clear();
  recap_links_.clear();
  if (region_flows_.empty()) return;
  for (int round = 0;; ++round) {
    if (!solve_region()) break;  // every region flow alone on its links: nothing held is affected
    if (round == kGrowthRounds) {
      ++fallbacks_;
      grow_to_components();
      solve_region();
      for (FlowId f : region_flows_) set_bottleneck(f, certify(f));
      break;
    }
    if (!grow_region()) break;
    ++growths_;
  }
  for (FlowId f : region_flows_) set_rate(f, flows_[f].trial, now);
}

// The link a new flow may join the class of: the link on its route whose class has the lowest rate (where a
// max-min flow through several classes is held), else the shared link with the smallest even share (a class
// may form there); kUncertified when there is none. The class step checks that the choice is right.
LinkId FlowNetwork::class_target(FlowId f) const {
  LinkId best = kUncertified;
  bool found = false;
  double best_share = std::numeric_limits<double>::infinity();
  for (LinkId m : flows_[f].route) {
    const Link& l = links_[m];
    if (l.incast != kNoIncast) continue;  // no class on an incast link: its capacity moves with its senders
    if (!l.members.empty()) {
      if (!found || l.cls_rate < links_[best].cls_rate) best = m;
      found = true;
    } else if (!found && l.nw > 1) {
      double s = l.capacity / static_cast<double>(l.nw);
      if (s < best_share) {
        best_share = s;
        best = m;
      }
    }
  }
  return best;
}

// One processor-sharing step on link l: `joiners` (new flows crossing l) join its class, and the class rate
// becomes l's even share among the members and joiners of what the flows certified elsewhere leave. Without a
// class, the flows certified on l at one common rate form it first. Done only when the result provably is the
// max-min allocation: every flow on l is a member, a joiner, or certified on another link at no more than the
// new share (a held flow above it moves into the class, see `movers_`); no member or joiner is capped below
// it; and every other link a member or joiner crosses stays below capacity after the change (then no flow is
// certified on it, before or after, so no certificate elsewhere moves), or carries no other flows than the
// members and joiners and fits them at the new share (a link in series with l). Returns false, changing
// nothing, otherwise.
bool FlowNetwork::class_step(LinkId lid, std::span<const FlowId> joiners, Time now) {
  Link& l = links_[lid];
  if (l.incast != kNoIncast) return false;
  bool forming = l.members.empty();
  double old = forming ? 0 : l.cls_rate;
  double cap = forming ? std::numeric_limits<double>::infinity() : l.cls_cap;
  double residual = l.capacity;
  double held_top = 0;
  for (FlowId f : joiners) {
    flows_[f].joining = true;
    cap = std::min(cap, flows_[f].cap);
  }
  // The other flows certified here (with a rate, so in the completion heap) are candidates: they join the
  // class when their rates are those of the members (or, without a class, of each other) to the slack of the
  // certificate, i.e. all of them are the largest on the link.
  auto candidate = [&](FlowId g) {
    const Flow& fg = flows_[g];
    return !fg.joining && fg.cls == kNoClass && fg.bottleneck == lid && fg.heap_pos != kNotInHeap;
  };
  bool ok = true;
  cands_.clear();
  movers_.clear();
  // (Skipped when every flow on l is a member or a joiner: nothing is held there and nothing is a candidate.)
  if (l.flows.size() != l.members.size() + joiners.size()) {
    for (FlowId g : l.flows) {
      const Flow& fg = flows_[g];
      if (fg.joining || fg.cls == lid) continue;
      if (candidate(g)) {
        if (cands_.empty() && forming)
          old = fg.rate;
        else if (std::abs(fg.rate - old) > old * kSlack)
          ok = false;
        cands_.push_back(g);
        cap = std::min(cap, fg.cap);
        continue;
      }
      if (fg.bottleneck == kUncertified || fg.bottleneck == lid) ok = false;
      double r = rate_of(g);
      residual -= r * fg.w;
      // A held flow with a rate (a member of another link's class, or in the completion heap) may have to
      // come down to the new share (see below), unless the link it is certified on is still to be re-shared
      // in this resolve (a class step counts on it to give there).
      LinkId on = fg.cls != kNoClass ? fg.cls : fg.bottleneck;
      if ((fg.cls != kNoClass || fg.heap_pos != kNotInHeap) && on != kUncertified &&
          (on == kCapped || links_[on].refill != stamp_))
        movers_.emplace_back(r, g);
      else
        held_top = std::max(held_top, r);
    }
  }
  size_t n = l.mw;  // messages of members, candidates and joiners
  for (FlowId g : cands_) n += flows_[g].w;
  for (FlowId g : joiners) n += flows_[g].w;
  double share = n > 0 ? std::max(0.0, residual) / static_cast<double>(n) : 0;
  // Held flows above the share (certified on another link, or at their cap, at the rate they had before l
  // filled up) move into the class, largest first: each one that moves gives back its rate and takes the
  // share, which rises, until the next is at or below it. Every flow on l is then at the share or below it,
  // and the movers' other links lose load: a saturated one among them is re-shared next (`refill` below),
  // as its own flows may take what the movers freed.
  double mover_top = 0;
  for (const auto& m : movers_) mover_top = std::max(mover_top, m.first);
  if (ok && n > 0 && mover_top > share) {
    std::sort(movers_.begin(), movers_.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    size_t moved = 0;
    while (moved < movers_.size() && movers_[moved].first > share) {
      Flow& fm = flows_[movers_[moved].second];
      residual += movers_[moved].first * fm.w;
      cap = std::min(cap, fm.cap);
      cands_.push_back(movers_[moved].second);
      fm.joining = true;  // (can_give: no longer one of its link's own)
      n += fm.w;
      ++moved;
      share = std::max(0.0, residual) / static_cast<double>(n);
    }
    mover_top = moved < movers_.size() ? movers_[moved].first : 0;
  }
  held_top = std::max(held_top, mover_top);
  ok = ok && share > 0 && held_top <= share && share <= cap;  // (no members, no candidates: joiners only)
  // Load changes on the other links of members, candidates and joiners: the members' from the class's
  // per-link counts (each member changes by d), the others' by walking their routes.
  const double d = share - old;
  ++check_;
  delta_links_.clear();
  refills_.clear();
  double own = 0;                            // the load change on l
  auto add = [&](FlowId g, double change) {  // (change: per message)
    const uint32_t w = flows_[g].w;
    own += change * w;
    for (LinkId m : flows_[g].route) {
      if (m == lid) continue;
      Link& lm = links_[m];
      if (lm.fixing == 0) {
        lm.delta = 0;
        lm.crossing = 0;
        delta_links_.push_back(m);
      }
      lm.fixing += w;  // (counts the step's messages on m)
      lm.delta += change * w;
    }
  };
  // The exact load change on m, summed in the order of the members' route walk this replaces (members, then
  // candidates, then joiners): the decisive check below compares it with the limit.
  auto exact_delta = [&](LinkId m) {
    double x = 0;
    for (uint32_t i = 0; i < links_[m].crossing; ++i) x += d;
    for (FlowId g : cands_)
      for (LinkId r : flows_[g].route)
        if (r == m) x += (share - rate_of(g)) * flows_[g].w;
    for (FlowId g : joiners)
      for (LinkId r : flows_[g].route)
        if (r == m) x += share * flows_[g].w;
    return x;
  };
  if (ok) {
    own = d * static_cast<double>(l.mw);
    for (const ClassLink& e : l.cls_links) {
      Link& lm = links_[e.link];
      lm.fixing = e.count;
      lm.crossing = e.count;
      lm.delta = d * e.count;  // (to rounding; est only, and the est check's margin)
      delta_links_.push_back(e.link);
    }
    for (FlowId g : cands_) add(g, share - rate_of(g));
    for (FlowId g : joiners) add(g, share);
    for (LinkId m : delta_links_) {
      Link& lm = links_[m];
      if (lm.fixing == lm.nw) {  // only the class's flows (a link in series with l): they fit
        if (share * lm.fixing <= lm.capacity * (1 + kSlack)) continue;
        ok = false;
        break;
      }
      double limit = lm.capacity * (1 - kSlack);
      if (lm.est + std::max(0.0, lm.delta) < limit - lm.capacity * 1e-7) continue;  // clear of the drift
      refresh_link(m);
      double x = exact_delta(m);
      if (lm.load + std::max(0.0, x) < limit) continue;
      // Saturated: the step may still go when m's own flows (certified on it) take what it frees (x <= 0)
      // or give what it takes and stay above the share; they are re-shared next (`refill`).
      if (lm.incast == kNoIncast && (lm.refilled != stamp_ || lm.refills < kMaxRefills) &&
          (x <= 0 || can_give(m, x, share))) {
        refills_.push_back(m);
        continue;
      }
      ok = false;
      break;
    }
  }
  for (LinkId m : delta_links_) {
    links_[m].fixing = 0;
    if (ok) links_[m].est += links_[m].delta;
  }
  if (ok)
    for (LinkId m : refills_) {
      Link& lm = links_[m];
      if (lm.refilled != stamp_) lm.refills = 0;
      lm.refilled = stamp_;
      ++lm.refills;
      lm.refill = stamp_;
      ++refill_marks_;
      if (!lm.dirty) {
        lm.dirty = true;
        dirty_links_.push_back(m);
      }
    }
  if (!ok) {
    for (FlowId f : joiners) flows_[f].joining = false;
    for (FlowId f : cands_) flows_[f].joining = false;
    return false;
  }
  if (forming) {
    l.vt = 0;
    l.vt_at = now;
  } else {
    advance_class(l, now);
  }
  for (FlowId g : cands_) {
    Flow& fg = flows_[g];
    if (fg.bottleneck != lid) ++moves_;
    if (fg.cls != kNoClass) leave_class(g, now);  // a mover from another class: an ordinary flow first
    double left = std::max(0.0, fg.remaining - fg.rate * (now - fg.updated).seconds());
    heap_erase(g);
    fg.joining = false;
    set_bottleneck(g, lid);  // (a candidate's already; a mover's from now)
    fg.vtag = l.vt + left;
    class_insert(lid, g);
  }
  for (FlowId g : joiners) {
    Flow& fg = flows_[g];
    fg.joining = false;
    fg.vtag = l.vt + fg.remaining;
    set_bottleneck(g, lid);
    class_insert(lid, g);
  }
  l.est += own;
  l.cls_rate = share;
  l.cls_cap = cap;
  l.fast = stamp_;
  l.refill = 0;
  ++class_updates_;
  place_head(lid);
  return true;
}

// Whether saturated link m, whose load a class step raises by x (its flows at share), has flows certified on
// it that can give up x and stay above the share (their re-share then follows, see `refill`). This also keeps
// what the other flows hold on m below its capacity, so that the flows certified there never face a residual
// of zero in the region solve.
bool FlowNetwork::can_give(LinkId m, double x, double share) const {
  uint32_t k = 0;
  double mine = 0;
  for (FlowId g : links_[m].flows) {
    const Flow& fg = flows_[g];
    if (fg.joining || fg.bottleneck != m) continue;
    k += fg.w;
    mine += rate_of(g) * fg.w;
  }
  const Link& lm = links_[m];
  return k > 0 && lm.load + x - mine + share * static_cast<double>(k) < lm.capacity * (1 - kSlack);
}

bool FlowNetwork::alone(FlowId f) const {
  for (LinkId lid : flows_[f].route)
    if (links_[lid].flows.size() != 1) return false;
  return true;
}

// The rate of (each message of) a flow alone on its links: its cap or its smallest capacity shared by its
// messages, where its certificate holds.
double FlowNetwork::alone_rate(FlowId f) {
  Flow& fl = flows_[f];
  double r = fl.cap;
  LinkId on = kCapped;
  const bool uncertified = fl.bottleneck == kUncertified;  // (a new flow: counted on every link)
  if (!uncertified) count_certs(fl, -1);
  for (LinkId lid : fl.route) {
    if (uncertified) --links_[lid].certs;
    const double c = links_[lid].capacity / fl.w;
    if (c < r) {
      r = c;
      on = lid;
    }
  }
  fl.bottleneck = on;
  count_certs(fl, 1);
  return r;
}

void FlowNetwork::add_to_region(FlowId f) {
  if (flows_[f].cls != kNoClass) leave_class(f, now_);
  flows_[f].stamp = stamp_;
  region_flows_.push_back(f);
  for (LinkId l : flows_[f].route)
    if (links_[l].stamp != stamp_) {
      links_[l].stamp = stamp_;
      region_links_.push_back(l);
    }
}

double FlowNetwork::current_rate(FlowId f) const {
  return flows_[f].stamp == stamp_ ? flows_[f].trial : rate_of(f);
}

void FlowNetwork::refresh_link(LinkId lid) {
  Link& l = links_[lid];
  if (l.checked == check_) return;
  l.checked = check_;
  l.load = 0;
  l.top = 0;
  for (FlowId f : l.flows) {
    double r = current_rate(f);
    l.load += r * flows_[f].w;
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

void FlowNetwork::set_bottleneck(FlowId f, LinkId b) {
  Flow& fl = flows_[f];
  if (fl.bottleneck == b) return;
  count_certs(fl, -1);
  fl.bottleneck = b;
  count_certs(fl, 1);
}

// Counts flow f (d = 1) or takes it out (d = -1): in `certs` of the link it is certified on, or of every link
// of its route when it is uncertified; in `capped` of every link of its route when it runs at its cap.
void FlowNetwork::count_certs(const Flow& f, int d) {
  if (f.bottleneck == kUncertified)
    for (LinkId l : f.route) links_[l].certs += d;
  else if (f.bottleneck == kCapped)
    for (LinkId l : f.route) links_[l].capped += d;
  else
    links_[f.bottleneck].certs += d;
}

// Checks the certificates the region's trial rates may have broken and adds to the region every flow that
// must move: a held flow whose bottleneck was a region link and that has none now (it may rise), and, for a
// region flow without a bottleneck, the held flows above it on its links (they must come down). A held flow
// certified on a link outside the region keeps its certificate: nothing on that link changed. Every flow
// checked keeps the link it is certified on. Returns whether the region grew.
bool FlowNetwork::grow_region() {
  grown_.clear();
  bool stuck = false;  // a region flow failed with no held flow above it (rounding): take the components
  for (FlowId f : region_flows_) {
    Flow& fl = flows_[f];
    set_bottleneck(f, certify(f));
    if (fl.bottleneck != kUncertified) continue;
    // Each saturated link is scanned once per round and again only for a lower threshold (the flows newly
    // above it), which adds the flows in the order a scan per region flow would first meet them.
    double above = fl.trial * (1 + kSlack);
    bool found = false;
    for (LinkId on : fl.route) {
      Link& l = links_[on];  // refreshed by certify
      if (l.load < l.capacity * (1 - kSlack)) continue;
      bool again = l.scanned == check_;
      if (!again || above < l.scan_above) {
        if (!again) l.held_max = 0;
        for (FlowId g : l.flows) {
          if (flows_[g].stamp == stamp_) continue;
          double r = rate_of(g);
          if (!again) l.held_max = std::max(l.held_max, r);
          if (r > above && !(again && r > l.scan_above)) grown_.push_back(g);
        }
        l.scanned = check_;
        l.scan_above = above;
      }
      found = found || l.held_max > above;
    }
    stuck = stuck || !found;
  }
  for (LinkId lid : region_links_) {
    // A link with no flow certified on it, uncertified or capped: the flows the loop would check here are
    // certified on another region link, and are checked there.
    if (links_[lid].certs == 0 && links_[lid].capped == 0) continue;
    for (FlowId g : links_[lid].flows) {
      Flow& gl = flows_[g];
      if (gl.stamp == stamp_ || gl.checked == check_) continue;
      if (gl.bottleneck != kCapped && gl.bottleneck != kUncertified && links_[gl.bottleneck].stamp != stamp_)
        continue;
      gl.checked = check_;
      set_bottleneck(g, certify(g));
      if (gl.cls != kNoClass && gl.bottleneck != gl.cls) leave_class(g, now_);  // no longer the class's
      if (gl.bottleneck == kUncertified) grown_.push_back(g);
    }
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
  solved_flows_ += region_flows_.size();
  for (LinkId lid : region_links_) {
    Link& l = links_[lid];
    l.residual = l.capacity;
    l.unfixed = 0;
    l.load = 0;  // (the held flows' rates; the region's trial rates follow as they are fixed)
    l.top = 0;
    for (FlowId f : l.flows)
      if (flows_[f].stamp == stamp_) {
        l.unfixed += flows_[f].w;
      } else {
        double r = rate_of(f);
        l.residual -= r * flows_[f].w;
        l.load += r * flows_[f].w;
        l.top = std::max(l.top, r);
      }
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
      for (LinkId lid : fl.route) {
        Link& l = links_[lid];
        l.unfixed = 0;
        l.load = fl.trial * fl.w;
        l.top = fl.trial;
      }
      continue;
    }
    ++left;
    if (fl.cap < std::numeric_limits<double>::infinity()) capped_.push_back(f);
    double most = fl.cap;  // no rate can exceed the smallest residual on the route
    for (LinkId lid : fl.route) most = std::min(most, links_[lid].residual);
    for (LinkId lid : fl.route) links_[lid].demand += most * fl.w;
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
      for (LinkId lid : flows_[f].route) {
        if (links_[lid].fixing == 0) touched_links_.push_back(lid);
        links_[lid].fixing += flows_[f].w;
      }
    for (FlowId f : todo_) flows_[f].trial = share;
    for (LinkId lid : touched_links_) {
      Link& l = links_[lid];
      l.load += share * l.fixing;
      l.top = std::max(l.top, share);
      l.residual = std::max(0.0, l.residual - share * l.fixing);
      l.unfixed -= l.fixing;
      l.fixing = 0;
      if (l.unfixed == 0) continue;
      l.share = l.residual / l.unfixed;
    }
    left -= todo_.size();
  }
  // Every region link's load and largest rate under the trial rates are now known: the certificates checked
  // next (grow_region, in a round of its own) read them without summing the link's flows again.
  ++check_;
  for (LinkId lid : region_links_) links_[lid].checked = check_;
  return shared;
}

std::vector<LinkUsage> FlowNetwork::link_usage(Time now) const {
  std::vector<LinkUsage> out(links_.size());
  for (LinkId l = 0; l < links_.size(); ++l) {
    out[l].link = l;
    if (l >= stats_.size()) continue;
    int64_t open = stats_[l].on == 0 ? 0 : std::max<int64_t>(0, now.picoseconds() - stats_[l].busy_since);
    out[l].bytes = stats_[l].bytes;
    out[l].busy_s = Time::ps(stats_[l].busy_ps + open).seconds();
    out[l].peak_flows = stats_[l].peak;
  }
  return out;
}

void FlowNetwork::count_on(LinkId l, double bytes, Time now) {
  if (stats_.empty()) stats_.resize(links_.size());  // on the first flow: none without flows
  LinkStats& u = stats_[l];
  u.bytes += bytes;
  if (++u.on == 1) u.busy_since = now.picoseconds();
  u.peak = std::max(u.peak, u.on);
}

void FlowNetwork::count_off(LinkId l, Time now) {
  LinkStats& u = stats_[l];
  if (--u.on == 0) u.busy_ps += now.picoseconds() - u.busy_since;
}

void FlowNetwork::open_direct(std::span<const LinkId> route, double bytes, Time now) {
  for (LinkId l : route) count_on(l, bytes, now);
}

void FlowNetwork::close_direct(std::span<const LinkId> route, Time now) {
  for (LinkId l : route) count_off(l, now);
}

double FlowNetwork::remaining(FlowId id, Time now) const {
  const Message& m = messages_[id];
  const Flow& f = flows_[m.flow];
  return head_left(f, now) + (m.due - messages_[f.head].due);
}

std::vector<FlowId> FlowNetwork::active_flow_ids() const {
  std::vector<FlowId> out;
  for (FlowId m = 0; m < messages_.size(); ++m)
    if (messages_[m].active) out.push_back(m);
  return out;
}

}  // namespace ddlsim
