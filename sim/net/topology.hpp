#pragma once
// The cluster as a graph: vertices (GPUs, CPUs, NICs, PCIe and NVLink switches, network switches) joined by
// cables; every cable is two directed links (split duplex). LinkIds index links() and are the FlowNetwork's
// link ids.
#include <cstdint>
#include <deque>
#include <functional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/core/units.hpp"
#include "sim/net/flow_network.hpp"

namespace ddlsim {

using VertexId = uint32_t;
constexpr VertexId kNoVertex = UINT32_MAX;

enum class VertexKind : uint8_t { Gpu, Cpu, Nic, PcieSwitch, NvSwitch, Switch };
// What a link is, for reports and for calibration classes.
enum class LinkClass : uint8_t { NvLink, Pcie, Host, Local, Global };
const char* link_class_name(LinkClass c);

struct LinkSpec {
  Rate capacity;
  Time latency;
};

struct Vertex {
  VertexKind kind;
  int32_t node = -1;   // host node index, -1 for fabric switches
  int32_t group = -1;  // dragonfly group (fabric switches only), -1 otherwise
  VertexId nic =
      kNoVertex;  // for endpoints: the NIC they use to leave the node (itself if it is on the fabric)
  std::string name;
};

struct DirectedLink {
  VertexId from, to;
  LinkSpec spec;
  LinkClass cls;
};

class Topology {
 public:
  VertexId add_vertex(VertexKind kind, int32_t node, std::string name, int32_t group = -1);
  // A cable: links a→b and b→a with the same spec. Returns the id of a→b (b→a is that + 1).
  LinkId connect(VertexId a, VertexId b, LinkSpec spec, LinkClass cls);
  void set_nic(VertexId endpoint, VertexId nic) { vertices_[endpoint].nic = nic; }
  // Changes both directions of the cable that link `l` belongs to (cables are pairs 2k, 2k+1).
  void set_cable_spec(LinkId l, LinkSpec spec) {
    links_[l].spec = spec;
    links_[l ^ 1u].spec = spec;
  }

  // Scales the capacity of every fabric link (NIC cables and switch-to-switch links; not NVLink or PCIe) by
  // `fraction`: the share of the line rate left for payload.
  void scale_fabric_capacity(double fraction) {
    for (DirectedLink& l : links_)
      if (l.cls != LinkClass::NvLink && l.cls != LinkClass::Pcie) l.spec.capacity.value *= fraction;
  }

  const Vertex& vertex(VertexId v) const { return vertices_[v]; }
  size_t vertex_count() const { return vertices_.size(); }
  const std::vector<DirectedLink>& links() const { return links_; }
  const std::vector<LinkId>& out_links(VertexId v) const { return out_[v]; }
  bool on_fabric(VertexId v) const { return vertices_[v].node < 0 || vertices_[v].kind == VertexKind::Nic; }
  // The fabric routes adaptively (Transport::adapt_routes, Router::detour): a dragonfly's `routing:
  // adaptive`.
  void set_adaptive_routing(bool on) { adaptive_routing_ = on; }
  bool adaptive_routing() const { return adaptive_routing_; }
  // Adds every link to `net` in id order, so LinkIds agree.
  void build_network(FlowNetwork& net) const;

