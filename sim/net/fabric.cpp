#include "sim/net/fabric.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <queue>
#include <string>

namespace ddlsim {
namespace {

// Guards against typos (routers_per_group: 100000) that would build billions of cables and exhaust memory.
constexpr double kMaxCables = 1 << 23;
constexpr int64_t kMaxCount = 1 << 20;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

LinkSpec parse_link(const YamlNode& n) {
  if (!n.is_map()) n.fail("expected a map like {bandwidth: 200Gb/s, latency: 130ns}");
  n.expect_keys({"bandwidth", "latency"});
  return LinkSpec{n["bandwidth"].as_rate(), n["latency"].as_time()};
}

std::optional<double> parse_number(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// "2", 2.5 or "2:1" → hosts per uplink.
double parse_ratio(const YamlNode& n) {
  std::string s = n.as_string();
  size_t colon = s.find(':');
  std::optional<double> num = parse_number(std::string_view(s).substr(0, colon));
  std::optional<double> den =
      colon == std::string::npos ? 1.0 : parse_number(std::string_view(s).substr(colon + 1));
  if (!num || !den || *num <= 0 || *den <= 0)
    n.fail(fmt::format("expected a ratio like 2 or \"2:1\", got \"{}\"", s));
  return *num / *den;
}

class FabricBuilder {
 public:
  FabricBuilder(Topology& topo, const YamlNode& network, const std::vector<VertexId>& endpoints)
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

  int64_t count(const char* key, std::optional<int64_t> def = std::nullopt) const;
  int64_t at_least(const char* key, int64_t needed, const char* what) const;
  int64_t leaf_uplinks(int64_t hosts_per_leaf) const;
  LinkSpec link_or_host(const char* key) const;
  void check_size(double cables) const;
  void check_global_ports(int64_t groups, int64_t owners, int64_t per_owner, const char* key,
                          const char* owner_name) const;

  VertexId add_switch(std::string name, int32_t group = -1);
  void attach(VertexId sw, int64_t ports);
  void connect_globals(const std::vector<std::vector<VertexId>>& owners, int64_t per_owner, LinkSpec spec);
  void check_connected() const;

  Topology& topo_;
  const YamlNode& net_;
  const std::vector<VertexId>& endpoints_;
  int64_t n_;
  LinkSpec host_{};
  size_t next_endpoint_ = 0;
  std::vector<VertexId> endpoint_switch_;  // the switch each endpoint hangs off
};

void FabricBuilder::build() {
  if (!net_.is_map()) net_.fail("expected a map like {kind: star, link: {bandwidth: 200Gb/s, latency: 1us}}");
  struct Kind {
    const char* name;
    std::vector<std::string> keys;
    void (FabricBuilder::*build)();
  };
  const std::vector<Kind> kinds = {
      {"star", {}, &FabricBuilder::star},
      {"ring", {"hosts_per_switch", "switches", "switch_link"}, &FabricBuilder::ring},
      {"fat-tree",
       {"levels", "hosts_per_leaf", "leaf_uplinks", "oversubscription", "uplink", "leaves_per_pod",
        "agg_uplinks"},
       &FabricBuilder::fat_tree},
      {"dragonfly",
       {"groups", "routers_per_group", "hosts_per_router", "global_links_per_router", "local_link",
        "global_link"},
       &FabricBuilder::dragonfly},
      {"dragonfly-plus",
       {"groups", "leaves_per_group", "spines_per_group", "hosts_per_leaf", "global_links_per_spine",
        "local_link", "global_link"},
       &FabricBuilder::dragonfly_plus},
  };
  YamlNode kind_node = net_["kind"];
  std::string name = kind_node.as_string();
  if (name == "dragonfly+") name = "dragonfly-plus";
  auto kind = std::find_if(kinds.begin(), kinds.end(), [&](const Kind& k) { return name == k.name; });
  if (kind == kinds.end()) {
    std::vector<std::string> names;
    for (const Kind& k : kinds) names.push_back(k.name);
    std::string hint = did_you_mean(name, names);
    kind_node.fail(fmt::format("unknown network kind \"{}\"{}; kinds: {}", name,
                               hint.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", hint),
                               fmt::join(names, ", ")));
  }
  // Unknown keys first, so a misspelt key is reported as such rather than as a missing one.
  std::vector<std::string> allowed = kind->keys;
  allowed.insert(allowed.end(), {"kind", "link"});
  net_.expect_keys(allowed);
  host_ = parse_link(net_["link"]);
  (this->*(kind->build))();
  check_connected();
}

int64_t FabricBuilder::count(const char* key, std::optional<int64_t> def) const {
  std::optional<YamlNode> node = net_.get(key);
  if (!node && def) return *def;
  YamlNode n = node ? *node : net_[key];  // operator[] throws for a missing required key
  int64_t v = n.as_int();
  if (v < 1 || v > kMaxCount)
    n.fail(fmt::format("expected a positive integer up to {}, got {}", kMaxCount, v));
  return v;
}

// An optional size that defaults to what the endpoints need and may not be smaller.
int64_t FabricBuilder::at_least(const char* key, int64_t needed, const char* what) const {
  std::optional<YamlNode> node = net_.get(key);
  if (!node) return needed;
  int64_t v = count(key);
  if (v < needed) node->fail(fmt::format("{} endpoints need at least {} {}", n_, needed, what));
  return v;
}

int64_t FabricBuilder::leaf_uplinks(int64_t hosts_per_leaf) const {
  std::optional<YamlNode> uplinks = net_.get("leaf_uplinks");
  std::optional<YamlNode> ratio = net_.get("oversubscription");
  if (uplinks && ratio) ratio->fail("give either leaf_uplinks or oversubscription, not both");
  if (uplinks) return count("leaf_uplinks");
  if (!ratio) return hosts_per_leaf;  // 1:1, non-blocking
  double exact = static_cast<double>(hosts_per_leaf) / parse_ratio(*ratio);
  int64_t rounded = std::llround(exact);
  if (rounded < 1 || std::abs(exact - static_cast<double>(rounded)) > 1e-9 * exact)
    ratio->fail(fmt::format("hosts_per_leaf ({}) / oversubscription ({}) is not a whole number of uplinks",
                            hosts_per_leaf, ratio->as_string()));
  return rounded;
}

LinkSpec FabricBuilder::link_or_host(const char* key) const {
  std::optional<YamlNode> node = net_.get(key);
  return node ? parse_link(*node) : host_;
}

void FabricBuilder::check_size(double cables) const {
  if (cables > kMaxCables)
    net_.fail(fmt::format("this fabric would have {:.3g} switch cables; more than {} looks like a mistake",
                          cables, kMaxCables));
}

void FabricBuilder::check_global_ports(int64_t groups, int64_t owners, int64_t per_owner, const char* key,
                                       const char* owner_name) const {
  if (groups < 2 || owners * per_owner >= groups - 1) return;
  net_[key].fail(fmt::format(
      "{} groups need at least {} global cables per group to reach each other, but {} {} x {} links = {}; "
      "use at least {}",
      groups, groups - 1, owners, owner_name, per_owner, owners * per_owner, ceil_div(groups - 1, owners)));
}

VertexId FabricBuilder::add_switch(std::string name, int32_t group) {
  return topo_.add_vertex(VertexKind::Switch, -1, std::move(name), group);
}

// The next `ports` endpoints (fewer at the end) hang off `sw`.
void FabricBuilder::attach(VertexId sw, int64_t ports) {
  for (int64_t p = 0; p < ports && next_endpoint_ < endpoints_.size(); ++p, ++next_endpoint_) {
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
      net_.fail(fmt::format("the fabric does not connect {} to {}", topo_.vertex(endpoints_[0]).name,
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
  int64_t levels = net_.get_int("levels", 2);
  if (levels != 2 && levels != 3) net_["levels"].fail(fmt::format("expected 2 or 3, got {}", levels));
  if (levels == 2)
    for (const char* key : {"leaves_per_pod", "agg_uplinks"})
      if (std::optional<YamlNode> k = net_.get(key)) k->fail("only used with levels: 3");
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

  std::vector<std::vector<VertexId>> router(groups);
  for (int64_t gi = 0; gi < groups; ++gi) {
    for (int64_t r = 0; r < routers; ++r) {
      router[gi].push_back(add_switch(fmt::format("g{}.r{}", gi, r), static_cast<int32_t>(gi)));
      attach(router[gi].back(), hosts);
    }
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

void build_fabric(Topology& topo, const YamlNode& network, const std::vector<VertexId>& endpoints) {
  FabricBuilder(topo, network, endpoints).build();
}

}  // namespace ddlsim
