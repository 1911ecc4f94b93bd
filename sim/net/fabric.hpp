#pragma once
// Builders for the switch fabric between nodes: star, ring, fat-tree (2 or 3 levels), dragonfly and
// dragonfly+. Switches are vertices with node == -1 so that Router treats them as the fabric;
// switch-to-switch cables are LinkClass::Local except dragonfly global cables (LinkClass::Global); host
// cables are LinkClass::Host.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/net/topology.hpp"

namespace ddlsim {

enum class FabricKind : uint8_t { Star, Ring, FatTree, Dragonfly, DragonflyPlus };

// A network map as parsed (every key checked for its type and range): the counts a kind needs, the ones the
// endpoint count decides when absent, and where each key came from for the checks that need that count.
struct FabricConfig {
  FabricKind kind = FabricKind::Star;
  LinkSpec link;  // host cables
  // Counts by key (hosts_per_switch, switches, levels, hosts_per_leaf, leaf_uplinks, leaves_per_pod,
  // agg_uplinks, groups, routers_per_group, hosts_per_router, global_links_per_router, routers_per_chassis,
  // leaves_per_group, spines_per_group, global_links_per_spine); absent: the kind's default.
  std::map<std::string, int64_t> counts;
  std::map<std::string, LinkSpec> links;      // switch_link, uplink, local_link, global_link
  std::optional<int64_t> uplinks_from_ratio;  // fat-tree leaf uplinks from `oversubscription`
  bool adaptive_routing = false;              // dragonflies: `routing: adaptive` (Router)
  bool sharp = false;                         // `sharp`: the switches reduce in flight (collnet)
  Where self;                                 // the network map
  std::map<std::string, Where> where;         // each given key
  std::optional<int64_t> count(const std::string& key) const;
};

// Builds the switch fabric described by `network` and attaches every endpoint (NIC or directly-attached GPU
// vertices, in node order) to it with LinkClass::Host cables. Endpoints fill switch ports in order, so the
// endpoints of one node (and neighbouring nodes) share a switch, unless a dragonfly deals them over the
// routers of a chassis. Throws InputError at the key for parameters the endpoint count contradicts, and when
// the built fabric cannot connect every endpoint to every other one.
//
//   kind: star            one switch
//   kind: ring            hosts_per_switch (1), switches (minimum), switch_link
//   kind: fat-tree        levels (2|3), hosts_per_leaf, leaf_uplinks | oversubscription ("2:1"), uplink;
//                         3 levels: leaves_per_pod, agg_uplinks (leaves_per_pod)
//   kind: dragonfly       groups (minimum), routers_per_group, hosts_per_router, global_links_per_router,
//                         local_link, global_link, routers_per_chassis (1: the endpoints of a chassis of
//                         that many routers are dealt round-robin over them, so a node's NICs land on
//                         different routers, as HPE Cray EX wires them)
//   kind: dragonfly-plus  groups (minimum), leaves_per_group, spines_per_group, hosts_per_leaf,
//                         global_links_per_spine, local_link, global_link   (also spelled dragonfly+)
//   both dragonflies      routing (minimal | adaptive: a collective's messages detour off the links they
//                         would oversubscribe, Transport::adapt_routes and Router::detour)
// Every kind needs `link: {bandwidth, latency}` (host cables); switch-link specs default to it.
void build_fabric(Topology& topo, const FabricConfig& network, const std::vector<VertexId>& endpoints);

}  // namespace ddlsim