 private:
  std::vector<Vertex> vertices_;
  std::vector<DirectedLink> links_;
  std::vector<std::vector<LinkId>> out_;
  bool adaptive_routing_ = false;
};

// Minimal routing with deterministic ECMP: inside a node, the cheapest path (latency + 1 MB at the link's
// speed); across nodes, endpoint → its NIC → fabric switches by fewest hops → NIC → endpoint. A fabric switch
// may be an end too (a switch that sums in flight: SHARP); its routes start or stop there. Among equal-hop
// next hops the choice hashes (source NIC, destination NIC), which spreads flows like D-mod-k routing. `path
// > 0` asks for a non-minimal (Valiant) path through an intermediate switch chosen by hash, for multipath
// splitting.
//
// Adaptive routing (Topology::adaptive_routing, a dragonfly's `routing: adaptive`), as HPE Slingshot routes:
// its switches send each packet on the least loaded of several minimal and non-minimal paths, biased towards
// the minimal ones (De Sensi et al., "An In-Depth Analysis of the Slingshot Interconnect", SC20), so traffic
// leaves a congested cable for cables with room. At flow level (Transport::adapt_routes): before a collective
// first runs, each of its messages whose minimal route would oversubscribe a link with what the collective
// sends at once takes, if there is one, the cheapest path at most two local hops longer whose fabric links
// have room for it (detour); its pair keeps that route from then on. Where every detour is as full (an
// all-to-all), routes stay minimal.
// The key of one route in the caches of its users: path (multipath index), source and destination.
inline uint64_t route_key(VertexId src, VertexId dst, uint32_t path) {
  return (static_cast<uint64_t>(path) << 48) ^ (static_cast<uint64_t>(src) << 24) ^ dst;
}

class Router {
 public:
  // A path flag: between GPUs of two nodes, leave src's node through the NIC of the GPU with dst's local
  // rank (reached inside the node by the cheapest path, NVLink to that GPU where there is one), the same rail
  // that dst's NIC is on. NCCL builds its rings and trees so (NVIDIA/nccl src/graph/search.cc: with
  // NCCL_CROSS_NIC at its default 2, the search first asks every channel to leave by the NIC it entered by,
  // and lets the GPU-to-NIC path widen to PXN, through a peer GPU over NVLink, before allowing cross-NIC).
  static constexpr uint32_t kRail = 1u << 15;
  explicit Router(const Topology& topo);
  // Throws RoutingError when no path exists.
  const std::vector<LinkId>& route(VertexId src, VertexId dst, uint32_t path = 0);
  // Adaptive routing: from now on the route of (src, dst, path) between two nodes (path 0 or kRail) is the
  // cheapest one within kSlack of the minimal cost whose fabric links `fits` accepts; false (nothing changes)
  // when there is none. The route given before stays valid for whoever holds it.
  bool detour(VertexId src, VertexId dst, uint32_t path, const std::function<bool(LinkId)>& fits);
  bool adaptive() const { return topo_.adaptive_routing(); }
  // A cable between two fabric switches (what a detour may change).
  bool between_switches(LinkId l) const {
    const DirectedLink& d = topo_.links()[l];
    return topo_.vertex(d.from).node < 0 && topo_.vertex(d.to).node < 0;
  }
  bool same_node(VertexId a, VertexId b) const;

 private:
  void intra(VertexId src, VertexId dst, std::vector<LinkId>& out);
  void fabric(VertexId from_switch, VertexId to_switch, uint64_t salt, std::vector<LinkId>& out);
  bool build(VertexId src, VertexId dst, uint32_t path, const std::function<bool(LinkId)>* fits,
             std::vector<LinkId>& out);
  static constexpr uint32_t kSlack = 2;  // detours: cost beyond the minimal route's (two local hops)
  bool fitting(VertexId from_switch, VertexId to_switch, uint64_t salt,
               const std::function<bool(LinkId)>& fits, std::vector<LinkId>& out);
  // Fabric distances to one switch, read by vertex (a fabric switch): a switch's own slot in a vector over
  // the fabric's switches alone.
  struct Distances {
    const std::vector<uint16_t>* by_switch;
    const std::vector<uint32_t>* index;
    uint16_t operator[](VertexId v) const { return (*by_switch)[(*index)[v]]; }
  };
  bool reachable(VertexId v, uint32_t r, VertexId to, const Distances& d,
                 const std::function<bool(LinkId)>& fits);
  Distances distances_to(VertexId sw);
  VertexId attach_switch(VertexId nic) const;  // the fabric vertex a NIC's cable leads to
  bool switch_end(VertexId v) const { return topo_.vertex(v).kind == VertexKind::Switch; }
  VertexId rail_nic(VertexId src, VertexId dst) const;
  LinkId link_between(VertexId a, VertexId b) const;

  const Topology& topo_;
  std::unordered_map<uint64_t, std::vector<LinkId>> routes_;
  std::unordered_map<uint64_t, std::vector<LinkId>> intra_;
  std::unordered_map<VertexId, std::vector<uint16_t>> dist_;  // by destination switch, over switches_
  std::vector<VertexId> switches_;
  std::vector<uint32_t> switch_index_;  // per vertex: its place in switches_ (fabric switches only)
  std::unordered_map<uint64_t, const std::vector<LinkId>*> detours_;  // by route key, over routes_
  std::deque<std::vector<LinkId>> detour_routes_;
  std::vector<uint32_t> memo_, memo_stamp_;  // reachable's memo, valid where the stamp is stamp_
  uint32_t stamp_ = 0;
  std::vector<uint32_t> host_index_;  // per vertex: its place among the fabric's hosts (0 for the rest)
  std::vector<uint32_t> gpu_rank_;    // per vertex: a GPU's local rank in its node (0 for the rest)
  std::vector<std::vector<VertexId>> node_nics_;  // per node: the NIC of each GPU, by local rank
};

class RoutingError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace ddlsim
