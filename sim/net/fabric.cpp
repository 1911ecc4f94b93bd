#include "sim/net/fabric.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <cmath>
#include <optional>
#include <queue>
#include <string>

namespace ddlsim {
namespace {

// Guards against typos (routers_per_group: 100000) that would build billions of cables and exhaust memory.
constexpr double kMaxCables = 1 << 23;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

class FabricBuilder {
 public:
  FabricBuilder(Topology& topo, const FabricConfig& network, const std::vector<VertexId>& endpoints)
      : topo_(topo),
        net_(network),
        endpoints_(endpoints),
        n_(static_cast<int64_t>(endpoints.size())),
        endpoint_switch_(endpoints.size(), kNoVertex) {}

  void build();

 private:
  void star();
  void ring();
  void fat_tree();
  void dragonfly();
  void dragonfly_plus();

  int64_t count(const char* key, int64_t def = 0) const;
  int64_t at_least(const char* key, int64_t needed, const char* what) const;
  int64_t leaf_uplinks(int64_t hosts_per_leaf) const;
  LinkSpec link_or_host(const char* key) const;
  void check_size(double cables) const;
  void check_global_ports(int64_t groups, int64_t owners, int64_t per_owner, const char* key,
                          const char* owner_name) const;

  VertexId add_switch(std::string name, int32_t group = -1);
  void attach(VertexId sw, int64_t ports);
  void attach_dealt(const std::vector<VertexId>& switches, int64_t ports);
  void connect_globals(const std::vector<std::vector<VertexId>>& owners, int64_t per_owner, LinkSpec spec);
  void check_connected() const;

