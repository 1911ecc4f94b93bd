#include "sim/train/transport.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <stdexcept>

namespace ddlsim {

Transport::Transport(const Topology& topo, const CommModel& comm, EventQueue& events)
    : comm_(comm), events_(events), router_(topo) {
  topo.build_network(net_);
  // TCP incast where senders converge: a fabric switch's port into a host.
  if (comm_.incast.on())
    for (LinkId l = 0; l < topo.links().size(); ++l) {
      const DirectedLink& d = topo.links()[l];
      if (d.cls == LinkClass::Host && topo.vertex(d.from).kind == VertexKind::Switch &&
          topo.vertex(d.to).kind != VertexKind::Switch)
        net_.set_incast(l, &comm_.incast);
    }
}

Transport::Path Transport::make_path(VertexId src, VertexId dst, uint32_t p) {
  const std::vector<LinkId>& route = router_.route(src, dst, p);
  return Path{&route, net_.route_latency(route), net_.route_capacity(route).value,
              router_.same_node(src, dst)};
}

const Transport::Path& Transport::path(VertexId src, VertexId dst, uint32_t p) {
  uint64_t key = route_key(src, dst, p);
  auto it = paths_.find(key);
  if (it != paths_.end()) return it->second;
  return paths_.emplace(key, make_path(src, dst, p)).first->second;
}

namespace {
// The time from a message's send to its first byte on `route_latency`: a protocol's per-step latency is the
// whole of it (NCCL's model counts the links in it); otherwise the route's latency and the comm model's α;
// nothing for a streamed message.
Time message_latency(const MessageProtocol& protocol, bool same_node, Time route_latency, Time alpha) {
  if (protocol.streamed) return Time();
  if (protocol.on()) return same_node ? protocol.alpha_intra : protocol.alpha_inter;
  return route_latency + alpha;
}
}  // namespace

void Transport::message_timing(const Path& path0, double bytes, Time& latency, double& rate,
                               const MessageProtocol& protocol) {
  const CommRange& range = (path0.same_node ? comm_.intra : comm_.inter).lookup(bytes);
  latency = message_latency(protocol, path0.same_node, path0.latency, range.alpha);
  rate = path0.capacity * range.efficiency;
  if (range.bandwidth > 0) rate = std::min(rate, range.bandwidth);
  if (protocol.on()) {  // payload bytes per second: the wire carries wire x as many
    rate /= protocol.wire_for(path0.same_node);
    if (protocol.rate_cap > 0) rate = std::min(rate, protocol.rate_cap);
  }
}

template <class F>
uint32_t Transport::for_each_part(const Path& minimal, VertexId src, VertexId dst, double bytes,
                                  const MessageProtocol& protocol, F&& part) {
  const CommRange& range = (minimal.same_node ? comm_.intra : comm_.inter).lookup(bytes);
  uint32_t paths = minimal.same_node ? 1 : std::max<uint32_t>(1, comm_.multipath);
  const double wire = protocol.wire_for(minimal.same_node);
  for (uint32_t p = 0; p < paths; ++p) {
    const Path& pp = p == 0 ? minimal : path(src, dst, p | rail(protocol));
    double rate_cap = pp.capacity * range.efficiency;
    if (range.bandwidth > 0) rate_cap = std::min(rate_cap, range.bandwidth / paths);
    if (range.efficiency >= 1 && range.bandwidth <= 0) rate_cap = 0;  // links alone decide
    if (protocol.on() && protocol.rate_cap > 0) {  // on the wire: the payload bound x the wire factor
      double cap = protocol.rate_cap * wire / paths;
      rate_cap = rate_cap > 0 ? std::min(rate_cap, cap) : cap;
    }
    part(FlowRequest{pp.route, bytes * wire / paths, rate_cap, 0},
         message_latency(protocol, minimal.same_node, pp.latency, range.alpha), pp.capacity, paths);
  }
  return paths;
}

uint32_t Transport::send(const Path& minimal, VertexId src, VertexId dst, double bytes, uint64_t tag,
                         Time now, const MessageProtocol& protocol, const std::vector<char>* unbound) {
  if (now < isolated_until_)
    throw std::logic_error("a transfer started while an isolated collective owned the network");
  return for_each_part(
      minimal, src, dst, bytes, protocol, [&](FlowRequest r, Time delay, double capacity, uint32_t paths) {
        r.tag = tag;
        if (unbound && paths == 1 &&
            std::all_of(r.route->begin(), r.route->end(), [&](LinkId l) { return (*unbound)[l] != 0; }))
          r.direct_rate = standalone_rate(r, capacity);
        uint32_t slot;
        if (free_requests_.empty()) {
          slot = static_cast<uint32_t>(requests_.size());
          requests_.emplace_back();
        } else {
          slot = free_requests_.back();
          free_requests_.pop_back();
        }
        requests_[slot] = r;
        ++pending_flow_starts_;
        ++parts_sent_;
        events_.schedule(now + delay, EventKind::FlowStart, slot);
      });
}

void Transport::start_flow(uint32_t slot, Time now) {
  const FlowRequest& r = requests_[slot];
  if (r.direct_rate > 0) {  // drains at that rate: no flow, only its usage and its end
    net_.open_direct(*r.route, r.bytes, now);
    events_.schedule(now + Time::from_seconds(r.bytes / r.direct_rate), EventKind::DirectDone, slot);
    return;
  }
  net_.add_flow(*r.route, r.bytes, r.cap, r.tag, now);
  free_requests_.push_back(slot);
  --pending_flow_starts_;
}

uint64_t Transport::finish_direct(uint32_t slot, Time now) {
  const FlowRequest& r = requests_[slot];
  net_.close_direct(*r.route, now);
  free_requests_.push_back(slot);
  --pending_flow_starts_;
  return r.tag;
}

// The parts of the messages by route (in first use), each with the most its parts of one round take at once
// (their standalone rates summed: a member may send two messages on one route in a round, as the two trees
// of a double tree between two ranks), and their sum on every link into `load`.
std::vector<Transport::RouteLoad> Transport::route_loads(const std::vector<MessageEnds>& messages,
                                                         const MessageProtocol& protocol,
                                                         std::vector<double>& load) {
  std::vector<RouteLoad> out;
  std::unordered_map<const std::vector<LinkId>*, size_t> index;
  std::vector<std::pair<uint32_t, double>>
      round_sum;  // per route: its latest round, and its parts' sum there
  for (const MessageEnds& m : messages)
    for_each_part(path(m.src, m.dst, rail(protocol)), m.src, m.dst, m.bytes, protocol.carrying(m.channels),
                  [&](const FlowRequest& r, Time, double capacity, uint32_t paths) {
                    auto [it, fresh] = index.try_emplace(r.route, out.size());
                    if (fresh) {
                      out.push_back({m.src, m.dst, r.route, 0.0, paths});
                      round_sum.push_back({m.round, 0.0});
                    }
                    auto& [round, sum] = round_sum[it->second];
                    if (round != m.round) round = m.round, sum = 0;
                    sum += standalone_rate(r, capacity);
                    out[it->second].rate = std::max(out[it->second].rate, sum);
                  });
  load.assign(net_.link_count(), 0.0);
  for (const RouteLoad& x : out)
    for (LinkId l : *x.route) load[l] += x.rate;
  return out;
}

std::vector<char> Transport::unbound_links(const std::vector<MessageEnds>& messages,
                                           const MessageProtocol& protocol) {
  std::vector<double> load;
  route_loads(messages, protocol, load);
  std::vector<char> out(net_.link_count(), 0);
  for (LinkId l = 0; l < net_.link_count(); ++l)
    out[l] = !net_.incast(l) && load[l] <= net_.capacity(l).value ? 1 : 0;
  return out;
}

void Transport::adapt_routes(const std::vector<MessageEnds>& messages, const MessageProtocol& protocol) {
  std::vector<double> load;
  const std::vector<RouteLoad> routes = route_loads(messages, protocol, load);
  const uint32_t flag = rail(protocol);
  auto room = [&](LinkId l, double rate) { return load[l] + rate <= net_.capacity(l).value * (1 + 1e-9); };
  // A detour depends only on the switch-to-switch links (their loads, less the message's own): one that found
  // no room for a rate finds none for a larger rate on the same fabric links until a move changes the loads.
  std::map<std::vector<LinkId>, double> failed;
  std::vector<LinkId> fabric;
  for (const RouteLoad& p : routes) {
    // (Only a switch-to-switch link a detour can leave; a NIC's cable in an incast stays.)
    if (p.paths != 1 || std::none_of(p.route->begin(), p.route->end(),
                                     [&](LinkId l) { return router_.between_switches(l) && !room(l, 0); }))
      continue;
    fabric.clear();
    std::copy_if(p.route->begin(), p.route->end(), std::back_inserter(fabric),
                 [&](LinkId l) { return router_.between_switches(l); });
    auto known = failed.find(fabric);
    if (known != failed.end() && p.rate >= known->second) continue;
    for (LinkId l : *p.route) load[l] -= p.rate;
    if (router_.detour(p.src, p.dst, flag, [&](LinkId l) { return !net_.incast(l) && room(l, p.rate); })) {
      if (auto it = paths_.find(route_key(p.src, p.dst, flag)); it != paths_.end())
        it->second = make_path(p.src, p.dst, flag);  // in place: whoever holds the path sees the detour
      for (LinkId l : router_.route(p.src, p.dst, flag)) load[l] += p.rate;
      failed.clear();
    } else {
      for (LinkId l : *p.route) load[l] += p.rate;
      double& least = failed.try_emplace(fabric, p.rate).first->second;
      least = std::min(least, p.rate);
    }
  }
}

}  // namespace ddlsim
