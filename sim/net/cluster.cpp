#include "sim/net/cluster.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <filesystem>
#include <limits>

#include "sim/core/data_dir.hpp"
#include "sim/net/fabric.hpp"

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
  std::vector<std::string> tried;
  for (const fs::path& p : candidates) {
    std::string path = p.lexically_normal().string();
    if (fs::is_regular_file(p)) return path;
    if (std::find(tried.begin(), tried.end(), path) == tried.end()) tried.push_back(path);
  }
  node.fail(fmt::format("no topology \"{}\" (looked for {})", name, fmt::join(tried, ", ")));
}

const std::vector<std::string> kClusterKeys = {"topology",  "name",        "nodes",   "gpus_per_node",
                                               "gpu",       "node",        "network", "comm",
                                               "max_nodes", "description", "source"};

LinkSpec parse_link(const YamlNode& n) {
  n.expect_keys({"bandwidth", "latency"});
  return LinkSpec{n["bandwidth"].as_rate(), n.has("latency") ? n["latency"].as_time() : Time()};
}

Time get_time(const YamlNode& n, const char* key) {
  return n.has(key) ? n[key].as_time() : Time();
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
  if (auto a = comm.get("alpha_" + suffix)) alpha = a->as_time();
  std::optional<double> bandwidth;
  if (auto b = comm.get("bandwidth_" + suffix)) bandwidth = b->as_rate().value;
  for (CommRange& r : c.ranges) {
    if (alpha) r.alpha = *alpha;
    if (efficiency) r.efficiency = *efficiency;
    if (bandwidth) r.bandwidth = *bandwidth;
  }
  return c;
}

// A calibration file (written by `ddlsim calibrate --out`): a path as given, relative to the file naming it,
// or relative to a data root (`scenarios/calibration/...`).
std::string find_calibration_file(const YamlNode& node) {
  namespace fs = std::filesystem;
  std::string name = node.as_string();
  std::vector<fs::path> candidates = {fs::path(name), fs::path(node.file()).parent_path() / name};
  for (const fs::path& root : data_roots()) candidates.push_back(root / name);
  for (const fs::path& p : candidates)
    if (fs::is_regular_file(p)) return p.lexically_normal().string();
  node.fail(fmt::format("no calibration file \"{}\"", name));
}

}  // namespace

namespace {

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

}  // namespace

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
    if (auto a = n.get("alpha")) r.alpha = a->as_time();
    if (auto b = n.get("bandwidth")) r.bandwidth = b->as_rate().value;
    if (auto e = n.get("efficiency")) {
      r.efficiency = e->as_fraction();
      if (r.efficiency <= 0 || r.efficiency > 1) e->fail("efficiency must be in (0, 1]");
    }
    c.ranges.push_back(r);
  }
  return c;
}

CommModel parse_comm_model(const YamlNode& comm, const CommModel& base) {
  comm.expect_keys({"alpha_intra", "alpha_inter", "efficiency_intra", "efficiency_inter", "bandwidth_intra",
                    "bandwidth_inter", "reduce_bandwidth_gpu", "reduce_bandwidth_cpu", "multipath", "source",
                    "calibration", "intra", "inter", "reduce"});
  CommModel m = base;
  // A calibration file is applied on the base; keys next to `calibration:` override it.
  if (auto cal = comm.get("calibration")) {
    YamlNode doc = YamlNode::load_file(find_calibration_file(*cal));
    YamlNode inner = doc["comm"];
    if (inner.has("calibration")) inner["calibration"].fail("a calibration file cannot name another one");
    m = parse_comm_model(inner, base);
  }
  m.intra = parse_comm_class(comm, "intra", m.intra);
  m.inter = parse_comm_class(comm, "inter", m.inter);
  if (auto r = comm.get("reduce")) m.reduce = parse_reduce_ranges(*r);
  // A flat reduce bandwidth applies to every operand size.
  if (auto g = comm.get("reduce_bandwidth_gpu"))
    for (ReduceRange& r : m.reduce) r.gamma_gpu = 1.0 / g->as_rate().value;
  if (auto g = comm.get("reduce_bandwidth_cpu"))
    for (ReduceRange& r : m.reduce) r.gamma_cpu = 1.0 / g->as_rate().value;
  if (auto mp = comm.get("multipath")) {
    int64_t k = mp->as_int();
    if (k < 1 || k > 64) mp->fail("multipath must be between 1 and 64");
    m.multipath = static_cast<uint32_t>(k);
  }
  return m;
}

