#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "sim/config/cluster.hpp"
#include "sim/net/fabric.hpp"
#include "sim/net/flow_network.hpp"

namespace ddlsim {
namespace {

constexpr const char* kLink = "link: {bandwidth: 200Gb/s, latency: 130ns}";

// n endpoints: NICs of nodes 0..n-1, each its own way onto the fabric.
struct Fabric {
  Topology topo;
  std::vector<VertexId> endpoints;

  explicit Fabric(int n, const std::string& network) {
    for (int i = 0; i < n; ++i) {
      VertexId v = topo.add_vertex(VertexKind::Nic, i, fmt::format("nic{}", i));
      topo.set_nic(v, v);
      endpoints.push_back(v);
    }
    YamlNode doc = YamlNode::load_string("network: " + network, "test.yaml");
    build_fabric(topo, parse_fabric(doc["network"]), endpoints);
  }

  size_t switches() const {
    size_t s = 0;
    for (VertexId v = 0; v < topo.vertex_count(); ++v) s += topo.vertex(v).node < 0;
    return s;
  }
  size_t cables(LinkClass cls) const {
    size_t c = 0;
    for (const DirectedLink& l : topo.links()) c += l.cls == cls;
    return c / 2;  // a cable is two directed links
  }
  VertexId find(const std::string& name) const {
    for (VertexId v = 0; v < topo.vertex_count(); ++v)
      if (topo.vertex(v).name == name) return v;
    return kNoVertex;
  }
  std::vector<LinkClass> classes(const std::vector<LinkId>& route) const {
    std::vector<LinkClass> out;
    for (LinkId l : route) out.push_back(topo.links()[l].cls);
    return out;
  }
  size_t count(const std::vector<LinkId>& route, LinkClass cls) const {
    size_t c = 0;
    for (LinkId l : route) c += topo.links()[l].cls == cls;
    return c;
  }
};

std::string net(const std::string& keys) {
  return fmt::format("{{{}, {}}}", keys, kLink);
}

// Builds and returns what() of the InputError it must throw.
std::string error_of(int n, const std::string& network) {
  try {
    Fabric f(n, network);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError for " << network;
  return "";
}

TEST(FabricStar, OneSwitchAndTwoLinkRoutes) {
  Fabric f(8, net("kind: star"));
  EXPECT_EQ(f.switches(), 1u);
  EXPECT_EQ(f.cables(LinkClass::Host), 8u);
  EXPECT_EQ(f.topo.links().size(), 16u);  // nothing but host cables
  Router r(f.topo);
  // nic0 → switch → nic5
  EXPECT_EQ(r.route(f.endpoints[0], f.endpoints[5]).size(), 2u);
}

TEST(FabricRing, SwitchesInACycle) {
  // 10 endpoints, 2 per switch → 5 switches, 5 ring cables.
  Fabric f(10, net("kind: ring, hosts_per_switch: 2"));
  EXPECT_EQ(f.switches(), 5u);
  EXPECT_EQ(f.cables(LinkClass::Local), 5u);
  Router r(f.topo);
  // nic0 on switch0, nic5 on switch2: 2 ring hops one way round, 3 the other → host + 2 + host.
  EXPECT_EQ(r.route(f.endpoints[0], f.endpoints[5]).size(), 4u);
  // switch0 and switch4 are neighbours through the closing cable.
  EXPECT_EQ(r.route(f.endpoints[0], f.endpoints[9]).size(), 3u);
}

TEST(FabricRing, TwoSwitchesShareOneCableAndOneSwitchNone) {
  EXPECT_EQ(Fabric(4, net("kind: ring, hosts_per_switch: 2")).cables(LinkClass::Local), 1u);
  Fabric one(3, net("kind: ring, hosts_per_switch: 4"));
  EXPECT_EQ(one.switches(), 1u);
  EXPECT_EQ(one.cables(LinkClass::Local), 0u);
}

TEST(FabricRing, SwitchLinkDefaultsToLinkAndCanDiffer) {
  Fabric f(4, net("kind: ring, hosts_per_switch: 2, switch_link: {bandwidth: 400Gb/s, latency: 1us}"));
  for (const DirectedLink& l : f.topo.links()) {
    double expect_gbps = l.cls == LinkClass::Local ? 400 : 200;
    EXPECT_DOUBLE_EQ(l.spec.capacity.value, expect_gbps * 1e9 / 8);
  }
}

TEST(FabricFatTree, TwoLevelCounts) {
  // 10 hosts, 4 per leaf → ceil(10/4) = 3 leaves; 2:1 → 4/2 = 2 uplinks per leaf = 2 spines; 3·2 = 6 uplinks.
  Fabric f(10, net("kind: fat-tree, hosts_per_leaf: 4, oversubscription: '2:1'"));
  EXPECT_EQ(f.switches(), 5u);
  EXPECT_EQ(f.cables(LinkClass::Host), 10u);
  EXPECT_EQ(f.cables(LinkClass::Local), 6u);
  EXPECT_NE(f.find("leaf2"), kNoVertex);
  EXPECT_NE(f.find("spine1"), kNoVertex);
  Router r(f.topo);
  EXPECT_EQ(r.route(f.endpoints[0], f.endpoints[3]).size(), 2u);  // same leaf: host→leaf→host
  EXPECT_EQ(r.route(f.endpoints[0], f.endpoints[4]).size(), 4u);  // host→leaf→spine→leaf→host
}

TEST(FabricFatTree, OversubscriptionForms) {
  // leaf_uplinks = hosts_per_leaf / oversubscription: 8 / 2 = 8 / "2:1" = 8 / "4:2" = 4 spines; default 1:1
  // = 8.
  for (const char* form :
       {"oversubscription: 2", "oversubscription: 2:1", "oversubscription: '4:2'", "leaf_uplinks: 4"})
    EXPECT_EQ(Fabric(16, net(fmt::format("kind: fat-tree, hosts_per_leaf: 8, {}", form))).switches(), 2u + 4u)
        << form;
  EXPECT_EQ(Fabric(16, net("kind: fat-tree, hosts_per_leaf: 8")).switches(), 2u + 8u);
  // 8 / 3 is not a whole number of uplinks.
  EXPECT_NE(error_of(16, net("kind: fat-tree, hosts_per_leaf: 8, oversubscription: '3:1'"))
                .find("network.oversubscription: hosts_per_leaf (8) / oversubscription (3:1)"),
            std::string::npos);
  EXPECT_NE(error_of(16, net("kind: fat-tree, hosts_per_leaf: 8, oversubscription: 2, leaf_uplinks: 4"))
                .find("not both"),
            std::string::npos);
}

TEST(FabricFatTree, ThreeLevelCountsAndRoutes) {
  // 16 hosts, 2 per leaf → 8 leaves; 2 leaves per pod → 4 pods; 1:1 → 2 aggs per pod (8 aggs);
  // agg_uplinks = leaves_per_pod = 2 → 2 core groups of 2 = 4 cores.
  // Cables: leaf–agg 8·2 = 16, agg–core 8·2 = 16.
  Fabric f(16, net("kind: fat-tree, levels: 3, hosts_per_leaf: 2, leaves_per_pod: 2"));
  EXPECT_EQ(f.switches(), 8u + 8u + 4u);
  EXPECT_EQ(f.cables(LinkClass::Local), 32u);
  EXPECT_NE(f.find("pod3.agg1"), kNoVertex);
  EXPECT_NE(f.find("core3"), kNoVertex);
  Router r(f.topo);
  EXPECT_EQ(r.route(f.endpoints[0], f.endpoints[2]).size(), 4u);  // same pod: leaf→agg→leaf
  EXPECT_EQ(r.route(f.endpoints[0], f.endpoints[15]).size(), 6u);  // pods 0→3: leaf→agg→core→agg→leaf
}

TEST(FabricFatTree, EcmpSpreadsOverSpines) {
  // 2 leaves of 16 hosts, 4 spines: the 16·16 leaf0→leaf1 routes hash over the spines; more than one is used.
  Fabric f(32, net("kind: fat-tree, hosts_per_leaf: 16, leaf_uplinks: 4"));
  Router r(f.topo);
  std::set<VertexId> spines;
  for (int i = 0; i < 16; ++i)
    for (int j = 16; j < 32; ++j) {
      const std::vector<LinkId>& route = r.route(f.endpoints[i], f.endpoints[j]);
      ASSERT_EQ(route.size(), 4u);
      spines.insert(f.topo.links()[route[1]].to);
    }
  EXPECT_GT(spines.size(), 1u);
}

TEST(FabricFatTree, NodesShareALeaf) {
  // Endpoints fill leaf ports in the order given, so consecutive endpoints land on the same leaf.
  Fabric f(8, net("kind: fat-tree, hosts_per_leaf: 4"));
  Router r(f.topo);
  EXPECT_EQ(r.route(f.endpoints[4], f.endpoints[7]).size(), 2u);
  EXPECT_EQ(f.topo.links()[r.route(f.endpoints[4], f.endpoints[7])[0]].to, f.find("leaf1"));
}

TEST(FabricDragonfly, Counts) {
  // a = 4 routers, h = 3 hosts, gl = 2: 36 hosts → 36 / 12 = 3 groups, 12 routers; local 3·C(4,2) = 18
  // cables; m = floor(a·gl / (groups−1)) = 4 cables per pair, 3 pairs → 12 global cables.
  Fabric f(36, net("kind: dragonfly, routers_per_group: 4, hosts_per_router: 3, global_links_per_router: 2"));
  EXPECT_EQ(f.switches(), 12u);
  EXPECT_EQ(f.cables(LinkClass::Local), 18u);
  EXPECT_EQ(f.cables(LinkClass::Global), 12u);
  EXPECT_EQ(f.topo.vertex(f.find("g2.r1")).group, 2);
}

TEST(FabricDragonfly, ChassisDealTheirEndpointsOverTheirRouters) {
  // routers_per_chassis: 2 over 4 routers of 3 host ports: endpoints 0..5 go to r0, r1, r0, r1, r0, r1 and
  // 6..11 to r2, r3, ...: endpoint k of a chassis hangs off its router k mod 2. Read as nodes of 2 NICs
  // (endpoints 2i and 2i+1), each node has one NIC on each router of its chassis, and its neighbour's NIC of
  // the same index is one switch away. Without the key, endpoints fill r0's ports first (0, 1, 2 on r0).
  Fabric f(24, net("kind: dragonfly, routers_per_group: 4, hosts_per_router: 3, global_links_per_router: 2, "
                   "routers_per_chassis: 2"));
  auto router_of = [&](const Fabric& fab, int e) {
    return fab.topo.links()[fab.topo.out_links(fab.endpoints[e])[0]].to;
  };
  for (int e = 0; e < 24; ++e) {
    int group = e / 12, chassis = e % 12 / 6;
    EXPECT_EQ(router_of(f, e), f.find(fmt::format("g{}.r{}", group, 2 * chassis + e % 2))) << e;
  }
  Router r(f.topo);
  EXPECT_EQ(r.route(f.endpoints[0], f.endpoints[2]).size(), 2u);  // NIC 0 of nodes 0 and 1: one switch
  Fabric plain(24,
               net("kind: dragonfly, routers_per_group: 4, hosts_per_router: 3, global_links_per_router: 2"));
  for (int e = 0; e < 3; ++e) EXPECT_EQ(router_of(plain, e), plain.find("g0.r0")) << e;
  EXPECT_EQ(router_of(plain, 3), plain.find("g0.r1"));
  std::string what = error_of(24, net("kind: dragonfly, routers_per_group: 4, hosts_per_router: 3, "
                                      "global_links_per_router: 2, routers_per_chassis: 3"));
  EXPECT_NE(what.find("test.yaml:1:"), std::string::npos) << what;
  EXPECT_NE(what.find("network.routers_per_chassis: routers_per_group (4) is not a whole number of chassis"),
            std::string::npos)
      << what;
}

TEST(FabricDragonfly, BalancedGlobalPorts) {
  // Canonical balanced dragonfly: groups = a·gl + 1 = 9, one cable per pair → C(9,2) = 36 global cables, and
  // the round-robin port assignment gives every router exactly gl = 2 of them.
  Fabric f(72, net("kind: dragonfly, routers_per_group: 4, hosts_per_router: 2, global_links_per_router: 2, "
                   "groups: 9"));
  EXPECT_EQ(f.cables(LinkClass::Global), 36u);
  for (VertexId v = 0; v < f.topo.vertex_count(); ++v) {
    if (f.topo.vertex(v).node >= 0) continue;
    size_t globals = 0;
    for (LinkId l : f.topo.out_links(v)) globals += f.topo.links()[l].cls == LinkClass::Global;
    EXPECT_EQ(globals, 2u) << f.topo.vertex(v).name;
  }
}

TEST(FabricDragonfly, MinimalRouteBetweenGroupsCrossesOneGlobalLink) {
  // 3 groups of 4 routers with 2 global ports each: every router has a cable to each other group, so the
  // minimal route is local–global–local at most: exactly one Global link and at most 2 Local ones.
  Fabric f(12, net("kind: dragonfly, routers_per_group: 4, hosts_per_router: 1, global_links_per_router: 2"));
  Router r(f.topo);
  for (int i = 0; i < 12; ++i)
    for (int j = 0; j < 12; ++j) {
      if (i / 4 == j / 4) continue;
      const std::vector<LinkId>& route = r.route(f.endpoints[i], f.endpoints[j]);
      EXPECT_EQ(f.count(route, LinkClass::Global), 1u) << i << "→" << j;
      EXPECT_LE(f.count(route, LinkClass::Local), 2u) << i << "→" << j;
    }
}

TEST(FabricDragonfly, BalancedDiameterIsThreeSwitchHops) {
  // With one cable per group pair, local–global–local reaches any router in 3 switch hops, so no minimal
  // route between groups is longer, and each crosses at least one global cable.
  Fabric f(72, net("kind: dragonfly, routers_per_group: 4, hosts_per_router: 2, global_links_per_router: 2, "
                   "groups: 9"));
  Router r(f.topo);
  for (int i = 0; i < 72; i += 3)
    for (int j = 0; j < 72; ++j) {
      if (i / 8 == j / 8) continue;
      const std::vector<LinkId>& route = r.route(f.endpoints[i], f.endpoints[j]);
      EXPECT_LE(route.size(), 2u + 3u) << i << "→" << j;
      EXPECT_GE(f.count(route, LinkClass::Global), 1u) << i << "→" << j;
    }
}

// Minimal dragonfly routing is local–global–local: the router weighs a global hop above any local detour, so
// every inter-group route crosses exactly one global cable (fewest hops alone could pick global–global
// paths).
TEST(FabricDragonfly, BalancedMinimalRoutesAreLocalGlobalLocal) {
  Fabric f(72, net("kind: dragonfly, routers_per_group: 4, hosts_per_router: 2, global_links_per_router: 2, "
                   "groups: 9"));
  Router r(f.topo);
  for (int i = 0; i < 72; ++i)
    for (int j = 0; j < 72; ++j)
      if (i / 8 != j / 8) {
        EXPECT_EQ(f.count(r.route(f.endpoints[i], f.endpoints[j]), LinkClass::Global), 1u) << i << "→" << j;
      }
}

TEST(FabricDragonfly, ValiantPathIsNoShorterThanMinimal) {
  Fabric f(72, net("kind: dragonfly, routers_per_group: 4, hosts_per_router: 2, global_links_per_router: 2, "
                   "groups: 9"));
  Router r(f.topo);
  bool some_longer = false;
  for (int i = 0; i < 72; i += 5)
    for (int j = 1; j < 72; j += 7) {
      if (i / 8 == j / 8) continue;
      size_t minimal = r.route(f.endpoints[i], f.endpoints[j]).size();
      size_t valiant = r.route(f.endpoints[i], f.endpoints[j], 1).size();
      EXPECT_GE(valiant, minimal) << i << "→" << j;
      some_longer |= valiant > minimal;
    }
  EXPECT_TRUE(some_longer);
}

// Adaptive routing's detours (Router::detour, as Transport::adapt_routes asks for them): one group of 4
// routers, 3 hosts each (e0..e2 on r0, e3..e5 on r1). The pairs e0→e3, e1→e4, e2→e5 all go from r0 to r1,
// and minimal routes stack them on the r0→r1 cable: max-min gives each C/3 (C = 25 GB/s, every cable the
// same). With the cable refused, e1→e4 detours through r2 or r3 (two local hops); with that detour's links
// refused as well, e2→e5 takes the other one: three disjoint routes, each flow at C. With every fabric link
// refused there is no detour, and the route stays as it was.
TEST(FabricDragonfly, DetoursLeaveTheLinksTheyAreRefused) {
  Fabric f(12, net("kind: dragonfly, routers_per_group: 4, hosts_per_router: 3, global_links_per_router: 1, "
                   "routing: adaptive"));
  EXPECT_TRUE(f.topo.adaptive_routing());
  Router r(f.topo);
  auto ends = [&](int i) { return std::pair{f.endpoints[i], f.endpoints[3 + i]}; };
  auto local = [&](const std::vector<LinkId>& route) {
    std::set<LinkId> out;
    for (LinkId l : route)
      if (f.topo.links()[l].cls == LinkClass::Local) out.insert(l);
    return out;
  };
  std::vector<const std::vector<LinkId>*> minimal;
  for (int i = 0; i < 3; ++i) minimal.push_back(&r.route(ends(i).first, ends(i).second));
  const std::set<LinkId> cable = local(*minimal[0]);
  ASSERT_EQ(cable.size(), 1u);
  for (int i = 1; i < 3; ++i) EXPECT_EQ(local(*minimal[i]), cable);
  std::set<LinkId> taken = cable;
  for (int i = 1; i < 3; ++i) {
    EXPECT_TRUE(r.detour(ends(i).first, ends(i).second, 0, [&](LinkId l) { return !taken.count(l); }));
    const std::set<LinkId> hops = local(r.route(ends(i).first, ends(i).second));
    EXPECT_EQ(hops.size(), 2u);
    for (LinkId l : hops) EXPECT_TRUE(taken.insert(l).second) << i;  // disjoint from the routes before
  }
  EXPECT_EQ(local(*minimal[1]), cable);  // the route given before is unchanged for whoever holds it
  EXPECT_FALSE(r.detour(ends(0).first, ends(0).second, 0,
                        [&](LinkId l) { return f.topo.links()[l].cls != LinkClass::Local; }));
  EXPECT_EQ(&r.route(ends(0).first, ends(0).second), minimal[0]);
  const double c = 25e9;
  for (bool detoured : {false, true}) {
    FlowNetwork flows;
    f.topo.build_network(flows);
    std::vector<FlowId> ids;
    for (int i = 0; i < 3; ++i)
      ids.push_back(
          flows.add_flow(detoured ? r.route(ends(i).first, ends(i).second) : *minimal[i], 1e9, 0, 0, Time()));
    flows.resolve(Time());
    for (FlowId id : ids) EXPECT_NEAR(flows.rate(id), detoured ? c : c / 3, 1e-6 * c) << detoured;
  }
  std::string what = error_of(12, net("kind: dragonfly, routers_per_group: 4, hosts_per_router: 3, "
                                      "global_links_per_router: 1, routing: fastest"));
  EXPECT_NE(what.find("network.routing: expected minimal or adaptive, got \"fastest\""), std::string::npos)
      << what;
}

TEST(FabricDragonflyPlus, CountsAndLeafSpineGlobalSpineLeafRoutes) {
  // 5 groups of 2 leaves × 2 hosts (20 hosts), 2 spines per group; local 5·2·2 = 20 cables;
  // m = floor(2 spines · 2 global / 4) = 1 cable per pair → C(5,2) = 10 global cables.
  Fabric f(20, net("kind: dragonfly+, leaves_per_group: 2, spines_per_group: 2, hosts_per_leaf: 2, "
                   "global_links_per_spine: 2"));
  EXPECT_EQ(f.switches(), 20u);
  EXPECT_EQ(f.cables(LinkClass::Local), 20u);
  EXPECT_EQ(f.cables(LinkClass::Global), 10u);
  EXPECT_EQ(f.topo.vertex(f.find("g4.spine1")).group, 4);
  Router r(f.topo);
  const std::vector<LinkClass> across = {LinkClass::Host, LinkClass::Local, LinkClass::Global,
                                         LinkClass::Local, LinkClass::Host};
  for (int i = 0; i < 20; ++i)
    for (int j = 0; j < 20; ++j) {
      if (i / 4 == j / 4) continue;
      const std::vector<LinkId>& route = r.route(f.endpoints[i], f.endpoints[j]);
      ASSERT_EQ(f.classes(route), across) << i << "→" << j;
      // host → leaf → spine ⇒ spine → leaf → host
      EXPECT_NE(f.topo.vertex(f.topo.links()[route[1]].to).name.find("spine"), std::string::npos);
      EXPECT_NE(f.topo.vertex(f.topo.links()[route[3]].to).name.find("leaf"), std::string::npos);
    }
}

TEST(FabricDragonflyPlus, BothSpellings) {
  const char* keys = "leaves_per_group: 2, spines_per_group: 2, hosts_per_leaf: 2, global_links_per_spine: 1";
  EXPECT_EQ(Fabric(8, net(fmt::format("kind: dragonfly-plus, {}", keys))).switches(),
            Fabric(8, net(fmt::format("kind: dragonfly+, {}", keys))).switches());
}

TEST(FabricErrors, UnknownKindSuggestsAndListsKinds) {
  std::string what = error_of(4, net("kind: fattree"));
  EXPECT_NE(what.find("test.yaml:1:"), std::string::npos) << what;
  EXPECT_NE(what.find("network.kind"), std::string::npos) << what;
  EXPECT_NE(what.find("did you mean \"fat-tree\""), std::string::npos) << what;
  EXPECT_NE(what.find("dragonfly-plus"), std::string::npos) << what;
}

TEST(FabricErrors, UnknownKeySuggests) {
  std::string what = error_of(4, net("kind: fat-tree, hosts_per_lef: 2"));
  EXPECT_NE(what.find("network.hosts_per_lef: unknown key (did you mean \"hosts_per_leaf\"?)"),
            std::string::npos)
      << what;
  what = error_of(4, "{kind: star, link: {bandwidth: 1GB/s, latency: 1us, lat: 1us}}");
  EXPECT_NE(what.find("network.link.lat: unknown key"), std::string::npos) << what;
}

TEST(FabricErrors, MissingLink) {
  EXPECT_NE(error_of(4, "{kind: star}").find("missing required key \"link\""), std::string::npos);
  EXPECT_NE(error_of(4, "{kind: star, link: {bandwidth: 1GB/s}}").find("missing required key \"latency\""),
            std::string::npos);
}

TEST(FabricErrors, BadBandwidth) {
  std::string what = error_of(4, "{kind: star, link: {bandwidth: -5Gb/s, latency: 1us}}");
  EXPECT_NE(what.find("network.link.bandwidth"), std::string::npos) << what;
  EXPECT_NE(what.find("positive"), std::string::npos) << what;
  what = error_of(4, "{kind: star, link: {bandwidth: 200, latency: 1us}}");  // no unit
  EXPECT_NE(what.find("network.link.bandwidth"), std::string::npos) << what;
  what = error_of(4, net("kind: ring, switch_link: {bandwidth: 0GB/s, latency: 1us}"));
  EXPECT_NE(what.find("network.switch_link.bandwidth"), std::string::npos) << what;
}

TEST(FabricErrors, BadCounts) {
  EXPECT_NE(error_of(4, net("kind: fat-tree, hosts_per_leaf: 0"))
                .find("network.hosts_per_leaf: expected a positive"),
            std::string::npos);
  EXPECT_NE(error_of(4, net("kind: fat-tree")).find("missing required key \"hosts_per_leaf\""),
            std::string::npos);
  EXPECT_NE(error_of(4, net("kind: fat-tree, levels: 4, hosts_per_leaf: 2")).find("network.levels"),
            std::string::npos);
  EXPECT_NE(error_of(4, net("kind: fat-tree, hosts_per_leaf: 2, leaves_per_pod: 2"))
                .find("only used with levels: 3"),
            std::string::npos);
  // 100000 routers fully connected would be 5·10^9 cables.
  EXPECT_NE(error_of(4, net("kind: dragonfly, routers_per_group: 100000, hosts_per_router: 1, "
                            "global_links_per_router: 1"))
                .find("looks like a mistake"),
            std::string::npos);
}

TEST(FabricErrors, DragonflyTooFewGlobalLinks) {
  // 10 groups need 9 global cables out of each group; 2 routers × 2 give 4.
  std::string what =
      error_of(4, net("kind: dragonfly, groups: 10, routers_per_group: 2, hosts_per_router: 2, "
                      "global_links_per_router: 2"));
  EXPECT_NE(what.find("network.global_links_per_router"), std::string::npos) << what;
  EXPECT_NE(what.find("use at least 5"), std::string::npos) << what;
  what = error_of(4, net("kind: dragonfly+, groups: 4, leaves_per_group: 1, spines_per_group: 2, "
                         "hosts_per_leaf: 1, global_links_per_spine: 1"));
  EXPECT_NE(what.find("network.global_links_per_spine"), std::string::npos) << what;
}

TEST(FabricErrors, GroupsTooSmall) {
  // 2 routers × 2 hosts = 4 endpoints per group; 12 endpoints need 3 groups.
  std::string what =
      error_of(12, net("kind: dragonfly, groups: 2, routers_per_group: 2, hosts_per_router: 2, "
                       "global_links_per_router: 2"));
  EXPECT_NE(what.find("network.groups: 12 endpoints need at least 3 groups"), std::string::npos) << what;
  what = error_of(12, net("kind: ring, switches: 2, hosts_per_switch: 4"));
  EXPECT_NE(what.find("network.switches: 12 endpoints need at least 3 switches"), std::string::npos) << what;
}

}  // namespace
}  // namespace ddlsim
