#include "sim/config/cluster.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <string_view>

#include "sim/core/data_dir.hpp"
#include "sim/core/options.hpp"

namespace ddlsim {

namespace {

// A path, or topologies/<name>.yaml in the working directory, next to the scenario's folder or under a data
// root (data_roots(): $DDLSIM_DATA, the installed share/ddlsim, the build tree's).
std::string find_topology_file(const YamlNode& node) {
  std::string name = node.as_string();
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates = {fs::path(name)};
  if (fs::path(name).extension().empty()) {
    fs::path scenario_dir = fs::path(node.file()).parent_path();
    candidates.push_back(fs::path("topologies") / (name + ".yaml"));
    candidates.push_back(scenario_dir / ".." / "topologies" / (name + ".yaml"));
    for (const fs::path& root : data_roots()) candidates.push_back(root / "topologies" / (name + ".yaml"));
  } else {
    candidates.push_back(fs::path(node.file()).parent_path() / name);
    if (fs::path(name).is_relative())
      for (const fs::path& root : data_roots()) candidates.push_back(root / name);
  }
  std::string tried;
  if (std::string path = first_file(candidates, tried); !path.empty()) return path;
  node.fail(fmt::format("no topology \"{}\" (looked for {})", name, tried));
}

// A calibration file (written by `ddlsim calibrate --out`): a path as given, relative to the file naming it,
// or relative to a data root (`scenarios/calibration/...`).
std::string find_calibration_file(const YamlNode& node) {
  namespace fs = std::filesystem;
  std::string name = node.as_string();
  std::vector<fs::path> candidates = {fs::path(name), fs::path(node.file()).parent_path() / name};
  for (const fs::path& root : data_roots()) candidates.push_back(root / name);
  std::string tried;
  if (std::string path = first_file(candidates, tried); !path.empty()) return path;
  node.fail(fmt::format("no calibration file \"{}\" (looked for {})", name, tried));
}

const std::vector<std::string> kClusterKeys = {
    "topology", "name",      "nodes",      "gpus_per_node", "gpu",         "node",  "network",
    "comm",     "max_nodes", "host_cores", "host_cpu",      "description", "source"};

// The scenario's cluster map over its topology file's: a key of the first, else of the second.
struct Layers {
  YamlNode cluster;
  std::optional<YamlNode> topology;
  std::optional<YamlNode> get(const std::string& key) const {
    if (auto v = cluster.get(key)) return v;
    if (topology) return topology->get(key);
    return std::nullopt;
  }
  YamlNode require(const std::string& key) const {
    if (auto v = get(key)) return *v;
    cluster.fail(fmt::format("missing required key \"{}\"", key));
  }
};

}  // namespace

Time parse_latency(const YamlNode& n) {
  Time t = n.as_time();
  if (t.seconds() > kMaxLatencySeconds)
    n.fail(fmt::format("\"{}\" is over the limit of 1 s for a latency (alpha, latency, overhead, gpu_cost)",
                       n.as_string()));
  return t;
}

namespace {

Time get_time(const YamlNode& n, const char* key) {
  return n.has(key) ? parse_latency(n[key]) : Time();
}

// A link class is either flat keys (alpha_intra, efficiency_intra, bandwidth_intra) or a list of message-size
// ranges (`intra: [{max_bytes: 2KiB, alpha: .., bandwidth: ..}, {alpha: .., bandwidth: ..}]`, the form
// `ddlsim calibrate` writes). `c` is the base (a topology's or a calibration file's): a list replaces it, a
// flat key sets its field in every range of it and leaves the other fields alone.
CommClass parse_comm_class(const YamlNode& comm, const std::string& suffix, CommClass c) {
  if (auto list = comm.get(suffix)) {
    if (comm.has("alpha_" + suffix) || comm.has("efficiency_" + suffix) || comm.has("bandwidth_" + suffix))
      list->fail(fmt::format("give either {} or the flat *_{} keys, not both", suffix, suffix));
    return parse_comm_ranges(*list);
  }
  std::optional<double> efficiency;
  if (auto e = comm.get("efficiency_" + suffix)) {
    efficiency = e->as_fraction();
    if (*efficiency <= 0 || *efficiency > 1) e->fail("efficiency must be in (0, 1]");
  }
  std::optional<Time> alpha;
  if (auto a = comm.get("alpha_" + suffix)) alpha = parse_latency(*a);
  std::optional<double> bandwidth;
  if (auto b = comm.get("bandwidth_" + suffix)) bandwidth = b->as_rate().value;
  for (CommRange& r : c.ranges) {
    if (alpha) r.alpha = *alpha;
    if (efficiency) r.efficiency = *efficiency;
    if (bandwidth) r.bandwidth = *bandwidth;
  }
  return c;
}

// max_bytes of item i of a size-range list: every item but the last has one, increasing.
double range_bound(const YamlNode& n, size_t i, size_t count, double previous) {
  bool last = i + 1 == count;
  if (auto mb = n.get("max_bytes")) {
    if (last) mb->fail("the last range must not have max_bytes: it covers every larger size");
    double b = mb->as_bytes().value;
    if (i > 0 && b <= previous) mb->fail("ranges must be sorted by increasing max_bytes");
    return b;
  }
  if (!last) n.fail("missing required key \"max_bytes\" (every range but the last has one)");
  return std::numeric_limits<double>::infinity();
}

NodeInterior parse_node(const YamlNode& node) {
  node.expect_keys({"gpus", "nics", "gpu_link", "pcie", "rings", "nic_affinity", "source"});
  NodeInterior in;
  int64_t g = node["gpus"].as_int(), nics = node.get_int("nics", 1);
  if (g < 1 || g > 64) node["gpus"].fail("gpus must be between 1 and 64");
  if (nics < 1 || nics > 64) node["nics"].fail("nics must be between 1 and 64");
  in.gpus = static_cast<int>(g);
  in.nics = static_cast<int>(nics);
  YamlNode gl = node["gpu_link"];
  std::string kind = gl["kind"].as_string();
  // pcie: no GPU-to-GPU link at all (traffic crosses the node's PCIe), so it takes no rate of its own.
  if (kind != "nvswitch" && gl.has("nvls"))
    gl["nvls"].fail("nvls (reduction in the switch, NVLink SHARP) needs gpu_link kind nvswitch");
  if (kind == "pcie")
    gl.expect_keys({"kind"});
  else if (kind == "nvswitch")
    gl.expect_keys({"kind", "bandwidth", "latency", "nvls"});
  else
    gl.expect_keys({"kind", "bandwidth", "latency", "pairs"});
  static const std::pair<const char*, GpuLinkKind> kinds[] = {
      {"nvlink-mesh", GpuLinkKind::NvlinkMesh},
      {"nvswitch", GpuLinkKind::NvSwitch},
      {"pcie", GpuLinkKind::Pcie},
      {"infinity-fabric", GpuLinkKind::InfinityFabric}};
  const std::optional<GpuLinkKind> k = named(kind, kinds);
  if (!k)
    gl["kind"].fail(
        fmt::format("unknown gpu_link kind \"{}\" (nvlink-mesh, nvswitch, infinity-fabric, pcie)", kind));
  in.gpu_link_kind = *k;
  in.gpu_link = LinkSpec{kind == "pcie" ? Rate{1} : gl["bandwidth"].as_rate(), get_time(gl, "latency")};
  in.nvls = gl.get_bool("nvls", false);
  in.pcie = parse_link(node["pcie"]);
  auto gpu_index = [&](const YamlNode& v) {
    int64_t i = v.as_int();
    if (i < 0 || i >= g) v.fail(fmt::format("GPU {} is not one of the node's (0 to {})", i, g - 1));
    return static_cast<uint32_t>(i);
  };
  // gpu_link.pairs: [[a, b, links], ...] (links 1 when left out): only these pairs are joined.
  if (auto pairs = gl.get("pairs")) {
    for (const YamlNode& e : pairs->elements()) {
      std::vector<YamlNode> v = e.is_sequence() ? e.elements() : std::vector<YamlNode>{};
      if (v.size() != 2 && v.size() != 3) e.fail("expected [gpu, gpu] or [gpu, gpu, links]");
      GpuPair pr{gpu_index(v[0]), gpu_index(v[1]), 1};
      if (pr.a == pr.b) e.fail("a pair joins two different GPUs");
      if (v.size() == 3) {
        int64_t n = v[2].as_int();
        if (n < 1 || n > 64) v[2].fail("links must be between 1 and 64");
        pr.links = static_cast<uint32_t>(n);
      }
      for (const GpuPair& q : in.pairs)
        if (std::min(q.a, q.b) == std::min(pr.a, pr.b) && std::max(q.a, q.b) == std::max(pr.a, pr.b))
          e.fail(fmt::format("GPUs {} and {} are paired twice (give their links in one entry)", pr.a, pr.b));
      in.pairs.push_back(pr);
    }
    if (in.pairs.empty()) pairs->fail("pairs needs at least one [gpu, gpu, links]");
  }
  // rings: each a permutation of the node's GPUs.
  if (auto rings = node.get("rings")) {
    for (const YamlNode& e : rings->elements()) {
      if (!e.is_sequence()) e.fail(fmt::format("expected a list of the node's {} GPUs in ring order", g));
      std::vector<uint32_t> order;
      std::vector<bool> seen(static_cast<size_t>(g), false);
      for (const YamlNode& v : e.elements()) {
        uint32_t i = gpu_index(v);
        if (seen[i]) v.fail(fmt::format("GPU {} appears twice in this ring", i));
        seen[i] = true;
        order.push_back(i);
      }
      if (order.size() != static_cast<size_t>(g))
        e.fail(fmt::format("a ring visits every GPU of the node once: {} of {}", order.size(), g));
      in.rings.push_back(std::move(order));
    }
    if (in.rings.empty() || in.rings.size() > 64) rings->fail("rings needs 1 to 64 orders");
  }
  return in;
}

// A fabric's cable: both keys required.
LinkSpec parse_cable(const YamlNode& n) {
  if (!n.is_map()) n.fail("expected a map like {bandwidth: 200Gb/s, latency: 130ns}");
  n.expect_keys({"bandwidth", "latency"});
  return LinkSpec{n["bandwidth"].as_rate(), parse_latency(n["latency"])};
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

// Guards against typos (routers_per_group: 100000) that would build billions of cables and exhaust memory.
constexpr int64_t kMaxCount = 1 << 20;

}  // namespace

LinkSpec parse_link(const YamlNode& n) {
  n.expect_keys({"bandwidth", "latency"});
  return LinkSpec{n["bandwidth"].as_rate(), get_time(n, "latency")};
}

FabricConfig parse_fabric(const YamlNode& net) {
  if (!net.is_map()) net.fail("expected a map like {kind: star, link: {bandwidth: 200Gb/s, latency: 1us}}");
  struct Kind {
    const char* name;
    FabricKind kind;
    std::vector<std::string> keys;
    std::vector<std::string> required;  // counts without a default, in the order they are checked
  };
  const std::vector<Kind> kinds = {
      {"star", FabricKind::Star, {}, {}},
      {"ring", FabricKind::Ring, {"hosts_per_switch", "switches", "switch_link"}, {}},
      {"fat-tree",
       FabricKind::FatTree,
       {"levels", "hosts_per_leaf", "leaf_uplinks", "oversubscription", "uplink", "leaves_per_pod",
        "agg_uplinks"},
       {"hosts_per_leaf"}},
      {"dragonfly",
       FabricKind::Dragonfly,
       {"groups", "routers_per_group", "hosts_per_router", "global_links_per_router", "routers_per_chassis",
        "local_link", "global_link", "routing"},
       {"routers_per_group", "hosts_per_router", "global_links_per_router"}},
      {"dragonfly-plus",
       FabricKind::DragonflyPlus,
       {"groups", "leaves_per_group", "spines_per_group", "hosts_per_leaf", "global_links_per_spine",
        "local_link", "global_link", "routing"},
       {"leaves_per_group", "spines_per_group", "hosts_per_leaf", "global_links_per_spine"}},
  };
  YamlNode kind_node = net["kind"];
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
  allowed.insert(allowed.end(), {"kind", "link", "sharp"});
  net.expect_keys(allowed);
  FabricConfig f;
  f.kind = kind->kind;
  f.self = net.where();
  f.link = parse_cable(net["link"]);
  if (std::optional<YamlNode> sharp = net.get("sharp")) f.sharp = sharp->as_bool();
  if (f.kind == FabricKind::FatTree) {
    int64_t levels = net.get_int("levels", 2);
    if (levels != 2 && levels != 3) net["levels"].fail(fmt::format("expected 2 or 3, got {}", levels));
    if (levels == 2)
      for (const char* key : {"leaves_per_pod", "agg_uplinks"})
        if (std::optional<YamlNode> k = net.get(key)) k->fail("only used with levels: 3");
    f.counts["levels"] = levels;
  }
  std::vector<std::string> required = kind->required;
  if (f.kind == FabricKind::FatTree && f.counts["levels"] == 3) required.push_back("leaves_per_pod");
  for (const std::string& key : required) net[key];  // throws "missing required key"
  for (const std::string& key : kind->keys) {
    std::optional<YamlNode> n = net.get(key);
    if (!n) continue;
    f.where[key] = n->where();
    if (key == "levels" || key == "oversubscription") continue;
    if (key == "routing") {
      const std::string routing = n->as_string();
      if (routing != "minimal" && routing != "adaptive")
        n->fail(fmt::format("expected minimal or adaptive, got \"{}\"", routing));
      f.adaptive_routing = routing == "adaptive";
      continue;
    }
    if (key.ends_with("_link") || key == "uplink") {
      f.links[key] = parse_cable(*n);
      continue;
    }
    int64_t v = n->as_int();
    if (v < 1 || v > kMaxCount)
      n->fail(fmt::format("expected a positive integer up to {}, got {}", kMaxCount, v));
    f.counts[key] = v;
  }
  if (auto ratio = net.get("oversubscription")) {
    if (net.has("leaf_uplinks")) ratio->fail("give either leaf_uplinks or oversubscription, not both");
    int64_t hosts = f.counts.at("hosts_per_leaf");
    double exact = static_cast<double>(hosts) / parse_ratio(*ratio);
    int64_t rounded = std::llround(exact);
    if (rounded < 1 || std::abs(exact - static_cast<double>(rounded)) > 1e-9 * exact)
      ratio->fail(fmt::format("hosts_per_leaf ({}) / oversubscription ({}) is not a whole number of uplinks",
                              hosts, ratio->as_string()));
    f.uplinks_from_ratio = rounded;
  }
  return f;
}

std::vector<ReduceRange> parse_reduce_ranges(const YamlNode& list) {
  std::vector<ReduceRange> out;
  std::vector<YamlNode> items = list.elements();
  if (items.empty()) list.fail("list at least one range");
  for (size_t i = 0; i < items.size(); ++i) {
    const YamlNode& n = items[i];
    n.expect_keys({"max_bytes", "bandwidth_gpu", "bandwidth_cpu"});
    ReduceRange r;
    r.max_bytes = range_bound(n, i, items.size(), out.empty() ? 0 : out.back().max_bytes);
    if (auto b = n.get("bandwidth_gpu")) r.gamma_gpu = 1.0 / b->as_rate().value;
    if (auto b = n.get("bandwidth_cpu")) r.gamma_cpu = 1.0 / b->as_rate().value;
    out.push_back(r);
  }
  return out;
}

CommClass parse_comm_ranges(const YamlNode& list) {
  CommClass c;
  c.ranges.clear();
  std::vector<YamlNode> items = list.elements();
  if (items.empty()) list.fail("list at least one range");
  for (size_t i = 0; i < items.size(); ++i) {
    const YamlNode& n = items[i];
    n.expect_keys({"max_bytes", "alpha", "bandwidth", "efficiency"});
    CommRange r;
    r.max_bytes = range_bound(n, i, items.size(), c.ranges.empty() ? 0 : c.ranges.back().max_bytes);
    if (auto a = n.get("alpha")) r.alpha = parse_latency(*a);
    if (auto b = n.get("bandwidth")) r.bandwidth = b->as_rate().value;
    if (auto e = n.get("efficiency")) {
      r.efficiency = e->as_fraction();
      if (r.efficiency <= 0 || r.efficiency > 1) e->fail("efficiency must be in (0, 1]");
    }
    c.ranges.push_back(r);
  }
  return c;
}

// `nccl_proto`, NCCL_PROTO's syntax for one list: protocol names (any case) separated by commas, all the
// others disabled; after ^, those disabled and all the others enabled. NCCL's per-collective form
// ("allreduce:LL128;...") is refused: ddlsim's tuner prices the allreduce alone.
std::array<bool, 3> parse_nccl_proto(const YamlNode& node) {
  const std::string v = node.as_string();
  if (v.find_first_of(";:") != std::string::npos)
    node.fail(
        "expected one list of protocols (e.g. ^LL128 or LL,Simple); NCCL's per-collective form is not "
        "supported");
  const bool except = !v.empty() && v[0] == '^';
  std::array<bool, 3> on;
  on.fill(except);
  std::string_view rest = std::string_view(v).substr(except ? 1 : 0);
  while (true) {
    const size_t comma = rest.find(',');
    std::string name(rest.substr(0, comma));
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    auto same = [&](const char* p) {
      return std::equal(name.begin(), name.end(), p, p + std::char_traits<char>::length(p),
                        [](unsigned char a, unsigned char b) { return std::tolower(a) == std::tolower(b); });
    };
    auto it = std::find_if(kNcclProtocolNames.begin(), kNcclProtocolNames.end(), same);
    if (it == kNcclProtocolNames.end())
      node.fail(fmt::format("\"{}\" is not one of NCCL's protocols LL, LL128, Simple", name));
    on[static_cast<size_t>(it - kNcclProtocolNames.begin())] = !except;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (std::none_of(on.begin(), on.end(), [](bool b) { return b; })) node.fail("no protocol is left for NCCL");
  return on;
}

// `incast: {curve: [[senders, goodput], ...], source}`: senders whole and increasing from 1, goodput a
// fraction in (0, 1] that never rises with more senders; `incast: none` turns a base's curve off.
IncastCurve parse_incast(const YamlNode& node) {
  IncastCurve c;
  if (node.is_scalar() && node.as_string() == "none") return c;
  if (!node.is_map()) node.fail("expected none or a map {curve: [[senders, goodput], ...], source}");
  node.expect_keys({"curve", "source"});
  YamlNode list = node["curve"];
  if (!list.is_sequence()) list.fail("expected a list of [senders, goodput] pairs");
  for (const YamlNode& p : list.elements()) {
    std::vector<YamlNode> pair = p.is_sequence() ? p.elements() : std::vector<YamlNode>{};
    if (pair.size() != 2) p.fail("expected a pair [senders, goodput], e.g. [16, 0.5]");
    int64_t n = pair[0].as_int();
    if (n < 1 || n > 1'000'000) pair[0].fail("senders must be between 1 and 1000000");
    if (!c.points.empty() && n <= c.points.back().first)
      pair[0].fail("senders must increase along the curve");
    double g = pair[1].as_fraction();
    if (!(g > 0 && g <= 1)) pair[1].fail("goodput must be a fraction in (0, 1]");
    if (!c.points.empty() && g > c.points.back().second)
      pair[1].fail(
          fmt::format("goodput rises from {:g} to {:g}: an incast curve never rises with more senders",
                      c.points.back().second, g));
    c.points.emplace_back(static_cast<double>(n), g);
  }
  if (c.points.empty()) list.fail("list at least one [senders, goodput] pair");
  return c;
}

CommModel parse_comm_model(const YamlNode& comm, const CommModel& base) {
  comm.expect_keys({"alpha_intra",
                    "alpha_inter",
                    "efficiency_intra",
                    "efficiency_inter",
                    "bandwidth_intra",
                    "bandwidth_inter",
                    "goodput_inter",
                    "reduce_bandwidth_gpu",
                    "reduce_bandwidth_cpu",
                    "multipath",
                    "source",
                    "calibration",
                    "intra",
                    "inter",
                    "reduce",
                    "transports",
                    "incast",
                    "protocols",
                    "nccl_proto",
                    "net_latency",
                    "pipeline_chunk",
                    "nvls_chunk",
                    "nvls_tree_max_chunk"});
  CommModel m = base;
  // A calibration file is applied on the base; keys next to `calibration:` override it.
  if (auto cal = comm.get("calibration")) {
    YamlNode doc = YamlNode::load_file(find_calibration_file(*cal));
    YamlNode inner = doc["comm"];
    if (inner.has("calibration")) inner["calibration"].fail("a calibration file cannot name another one");
    m = parse_comm_model(inner, base);
    // The fit prices the measured library's messages, its protocols included: NCCL's protocol model stays
    // off unless the file or the keys beside it ask for it.
    if (!inner.has("protocols")) m.nccl_protocols = false;
    // A fit that folded gamma into beta has the collectives' reduction inside its bandwidths: the cluster's
    // GPU reduction rate would count it a second time (the parameter servers' CPU rate stays the cluster's).
    if (std::optional<YamlNode> fit = doc.get("fit"); fit && fit->is_map())
      if (std::optional<YamlNode> g = fit->get("gamma"); g && g->is_scalar() && g->as_string() == "folded")
        for (ReduceRange& r : m.reduce) r.gamma_gpu = 0;
  }
  m.intra = parse_comm_class(comm, "intra", m.intra);
  m.inter = parse_comm_class(comm, "inter", m.inter);
  if (auto r = comm.get("reduce")) m.reduce = parse_reduce_ranges(*r);
  // A flat reduce bandwidth applies to every operand size.
  if (auto g = comm.get("reduce_bandwidth_gpu"))
    for (ReduceRange& r : m.reduce) r.gamma_gpu = 1.0 / g->as_rate().value;
  if (auto g = comm.get("reduce_bandwidth_cpu"))
    for (ReduceRange& r : m.reduce) r.gamma_cpu = 1.0 / g->as_rate().value;
  if (auto t = comm.get("transports")) {
    for (const std::string& name : t->keys()) {
      YamlNode n = (*t)[name];
      n.expect_keys({"overhead", "cpu_rate", "connection_rate", "process_rate", "source"});
      HostTransport h;
      if (auto o = n.get("overhead")) h.overhead = parse_latency(*o);
      if (auto r = n.get("cpu_rate")) h.cpu_rate = r->as_rate().value;  // the unit parser rejects <= 0
      if (auto r = n.get("connection_rate")) h.connection_rate = r->as_rate().value;
      if (auto r = n.get("process_rate")) h.process_rate = r->as_rate().value;
      m.transports[name] = h;
    }
  }
  if (auto g = comm.get("goodput_inter")) {
    m.goodput_inter = g->as_fraction();
    if (m.goodput_inter <= 0 || m.goodput_inter > 1) g->fail("goodput_inter must be in (0, 1]");
  }
  if (auto in = comm.get("incast")) m.incast = parse_incast(*in);
  if (auto pr = comm.get("protocols")) {
    std::string v = pr->as_string();
    if (v != "nccl" && v != "none") pr->fail("protocols must be nccl or none");
    m.nccl_protocols = v == "nccl";
  }
  if (auto np = comm.get("nccl_proto")) m.nccl_proto = parse_nccl_proto(*np);
  if (auto nl = comm.get("net_latency")) m.nccl_net_latency = parse_latency(*nl);
  if (auto pc = comm.get("pipeline_chunk")) {
    if (pc->is_scalar() && pc->as_string() == "none") {
      m.pipeline_chunk = 0;
    } else {
      m.pipeline_chunk = pc->as_bytes().value;
      if (!(m.pipeline_chunk > 0)) pc->fail("pipeline_chunk must be a positive size (e.g. 2MiB) or none");
    }
  }
  for (auto [key, out] :
       {std::pair{"nvls_chunk", &m.nvls_chunk}, {"nvls_tree_max_chunk", &m.nvls_tree_max_chunk}})
    if (auto c = comm.get(key)) {
      *out = c->as_bytes().value;
      if (!(*out >= 1024 && *out <= 64 * 1024 * 1024))
        c->fail(fmt::format("{} must be between 1KiB and 64MiB", key));
    }
  if (auto mp = comm.get("multipath")) {
    int64_t k = mp->as_int();
    if (k < 1 || k > 64) mp->fail("multipath must be between 1 and 64");
    m.multipath = static_cast<uint32_t>(k);
  }
  return m;
}

Precision parse_precision(const YamlNode& node) {
  std::string s = node.as_string();
  if (s == "fp32") return Precision::Fp32;
  if (s == "tf32") return Precision::Tf32;
  if (s == "fp16" || s == "amp") return Precision::Fp16;
  if (s == "bf16") return Precision::Bf16;
  node.fail(fmt::format("unknown precision \"{}\" (fp32, tf32, fp16, bf16)", s));
}

GpuSpec parse_gpu(const YamlNode& node) {
  if (node.is_scalar()) {
    std::string name = node.as_string();
    std::vector<std::string> names;
    for (const GpuSpec& g : known_gpus()) {
      if (g.name == name) return g;
      names.push_back(g.name);
    }
    std::string hint = did_you_mean(name, names);
    node.fail(fmt::format("unknown GPU \"{}\"{}", name,
                          hint.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", hint)));
  }
  node.expect_keys({"name", "peak", "memory", "memory_bandwidth"});
  GpuSpec g;
  g.name = node.get_string("name", "custom");
  YamlNode peak = node["peak"];
  peak.expect_keys({"fp32", "tf32", "fp16", "bf16"});
  g.fp32 = peak["fp32"].as_flop_rate().value;
  g.tf32 = peak.has("tf32") ? peak["tf32"].as_flop_rate().value : g.fp32;
  g.fp16 = peak.has("fp16") ? peak["fp16"].as_flop_rate().value : g.fp32;
  g.bf16 = peak.has("bf16") ? peak["bf16"].as_flop_rate().value : g.fp16;
  if (auto m = node.get("memory")) g.memory = m->as_bytes().value;
  if (auto m = node.get("memory_bandwidth")) g.memory_bandwidth = m->as_rate().value;
  return g;
}

CommModel load_calibration(const YamlNode& node) {
  if (!node.is_map()) node.fail("expected a map with comm:");
  if (!node.has("comm")) return parse_comm_model(node);
  node.expect_keys({"comm", "fit", "source", "compute"});
  return parse_comm_model(node["comm"]);
}

CommModel load_calibration_file(const std::string& path) {
  return load_calibration(YamlNode::load_file(path));
}

void check_node_counts(const ClusterConfig& c, const std::vector<int64_t>& counts, const Where& where) {
  for (int64_t v : counts) {
    if (v < 1 || v > 1'000'000) where.fail(fmt::format("node count {} out of range 1..1000000", v));
    if (c.max_nodes > 0 && v > c.max_nodes)
      where.fail(fmt::format("{} nodes requested but the system has {}", v, c.max_nodes));
  }
}

ClusterConfig parse_cluster(const YamlNode& cluster, bool need_nodes) {
  cluster.expect_keys(kClusterKeys);
  Layers L{cluster, std::nullopt};
  if (auto t = cluster.get("topology")) {
    L.topology = YamlNode::load_file(find_topology_file(*t));
    std::vector<std::string> file_keys = kClusterKeys;
    file_keys.erase(file_keys.begin());  // a topology file cannot point at another one
    L.topology->expect_keys(file_keys);
  }
  ClusterConfig c;
  if (auto n = L.get("name"))
    c.name = n->as_string();
  else if (auto t = cluster.get("topology"))
    c.name = t->as_string();
  if (auto mx = L.get("max_nodes")) {
    c.max_nodes = mx->as_int();
    if (c.max_nodes < 1) mx->fail("max_nodes must be at least 1");
  }
  if (need_nodes || L.get("nodes")) {
    YamlNode n = L.require("nodes");
    c.nodes_where = n.where();
    c.node_counts = n.as_int_list();
    if (c.node_counts.empty()) n.fail("list at least one node count");
    check_node_counts(c, c.node_counts, c.nodes_where);
  }
  std::optional<YamlNode> node = L.get("node");
  if (node) {
    // With an interior, gpus_per_node is how many of its GPUs a job uses (the first ones, as a launcher's
    // --nproc_per_node with the default CUDA_VISIBLE_DEVICES does); every GPU by default.
    int gpus = static_cast<int>((*node)["gpus"].as_int());
    c.gpus_per_node = gpus;
    if (auto g = L.get("gpus_per_node")) {
      int64_t v = g->as_int();
      if (v < 1 || v > gpus)
        g->fail(fmt::format("gpus_per_node must be between 1 and the node's {} GPUs (node.gpus)", gpus));
      c.gpus_per_node = static_cast<int>(v);
    }
  } else if (auto g = L.get("gpus_per_node")) {
    int64_t v = g->as_int();
    if (v < 1 || v > 64) g->fail("gpus_per_node must be between 1 and 64");
    c.gpus_per_node = static_cast<int>(v);
  }
  if (auto h = L.get("host_cores")) {
    int64_t v = h->as_int();
    if (v < 1 || v > 4096) h->fail("host_cores must be between 1 and 4096");
    c.host_cores = static_cast<int>(v);
  }
  if (auto h = L.get("host_cpu")) {
    static const std::pair<const char*, HostCpu> cpus[] = {
        {"intel", HostCpu::Intel}, {"amd", HostCpu::Amd}, {"arm", HostCpu::Arm}};
    const std::string v = h->as_string();
    const std::optional<HostCpu> cpu = named(v, cpus);
    if (!cpu) h->fail(fmt::format("host_cpu must be intel, amd or arm, not \"{}\"", v));
    c.host_cpu = *cpu;
  }
  c.gpu = parse_gpu(L.require("gpu"));
  // The scenario's comm keys apply on top of its topology's, one key at a time.
  if (L.topology)
    if (auto comm = L.topology->get("comm")) c.comm = parse_comm_model(*comm);
  if (auto comm = cluster.get("comm")) c.comm = parse_comm_model(*comm, c.comm);
  YamlNode network = L.require("network");
  if (node) c.node = parse_node(*node);
  c.network = parse_fabric(network);
  return c;
}

}  // namespace ddlsim