ClusterSpec::ClusterSpec(const YamlNode& cluster) : cluster_(cluster) {
  cluster.expect_keys(kClusterKeys);
  if (auto t = cluster.get("topology")) {
    topology_ = YamlNode::load_file(find_topology_file(*t));
    std::vector<std::string> file_keys = kClusterKeys;
    file_keys.erase(file_keys.begin());  // a topology file cannot point at another one
    topology_->expect_keys(file_keys);
  }
}

std::optional<YamlNode> ClusterSpec::topology_get(const std::string& key) const {
  if (topology_) return topology_->get(key);
  return std::nullopt;
}

std::optional<YamlNode> ClusterSpec::get(const std::string& key) const {
  if (auto v = cluster_.get(key)) return v;
  if (topology_) return topology_->get(key);
  return std::nullopt;
}

YamlNode ClusterSpec::require(const std::string& key) const {
  if (auto v = get(key)) return *v;
  cluster_.fail(fmt::format("missing required key \"{}\"", key));
}

std::string ClusterSpec::name() const {
  if (auto n = get("name")) return n->as_string();
  if (auto t = cluster_.get("topology")) return t->as_string();
  return "inline";
}

std::vector<int64_t> ClusterSpec::node_counts() const {
  YamlNode n = require("nodes");
  std::vector<int64_t> out = n.as_int_list();
  for (int64_t v : out)
    if (v < 1 || v > 1'000'000) n.fail(fmt::format("node count {} out of range 1..1000000", v));
  if (auto mx = get("max_nodes"))
    for (int64_t v : out)
      if (v > mx->as_int()) n.fail(fmt::format("{} nodes requested but the system has {}", v, mx->as_int()));
  return out;
}

int ClusterSpec::gpus_per_node() const {
  if (auto node = get("node")) {
    int gpus = static_cast<int>((*node)["gpus"].as_int());
    if (auto g = get("gpus_per_node"); g && g->as_int() != gpus)
      g->fail(fmt::format("the node interior has {} GPUs (node.gpus); drop gpus_per_node or make it {}", gpus,
                          gpus));
    return gpus;
  }
  if (auto g = get("gpus_per_node")) return static_cast<int>(g->as_int());
  return 1;
}

MessageCost inter_node_cost(const Cluster& c, double bytes) {
  size_t other = static_cast<size_t>(c.gpus_per_node);
  if (c.nodes < 2 || other >= c.gpus.size()) return {};
  Router router(c.topo);
  double rate = std::numeric_limits<double>::infinity();
  for (LinkId l : router.route(c.gpus[0], c.gpus[other]))
    rate = std::min(rate, c.topo.links()[l].spec.capacity.value);
  const CommRange& r = c.comm.inter.lookup(bytes);
  rate *= r.efficiency;
  if (r.bandwidth > 0) rate = std::min(rate, r.bandwidth);
  return {r.alpha.seconds(), rate};
}

