#include "sim/net/topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <queue>

namespace ddlsim {

const char* link_class_name(LinkClass c) {
  switch (c) {
    case LinkClass::NvLink:
      return "nvlink";
    case LinkClass::Pcie:
      return "pcie";
    case LinkClass::Host:
      return "host";
    case LinkClass::Local:
      return "local";
    case LinkClass::Global:
      return "global";
  }
  return "?";
}

VertexId Topology::add_vertex(VertexKind kind, int32_t node, std::string name, int32_t group) {
  VertexId id = static_cast<VertexId>(vertices_.size());
  vertices_.push_back(Vertex{kind, node, group, id, std::move(name)});
  out_.emplace_back();
  return id;
}

LinkId Topology::connect(VertexId a, VertexId b, LinkSpec spec, LinkClass cls) {
  LinkId ab = static_cast<LinkId>(links_.size());
  links_.push_back(DirectedLink{a, b, spec, cls});
  links_.push_back(DirectedLink{b, a, spec, cls});
  out_[a].push_back(ab);
  out_[b].push_back(ab + 1);
  return ab;
}

void Topology::build_network(FlowNetwork& net) const {
  net.reserve_links(links_.size());
  for (const DirectedLink& l : links_) net.add_link(l.spec.capacity, l.spec.latency);
}

namespace {
uint64_t mix(uint64_t x) {  // splitmix64 finaliser: a fixed, portable hash
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
}  // namespace

Router::Router(const Topology& topo)
    : topo_(topo),
      switch_index_(topo.vertex_count(), 0),
      host_index_(topo.vertex_count(), 0),
      gpu_rank_(topo.vertex_count(), 0) {
  uint32_t hosts = 0;
  for (VertexId v = 0; v < topo.vertex_count(); ++v) {
    const Vertex& x = topo.vertex(v);
    if (x.node < 0) {
      switch_index_[v] = static_cast<uint32_t>(switches_.size());
      switches_.push_back(v);
      continue;
    }
    if (x.kind == VertexKind::Gpu) {  // GPUs are added in local-rank order within their node
      if (static_cast<size_t>(x.node) >= node_nics_.size())
        node_nics_.resize(static_cast<size_t>(x.node) + 1);
      gpu_rank_[v] = static_cast<uint32_t>(node_nics_[static_cast<size_t>(x.node)].size());
      node_nics_[static_cast<size_t>(x.node)].push_back(x.nic);
    }
    for (LinkId l : topo.out_links(v))
      if (topo.vertex(topo.links()[l].to).node < 0) {
        host_index_[v] = hosts++;
        break;
      }
  }
}

// The NIC on src's node that the GPU of dst's local rank uses (src's own NIC when either end is not a GPU of
// a node with several, or the nodes differ in shape).
VertexId Router::rail_nic(VertexId src, VertexId dst) const {
  const Vertex &s = topo_.vertex(src), &d = topo_.vertex(dst);
  if (s.kind != VertexKind::Gpu || d.kind != VertexKind::Gpu) return s.nic;
  const std::vector<VertexId>& nics = node_nics_[static_cast<size_t>(s.node)];
  const uint32_t rank = gpu_rank_[dst];
  return rank < nics.size() && nics.size() == node_nics_[static_cast<size_t>(d.node)].size() ? nics[rank]
                                                                                             : s.nic;
}

bool Router::same_node(VertexId a, VertexId b) const {
  int32_t na = topo_.vertex(a).node;
  return na >= 0 && na == topo_.vertex(b).node;
}

LinkId Router::link_between(VertexId a, VertexId b) const {
  for (LinkId l : topo_.out_links(a))
    if (topo_.links()[l].to == b) return l;
  throw RoutingError(fmt::format("no link between {} and {}", topo_.vertex(a).name, topo_.vertex(b).name));
}

VertexId Router::attach_switch(VertexId nic) const {
  for (LinkId l : topo_.out_links(nic)) {
    VertexId to = topo_.links()[l].to;
    if (topo_.vertex(to).node < 0) return to;
  }
  throw RoutingError(fmt::format("{} is not connected to the network", topo_.vertex(nic).name));
}

const std::vector<LinkId>& Router::route(VertexId src, VertexId dst, uint32_t path) {
  uint64_t key = route_key(src, dst, path);
  if (auto p = detours_.find(key); p != detours_.end()) return *p->second;
  auto it = routes_.find(key);
  if (it != routes_.end()) return it->second;
  std::vector<LinkId> out;
  build(src, dst, path, nullptr, out);
  return routes_.emplace(key, std::move(out)).first->second;
}

bool Router::detour(VertexId src, VertexId dst, uint32_t path, const std::function<bool(LinkId)>& fits) {
  if (src == dst || same_node(src, dst) || (path & ~kRail) != 0) return false;
  std::vector<LinkId> out;
  if (!build(src, dst, path, &fits, out)) return false;
  detours_[route_key(src, dst, path)] = &detour_routes_.emplace_back(std::move(out));
  return true;
}

// The route of (src, dst, path) into `out`; with `fits`, its fabric part is the cheapest path within kSlack
// of the minimal cost on links `fits` accepts (false when there is none).
bool Router::build(VertexId src, VertexId dst, uint32_t path, const std::function<bool(LinkId)>* fits,
                   std::vector<LinkId>& out) {
  if (src == dst) {
    // empty route: a rank talking to itself costs nothing on the network
  } else if (same_node(src, dst)) {
    intra(src, dst, out);
  } else if (switch_end(src) || switch_end(dst)) {
    // A fabric switch as an end (one that sums in flight, SHARP): the endpoint's NIC, then the fabric.
    VertexId sa = src, sb = dst;
    if (!switch_end(src)) {
      const VertexId nic = topo_.vertex(src).nic;
      if (nic != src) intra(src, nic, out);
      sa = attach_switch(nic);
      out.push_back(link_between(nic, sa));
    }
    if (!switch_end(dst)) sb = attach_switch(topo_.vertex(dst).nic);
    fabric(sa, sb, switch_end(dst) ? dst : host_index_[topo_.vertex(dst).nic], out);
    if (!switch_end(dst)) {
      const VertexId nic = topo_.vertex(dst).nic;
      out.push_back(link_between(nic, sb) ^ 1u);
      if (nic != dst) intra(nic, dst, out);
    }
  } else {
    VertexId nic_s = topo_.vertex(src).nic, nic_d = topo_.vertex(dst).nic;
    if (path & kRail) {
      path &= ~kRail;
      nic_s = rail_nic(src, dst);
    }
    if (nic_s != src) intra(src, nic_s, out);
    VertexId sa = attach_switch(nic_s), sb = attach_switch(nic_d);
    out.push_back(link_between(nic_s, sa));
    // Minimal routes are destination-based, like InfiniBand's fat-tree routing (d-mod-k): among equal-cost
    // next hops take host_index mod k, then divide by k for the next level, so the ports of one node (and
    // neighbouring hosts) spread over different uplinks. Non-minimal (Valiant) paths pick their intermediate
    // switch by hash.
    uint64_t salt = host_index_[nic_d];
    if (path > 0 && switches_.size() > 2) {
      salt = mix((static_cast<uint64_t>(nic_s) << 32) | nic_d);
      size_t pick = mix(salt + path) % switches_.size();
      VertexId mid = switches_[pick];
      while (mid == sa || mid == sb) mid = switches_[++pick % switches_.size()];
      fabric(sa, mid, salt, out);
      fabric(mid, sb, salt + 1, out);
    } else if (fits) {
      if (!fitting(sa, sb, salt, *fits, out)) return false;
    } else {
      fabric(sa, sb, salt, out);
    }
    out.push_back(link_between(nic_d, sb) ^ 1u);  // the NIC's cable, found from its side: a switch may
                                                  // have a million ports (cables are link pairs 2k, 2k+1)
    if (nic_d != dst) intra(nic_d, dst, out);
  }
  return true;
}

namespace {
// Hop cost in the fabric: a global (inter-group) cable costs more than any detour of local hops, so minimal
// routes on a dragonfly are local-global-local (one global hop) as in real minimal routing, not any shortest
// hop count.
uint16_t hop_cost(LinkClass c) {
  return c == LinkClass::Global ? 16 : 1;
}
}  // namespace

Router::Distances Router::distances_to(VertexId sw) {
  auto it = dist_.find(sw);
  if (it == dist_.end()) {
    // Weighted distances over the fabric's switches (cables are symmetric): Dijkstra with a bucket per
    // distance (Dial's algorithm), as hop costs are small integers.
    std::vector<uint16_t> d(switches_.size(), UINT16_MAX);
    std::vector<std::vector<VertexId>> at(1, std::vector<VertexId>{sw});
    d[switch_index_[sw]] = 0;
    for (size_t dv = 0; dv < at.size(); ++dv)
      for (size_t i = 0; i < at[dv].size(); ++i) {
        const VertexId v = at[dv][i];
        if (d[switch_index_[v]] != dv) continue;  // reached closer since
        for (LinkId l : topo_.out_links(v)) {
          const DirectedLink& dl = topo_.links()[l];
          if (topo_.vertex(dl.to).node >= 0) continue;
          const size_t nd = dv + hop_cost(dl.cls);
          if (uint16_t& to = d[switch_index_[dl.to]]; nd < to) {
            to = static_cast<uint16_t>(nd);
            if (at.size() <= nd) at.resize(nd + 1);
            at[nd].push_back(dl.to);
          }
        }
      }
    it = dist_.emplace(sw, std::move(d)).first;
  }
  return Distances{&it->second, &switch_index_};
}

void Router::fabric(VertexId from, VertexId to, uint64_t salt, std::vector<LinkId>& out) {
  const Distances d = distances_to(to);
  if (d[from] == UINT16_MAX)
    throw RoutingError(
        fmt::format("no route from switch {} to switch {}", topo_.vertex(from).name, topo_.vertex(to).name));
  std::vector<LinkId> candidates;
  for (VertexId cur = from; cur != to;) {
    candidates.clear();
    for (LinkId l : topo_.out_links(cur)) {
      const DirectedLink& dl = topo_.links()[l];
      if (topo_.vertex(dl.to).node < 0 && d[dl.to] + hop_cost(dl.cls) == d[cur]) candidates.push_back(l);
    }
    LinkId pick = candidates[salt % candidates.size()];
    salt /= candidates.size();
    out.push_back(pick);
    cur = topo_.links()[pick].to;
  }
}

// reachable(v, r): a fabric path from v to `to` on links `fits` accepts costs at most r more than d[v]
// (memoised per call; a link's detour δ = its cost + d[its end] − d[v] >= 0, and δ = 0 only where d falls,
// so the recursion ends).
bool Router::reachable(VertexId v, uint32_t r, VertexId to, const Distances& d,
                       const std::function<bool(LinkId)>& fits) {
  if (v == to) return true;
  const size_t slot = static_cast<size_t>(v) * (kSlack + 1) + r;
  if (memo_stamp_[slot] == stamp_) return memo_[slot] != 0;
  bool found = false;
  for (LinkId l : topo_.out_links(v)) {
    const DirectedLink& dl = topo_.links()[l];
    if (topo_.vertex(dl.to).node >= 0 || d[dl.to] == UINT16_MAX || !fits(l)) continue;
    const uint32_t delta = hop_cost(dl.cls) + d[dl.to] - d[v];
    if (delta <= r && reachable(dl.to, r - delta, to, d, fits)) {
      found = true;
      break;
    }
  }
  memo_stamp_[slot] = stamp_;
  memo_[slot] = found ? 1 : 0;
  return found;
}

// The cheapest fabric path within kSlack of the minimal cost on links `fits` accepts, one hop at a time
// among the links that keep to that cost (by the destination's index, as minimal routes choose).
bool Router::fitting(VertexId from, VertexId to, uint64_t salt, const std::function<bool(LinkId)>& fits,
                     std::vector<LinkId>& out) {
  if (memo_.empty()) {
    memo_.assign(topo_.vertex_count() * (kSlack + 1), 0);
    memo_stamp_.assign(memo_.size(), 0);
  }
  const Distances d = distances_to(to);
  if (d[from] == UINT16_MAX) return false;
  ++stamp_;
  uint32_t r = 0;
  while (r <= kSlack && !reachable(from, r, to, d, fits)) ++r;
  if (r > kSlack) return false;
  const size_t first = out.size();
  std::vector<LinkId> candidates;
  for (VertexId v = from; v != to;) {
    candidates.clear();
    for (LinkId l : topo_.out_links(v)) {
      const DirectedLink& dl = topo_.links()[l];
      if (topo_.vertex(dl.to).node >= 0 || d[dl.to] == UINT16_MAX || dl.to == from || !fits(l)) continue;
      const uint32_t delta = hop_cost(dl.cls) + d[dl.to] - d[v];
      if (delta <= r && reachable(dl.to, r - delta, to, d, fits) &&
          std::none_of(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
                       [&](LinkId q) { return topo_.links()[q].to == dl.to; }))
        candidates.push_back(l);
    }
    if (candidates.empty()) return false;  // only back through the path so far
    const LinkId pick = candidates[salt % candidates.size()];
    salt /= candidates.size();
    r -= hop_cost(topo_.links()[pick].cls) + d[topo_.links()[pick].to] - d[v];
    out.push_back(pick);
    v = topo_.links()[pick].to;
  }
  return true;
}

void Router::intra(VertexId src, VertexId dst, std::vector<LinkId>& out) {
  uint64_t key = (static_cast<uint64_t>(src) << 32) | dst;
  auto it = intra_.find(key);
  if (it == intra_.end()) {
    // Dijkstra inside the node: cost = latency + time of 1 MB, so fat links (NVLink) win over PCIe detours.
    int32_t node = topo_.vertex(src).node;
    std::unordered_map<VertexId, std::pair<double, LinkId>> best;
    using Item = std::pair<double, VertexId>;
    std::priority_queue<Item, std::vector<Item>, std::greater<>> pq;
    best[src] = {0.0, UINT32_MAX};
    pq.push({0.0, src});
    while (!pq.empty()) {
      auto [c, v] = pq.top();
      pq.pop();
      if (c > best[v].first || v == dst) continue;
      for (LinkId l : topo_.out_links(v)) {
        const DirectedLink& dl = topo_.links()[l];
        if (topo_.vertex(dl.to).node != node) continue;
        double nc = c + dl.spec.latency.seconds() + 1e6 / dl.spec.capacity.value;
        auto b = best.find(dl.to);
        if (b == best.end() || nc < b->second.first) {
          best[dl.to] = {nc, l};
          pq.push({nc, dl.to});
        }
      }
    }
    if (!best.count(dst))
      throw RoutingError(fmt::format("no route inside node {} from {} to {}", node, topo_.vertex(src).name,
                                     topo_.vertex(dst).name));
    std::vector<LinkId> path;
    for (VertexId v = dst; v != src; v = topo_.links()[best[v].second].from) path.push_back(best[v].second);
    it = intra_.emplace(key, std::vector<LinkId>(path.rbegin(), path.rend())).first;
  }
  out.insert(out.end(), it->second.begin(), it->second.end());
}

}  // namespace ddlsim