  Topology& topo_;
  const FabricConfig& net_;
  const std::vector<VertexId>& endpoints_;
  int64_t n_;
  LinkSpec host_{};
  size_t next_endpoint_ = 0;
  std::vector<VertexId> endpoint_switch_;  // the switch each endpoint hangs off
};

void FabricBuilder::build() {
  host_ = net_.link;
  switch (net_.kind) {
    case FabricKind::Star:
      star();
      break;
    case FabricKind::Ring:
      ring();
      break;
    case FabricKind::FatTree:
      fat_tree();
      break;
    case FabricKind::Dragonfly:
      dragonfly();
      break;
    case FabricKind::DragonflyPlus:
      dragonfly_plus();
      break;
  }
  check_connected();
}

// A count the configuration layer checked (required ones are present), or `def` when absent.
int64_t FabricBuilder::count(const char* key, int64_t def) const {
  return net_.count(key).value_or(def);
}

// An optional size that defaults to what the endpoints need and may not be smaller.
int64_t FabricBuilder::at_least(const char* key, int64_t needed, const char* what) const {
  std::optional<int64_t> v = net_.count(key);
  if (!v) return needed;
  if (*v < needed) net_.where.at(key).fail(fmt::format("{} endpoints need at least {} {}", n_, needed, what));
  return *v;
}

int64_t FabricBuilder::leaf_uplinks(int64_t hosts_per_leaf) const {
  if (auto uplinks = net_.count("leaf_uplinks")) return *uplinks;
  return net_.uplinks_from_ratio.value_or(hosts_per_leaf);  // default 1:1, non-blocking
}

LinkSpec FabricBuilder::link_or_host(const char* key) const {
  auto it = net_.links.find(key);
  return it != net_.links.end() ? it->second : host_;
}

void FabricBuilder::check_size(double cables) const {
  if (cables > kMaxCables)
    net_.self.fail(
        fmt::format("this fabric would have {:.3g} switch cables; more than {} looks like a mistake", cables,
                    kMaxCables));
}

void FabricBuilder::check_global_ports(int64_t groups, int64_t owners, int64_t per_owner, const char* key,
                                       const char* owner_name) const {
  if (groups < 2 || owners * per_owner >= groups - 1) return;
  net_.where.at(key).fail(fmt::format(
      "{} groups need at least {} global cables per group to reach each other, but {} {} x {} links = {}; "
      "use at least {}",
      groups, groups - 1, owners, owner_name, per_owner, owners * per_owner, ceil_div(groups - 1, owners)));
}

VertexId FabricBuilder::add_switch(std::string name, int32_t group) {
  return topo_.add_vertex(VertexKind::Switch, -1, std::move(name), group);
}

// The next `ports` endpoints (fewer at the end) hang off `sw`.
void FabricBuilder::attach(VertexId sw, int64_t ports) {
  attach_dealt({sw}, ports);
}

// The next switches.size() x `ports` endpoints (fewer at the end) dealt round-robin over `switches`: the k-th
// of them hangs off switches[k mod size].
void FabricBuilder::attach_dealt(const std::vector<VertexId>& switches, int64_t ports) {
  const int64_t total = static_cast<int64_t>(switches.size()) * ports;
  for (int64_t k = 0; k < total && next_endpoint_ < endpoints_.size(); ++k, ++next_endpoint_) {
    VertexId sw = switches[static_cast<size_t>(k) % switches.size()];
    topo_.connect(endpoints_[next_endpoint_], sw, host_, LinkClass::Host);
    endpoint_switch_[next_endpoint_] = sw;
  }
}

// m = max(1, floor(ports / (groups - 1))) cables per pair of groups; each group hands out its global ports
// round-robin over its routers (or spines), so every owner gets at most per_owner of them.
void FabricBuilder::connect_globals(const std::vector<std::vector<VertexId>>& owners, int64_t per_owner,
                                    LinkSpec spec) {
  size_t groups = owners.size();
  if (groups < 2) return;
  int64_t ports = static_cast<int64_t>(owners[0].size()) * per_owner;
  int64_t m = std::max<int64_t>(1, ports / static_cast<int64_t>(groups - 1));
  std::vector<size_t> next(groups, 0);
  for (size_t i = 0; i < groups; ++i)
    for (size_t j = i + 1; j < groups; ++j)
      for (int64_t c = 0; c < m; ++c) {
        VertexId a = owners[i][next[i]++ % owners[i].size()];
        VertexId b = owners[j][next[j]++ % owners[j].size()];
        topo_.connect(a, b, spec, LinkClass::Global);
      }
}

void FabricBuilder::check_connected() const {
  if (endpoints_.empty()) return;
  std::vector<char> seen(topo_.vertex_count(), 0);
  std::queue<VertexId> queue;
  if (endpoint_switch_[0] != kNoVertex) {
    seen[endpoint_switch_[0]] = 1;
    queue.push(endpoint_switch_[0]);
  }
  while (!queue.empty()) {
    VertexId v = queue.front();
    queue.pop();
    for (LinkId l : topo_.out_links(v)) {
      VertexId to = topo_.links()[l].to;
      if (topo_.vertex(to).node >= 0 || seen[to]) continue;
      seen[to] = 1;
      queue.push(to);
    }
  }
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    VertexId sw = endpoint_switch_[i];
    if (sw == kNoVertex || !seen[sw])
      net_.self.fail(fmt::format("the fabric does not connect {} to {}", topo_.vertex(endpoints_[0]).name,
                                 topo_.vertex(endpoints_[i]).name));
  }
}

void FabricBuilder::star() {
  attach(add_switch("switch"), n_);
}

void FabricBuilder::ring() {
  int64_t hosts = count("hosts_per_switch", 1);
  int64_t switches = at_least("switches", std::max<int64_t>(1, ceil_div(n_, hosts)), "switches");
  LinkSpec link = link_or_host("switch_link");
  check_size(static_cast<double>(switches));
  std::vector<VertexId> sw;
  for (int64_t i = 0; i < switches; ++i) {
    sw.push_back(add_switch(fmt::format("switch{}", i)));
    attach(sw.back(), hosts);
  }
  // Two switches share one cable, not two parallel ones.
  int64_t cables = switches <= 2 ? switches - 1 : switches;
  for (int64_t i = 0; i < cables; ++i) topo_.connect(sw[i], sw[(i + 1) % switches], link, LinkClass::Local);
}

void FabricBuilder::fat_tree() {
  int64_t levels = count("levels", 2);
  int64_t hosts = count("hosts_per_leaf");
  int64_t uplinks = leaf_uplinks(hosts);
  LinkSpec uplink = link_or_host("uplink");
  int64_t leaves = std::max<int64_t>(1, ceil_div(n_, hosts));

  if (levels == 2) {
    check_size(static_cast<double>(leaves) * static_cast<double>(uplinks));
    std::vector<VertexId> leaf;
    for (int64_t i = 0; i < leaves; ++i) {
      leaf.push_back(add_switch(fmt::format("leaf{}", i)));
      attach(leaf.back(), hosts);
    }
    for (int64_t s = 0; s < uplinks; ++s) {
      VertexId spine = add_switch(fmt::format("spine{}", s));
      for (VertexId l : leaf) topo_.connect(l, spine, uplink, LinkClass::Local);
    }
    return;
  }

  int64_t per_pod = count("leaves_per_pod");
  int64_t agg_uplinks = count("agg_uplinks", per_pod);
  int64_t pods = ceil_div(leaves, per_pod);
  check_size(static_cast<double>(leaves) * static_cast<double>(uplinks) +
             static_cast<double>(pods) * static_cast<double>(uplinks) * static_cast<double>(agg_uplinks));
  std::vector<VertexId> leaf;
  for (int64_t i = 0; i < leaves; ++i) {
    leaf.push_back(add_switch(fmt::format("leaf{}", i)));
    attach(leaf.back(), hosts);
  }
  // agg[p][j]: aggregation switch j of pod p; every leaf of the pod has one cable to each.
  std::vector<std::vector<VertexId>> agg(pods);
  for (int64_t p = 0; p < pods; ++p)
    for (int64_t j = 0; j < uplinks; ++j) {
      agg[p].push_back(add_switch(fmt::format("pod{}.agg{}", p, j)));
      for (int64_t i = p * per_pod; i < std::min(leaves, (p + 1) * per_pod); ++i)
        topo_.connect(leaf[i], agg[p].back(), uplink, LinkClass::Local);
    }
  // Core group j serves agg j of every pod: agg_uplinks cores per group, one cable from each such agg to
  // each.
  for (int64_t j = 0; j < uplinks; ++j)
    for (int64_t c = 0; c < agg_uplinks; ++c) {
      VertexId core = add_switch(fmt::format("core{}", j * agg_uplinks + c));
      for (int64_t p = 0; p < pods; ++p) topo_.connect(agg[p][j], core, uplink, LinkClass::Local);
    }
}

void FabricBuilder::dragonfly() {
  int64_t routers = count("routers_per_group");
  int64_t hosts = count("hosts_per_router");
  int64_t globals = count("global_links_per_router");
  int64_t groups = at_least("groups", std::max<int64_t>(1, ceil_div(n_, routers * hosts)), "groups");
  check_global_ports(groups, routers, globals, "global_links_per_router", "routers");
  LinkSpec local = link_or_host("local_link");
  LinkSpec global = link_or_host("global_link");
  double g = static_cast<double>(groups), a = static_cast<double>(routers);
  check_size(g * a * (a - 1) / 2 + g * a * static_cast<double>(globals) / 2 + g * (g - 1) / 2);

  int64_t chassis = count("routers_per_chassis", 1);
  if (routers % chassis != 0)
    net_.where.at("routers_per_chassis")
        .fail(fmt::format("routers_per_group ({}) is not a whole number of chassis of {} routers", routers,
                          chassis));
  std::vector<std::vector<VertexId>> router(groups);
  for (int64_t gi = 0; gi < groups; ++gi) {
    for (int64_t r = 0; r < routers; ++r)
      router[gi].push_back(add_switch(fmt::format("g{}.r{}", gi, r), static_cast<int32_t>(gi)));
    // A chassis's routers take its endpoints round-robin (one NIC of each node per router when the chassis
    // has as many routers as a node has NICs); one router per chassis attaches them in order.
    for (int64_t r = 0; r < routers; r += chassis)
      attach_dealt({router[gi].begin() + r, router[gi].begin() + r + chassis}, hosts);
    for (int64_t r = 0; r < routers; ++r)
      for (int64_t s = r + 1; s < routers; ++s)
        topo_.connect(router[gi][r], router[gi][s], local, LinkClass::Local);
  }
  connect_globals(router, globals, global);
}

void FabricBuilder::dragonfly_plus() {
  int64_t leaves = count("leaves_per_group");
  int64_t spines = count("spines_per_group");
  int64_t hosts = count("hosts_per_leaf");
  int64_t globals = count("global_links_per_spine");
  int64_t groups = at_least("groups", std::max<int64_t>(1, ceil_div(n_, leaves * hosts)), "groups");
  check_global_ports(groups, spines, globals, "global_links_per_spine", "spines");
  LinkSpec local = link_or_host("local_link");
  LinkSpec global = link_or_host("global_link");
  double g = static_cast<double>(groups);
  check_size(g * static_cast<double>(leaves * spines) + g * static_cast<double>(spines * globals) / 2 +
             g * (g - 1) / 2);

  std::vector<std::vector<VertexId>> spine(groups);
  for (int64_t gi = 0; gi < groups; ++gi) {
    auto group = static_cast<int32_t>(gi);
    std::vector<VertexId> leaf;
    for (int64_t l = 0; l < leaves; ++l) {
      leaf.push_back(add_switch(fmt::format("g{}.leaf{}", gi, l), group));
      attach(leaf.back(), hosts);
    }
    for (int64_t s = 0; s < spines; ++s) {
      spine[gi].push_back(add_switch(fmt::format("g{}.spine{}", gi, s), group));
      for (VertexId l : leaf) topo_.connect(l, spine[gi].back(), local, LinkClass::Local);
    }
  }
  connect_globals(spine, globals, global);
}

}  // namespace

std::optional<int64_t> FabricConfig::count(const std::string& key) const {
  auto it = counts.find(key);
  if (it == counts.end()) return std::nullopt;
  return it->second;
}

void build_fabric(Topology& topo, const FabricConfig& network, const std::vector<VertexId>& endpoints) {
  FabricBuilder(topo, network, endpoints).build();
  topo.set_adaptive_routing(network.adaptive_routing);
}

}  // namespace ddlsim