Cluster build_cluster(const ClusterSpec& spec, int64_t nodes, const ServerHosts& servers) {
  Cluster c;
  c.name = spec.name();
  c.nodes = static_cast<int>(nodes);
  c.gpu = parse_gpu(spec.require("gpu"));
  // The scenario's comm keys apply on top of its topology's, one key at a time.
  if (auto comm = spec.topology_get("comm")) c.comm = parse_comm_model(*comm);
  if (auto comm = spec.scenario_node().get("comm")) c.comm = parse_comm_model(*comm, c.comm);
  YamlNode network = spec.require("network");
  std::vector<VertexId> endpoints;
  std::optional<YamlNode> node = spec.get("node");
  Topology& t = c.topo;
  if (!node) {
    // No interior: every GPU is its own host on the fabric (the closed-form setting).
    int64_t g = spec.gpus_per_node();
    if (g < 1 || g > 64) spec.require("gpus_per_node").fail("gpus_per_node must be between 1 and 64");
    c.gpus_per_node = static_cast<int>(g);
    for (int64_t i = 0; i < nodes * g; ++i) {
      VertexId v = t.add_vertex(VertexKind::Gpu, static_cast<int32_t>(i), fmt::format("gpu{}", i));
      c.gpus.push_back(v);
      endpoints.push_back(v);
      if (i % g == 0) c.cpus.push_back(v);
    }
  } else {
    node->expect_keys({"gpus", "nics", "gpu_link", "pcie", "nic_affinity", "source"});
    int64_t g = (*node)["gpus"].as_int(), nics = node->get_int("nics", 1);
    if (g < 1 || g > 64) (*node)["gpus"].fail("gpus must be between 1 and 64");
    if (nics < 1 || nics > 64) (*node)["nics"].fail("nics must be between 1 and 64");
    c.gpus_per_node = static_cast<int>(g);
    YamlNode gl = (*node)["gpu_link"];
    std::string kind = gl["kind"].as_string();
    // pcie: no GPU-to-GPU link at all (traffic crosses the node's PCIe), so it takes no rate of its own.
    if (kind == "pcie")
      gl.expect_keys({"kind"});
    else
      gl.expect_keys({"kind", "bandwidth", "latency"});
    if (kind != "nvlink-mesh" && kind != "nvswitch" && kind != "pcie" && kind != "infinity-fabric")
      gl["kind"].fail(
          fmt::format("unknown gpu_link kind \"{}\" (nvlink-mesh, nvswitch, infinity-fabric, pcie)", kind));
    LinkSpec gpu_link{kind == "pcie" ? Rate{1} : gl["bandwidth"].as_rate(), get_time(gl, "latency")};
    LinkSpec pcie = parse_link((*node)["pcie"]);
    for (int64_t n = 0; n < nodes; ++n) {
      int32_t ni = static_cast<int32_t>(n);
      VertexId cpu = t.add_vertex(VertexKind::Cpu, ni, fmt::format("n{}.cpu", n));
      std::vector<VertexId> nic(nics), sw(nics), gpu(g);
      for (int64_t k = 0; k < nics; ++k) {
        nic[k] = t.add_vertex(VertexKind::Nic, ni, fmt::format("n{}.nic{}", n, k));
        sw[k] = t.add_vertex(VertexKind::PcieSwitch, ni, fmt::format("n{}.pcie{}", n, k));
        t.connect(nic[k], sw[k], pcie, LinkClass::Pcie);
        t.connect(cpu, sw[k], pcie, LinkClass::Pcie);
        endpoints.push_back(nic[k]);
      }
      for (int64_t i = 0; i < g; ++i) {
        gpu[i] = t.add_vertex(VertexKind::Gpu, ni, fmt::format("n{}.gpu{}", n, i));
        int64_t k = i * nics / g;  // GPUs share NICs evenly, in order (local rank i -> NIC i*nics/gpus)
        t.connect(gpu[i], sw[k], pcie, LinkClass::Pcie);
        t.set_nic(gpu[i], nic[k]);
        c.gpus.push_back(gpu[i]);
      }
      t.set_nic(cpu, nic[0]);
      c.cpus.push_back(cpu);
      if (kind == "nvlink-mesh" || kind == "infinity-fabric") {
        for (int64_t i = 0; i < g; ++i)
          for (int64_t j = i + 1; j < g; ++j) t.connect(gpu[i], gpu[j], gpu_link, LinkClass::NvLink);
      } else if (kind == "nvswitch") {
        VertexId nvs = t.add_vertex(VertexKind::NvSwitch, ni, fmt::format("n{}.nvswitch", n));
        for (int64_t i = 0; i < g; ++i) t.connect(gpu[i], nvs, gpu_link, LinkClass::NvLink);
      }
    }
  }
  // Servers get node ids after every worker node (without interiors each GPU is its own node).
  const int64_t first_server_node = node ? nodes : nodes * c.gpus_per_node;
  for (uint32_t s = 0; s < servers.count; ++s) {
    VertexId v = t.add_vertex(VertexKind::Cpu, static_cast<int32_t>(first_server_node + s),
                              fmt::format("server{}", s));
    c.servers.push_back(v);
    endpoints.push_back(v);
  }
  build_fabric(t, network, endpoints);
  if (servers.link)
    for (VertexId s : c.servers)
      for (LinkId l : t.out_links(s)) t.set_cable_spec(l, *servers.link);
  return c;
}

}  // namespace ddlsim
