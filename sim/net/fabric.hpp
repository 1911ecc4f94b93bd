#pragma once
// Builders for the switch fabric between nodes: star, ring, fat-tree (2 or 3 levels), dragonfly and
// dragonfly+. Switches are vertices with node == -1 so that Router treats them as the fabric;
// switch-to-switch cables are LinkClass::Local except dragonfly global cables (LinkClass::Global); host
// cables are LinkClass::Host.
#include <vector>

#include "sim/io/yaml.hpp"
#include "sim/net/topology.hpp"

namespace ddlsim {

// Builds the switch fabric described by `network` (the YAML map at key path e.g. "cluster.network") and
// attaches every endpoint (NIC or directly-attached GPU vertices, in node order) to it with LinkClass::Host
// cables. Endpoints fill switch ports in order, so the endpoints of one node (and neighbouring nodes) share a
// switch. Throws InputError (via network.fail / child.fail) for bad or inconsistent parameters, and when the
// built fabric cannot connect every endpoint to every other one.
//
//   kind: star            one switch
//   kind: ring            hosts_per_switch (1), switches (minimum), switch_link
//   kind: fat-tree        levels (2|3), hosts_per_leaf, leaf_uplinks | oversubscription ("2:1"), uplink;
//                         3 levels: leaves_per_pod, agg_uplinks (leaves_per_pod)
//   kind: dragonfly       groups (minimum), routers_per_group, hosts_per_router, global_links_per_router,
//                         local_link, global_link
//   kind: dragonfly-plus  groups (minimum), leaves_per_group, spines_per_group, hosts_per_leaf,
//                         global_links_per_spine, local_link, global_link   (also spelled dragonfly+)
// Every kind needs `link: {bandwidth, latency}` (host cables); switch-link specs default to it.
void build_fabric(Topology& topo, const YamlNode& network, const std::vector<VertexId>& endpoints);

}  // namespace ddlsim
