#include "sim/net/cluster.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include "sim/core/interrupt.hpp"

namespace ddlsim {

namespace {
MessageCost message_cost(const Cluster& c, size_t other, const CommClass& cls, double bytes) {
  if (other >= c.gpus.size()) return {};
  Router router(c.topo);
  double rate = std::numeric_limits<double>::infinity(), latency = 0;
  for (LinkId l : router.route(c.gpus[0], c.gpus[other])) {
    rate = std::min(rate, c.topo.links()[l].spec.capacity.value);
    latency += c.topo.links()[l].spec.latency.seconds();
  }
  const CommRange& r = cls.lookup(bytes);
  rate *= r.efficiency;
  if (r.bandwidth > 0) rate = std::min(rate, r.bandwidth);
  return {r.alpha.seconds(), rate, latency};
}
}  // namespace

MessageCost intra_node_cost(const Cluster& c, double bytes) {
  return c.gpus_per_node < 2 ? MessageCost{} : message_cost(c, 1, c.comm.intra, bytes);
}

MessageCost inter_node_cost(const Cluster& c, double bytes) {
  return c.nodes < 2 ? MessageCost{}
                     : message_cost(c, static_cast<size_t>(c.gpus_per_node), c.comm.inter, bytes);
}

std::vector<std::string> unreachable_bandwidths(const Cluster& c) {
  std::vector<std::string> notes;
  auto check = [&](const char* key, const CommClass& cls, size_t other) {
    if (other >= c.gpus.size()) return;
    double previous = 0;  // the range's smallest message: just above the previous range's bound
    for (const CommRange& r : cls.ranges) {
      // The flow's rate without the bound: the route bottleneck x efficiency (message_cost, unbounded).
      CommClass unbounded;
      unbounded.ranges = {r};
      unbounded.ranges[0].bandwidth = 0;
      const double route = message_cost(c, other, unbounded, 0).rate;
      if (r.bandwidth > route * 1.01)  // (a fit at the link rate itself is no news)
        notes.push_back(fmt::format(
            "comm.{}: {} for messages {} exceeds the {} one flow reaches on the route (bottleneck x "
            "efficiency "
            "{:g}), and flows run at that; a rate fitted where the library beat one flow (NVLS or SHARP "
            "reduction in the switch, several channels) replays only with that algorithm",
            key, format_rate(Rate{r.bandwidth}),
            !std::isinf(r.max_bytes) ? fmt::format("up to {}", format_bytes(Bytes{r.max_bytes}))
            : previous > 0           ? fmt::format("over {}", format_bytes(Bytes{previous}))
                                     : std::string("of every size"),
            format_rate(Rate{route}), r.efficiency));
      previous = r.max_bytes;
    }
  };
  // (Without a node interior every GPU is a host of its own, and no message is intra-node.)
  if (c.gpus.size() > 1 && c.topo.vertex(c.gpus[0]).node == c.topo.vertex(c.gpus[1]).node)
    check("intra", c.comm.intra, 1);
  if (c.nodes > 1) check("inter", c.comm.inter, static_cast<size_t>(c.gpus_per_node));
  return notes;
}

Cluster build_cluster(const ClusterConfig& config, int64_t nodes, const ServerHosts& servers) {
  Cluster c;
  c.name = config.name;
  c.nodes = static_cast<int>(nodes);
  c.gpu = config.gpu;
  c.comm = config.comm;
  c.gpus_per_node = config.gpus_per_node;
  c.host_cores = config.host_cores;
  c.host_cpu = config.host_cpu;
  c.sharp = config.network.sharp;
  std::vector<VertexId> endpoints;
  Topology& t = c.topo;
  const std::optional<NodeInterior>& node = config.node;
  if (!node) {
    // No interior: every GPU is its own host on the fabric (the closed-form setting).
    int64_t g = config.gpus_per_node;
    for (int64_t i = 0; i < nodes * g; ++i) {
      if ((i & 4095) == 0) throw_if_interrupted();  // 10^6 hosts take seconds to build
      VertexId v = t.add_vertex(VertexKind::Gpu, static_cast<int32_t>(i), fmt::format("gpu{}", i));
      c.gpus.push_back(v);
      endpoints.push_back(v);
      if (i % g == 0) c.cpus.push_back(v);
    }
  } else {
    // g of the node's GPUs in use (gpus_per_node): the first g, on the NICs and links the whole node gives
    // them.
    const int64_t g = config.gpus_per_node, all = node->gpus, nics = node->nics;
    const GpuLinkKind kind = node->gpu_link_kind;
    if (!node->rings.empty()) {
      std::vector<std::vector<uint32_t>> rings;  // each ring's order over the GPUs in use
      for (const std::vector<uint32_t>& r : node->rings) {
        rings.emplace_back();
        std::copy_if(r.begin(), r.end(), std::back_inserter(rings.back()), [g](uint32_t i) { return i < g; });
      }
      c.rings = std::make_shared<const std::vector<std::vector<uint32_t>>>(std::move(rings));
    }
    c.nvls = node->nvls && kind == GpuLinkKind::NvSwitch;
    for (int64_t n = 0; n < nodes; ++n) {
      if ((n & 4095) == 0) throw_if_interrupted();
      int32_t ni = static_cast<int32_t>(n);
      VertexId cpu = t.add_vertex(VertexKind::Cpu, ni, fmt::format("n{}.cpu", n));
      std::vector<VertexId> nic(nics), sw(nics), gpu(g);
      for (int64_t k = 0; k < nics; ++k) {
        nic[k] = t.add_vertex(VertexKind::Nic, ni, fmt::format("n{}.nic{}", n, k));
        sw[k] = t.add_vertex(VertexKind::PcieSwitch, ni, fmt::format("n{}.pcie{}", n, k));
        t.connect(nic[k], sw[k], node->pcie, LinkClass::Pcie);
        t.connect(cpu, sw[k], node->pcie, LinkClass::Pcie);
        endpoints.push_back(nic[k]);
      }
      for (int64_t i = 0; i < g; ++i) {
        gpu[i] = t.add_vertex(VertexKind::Gpu, ni, fmt::format("n{}.gpu{}", n, i));
        int64_t k = i * nics / all;  // GPUs share NICs evenly, in order (local rank i -> NIC i*nics/gpus)
        t.connect(gpu[i], sw[k], node->pcie, LinkClass::Pcie);
        t.set_nic(gpu[i], nic[k]);
        c.gpus.push_back(gpu[i]);
      }
      t.set_nic(cpu, nic[0]);
      c.cpus.push_back(cpu);
      if (kind == GpuLinkKind::NvlinkMesh || kind == GpuLinkKind::InfinityFabric) {
        for (const GpuPair& pr : node->pairs) {  // the pairs given, with their link counts
          if (pr.a >= g || pr.b >= g) continue;
          LinkSpec spec = node->gpu_link;
          spec.capacity = Rate{spec.capacity.value * pr.links};
          t.connect(gpu[pr.a], gpu[pr.b], spec, LinkClass::NvLink);
        }
        if (node->pairs.empty())  // else every pair, by one link
          for (int64_t i = 0; i < g; ++i)
            for (int64_t j = i + 1; j < g; ++j) t.connect(gpu[i], gpu[j], node->gpu_link, LinkClass::NvLink);
      } else if (kind == GpuLinkKind::NvSwitch) {
        VertexId nvs = t.add_vertex(VertexKind::NvSwitch, ni, fmt::format("n{}.nvswitch", n));
        for (int64_t i = 0; i < g; ++i) t.connect(gpu[i], nvs, node->gpu_link, LinkClass::NvLink);
        c.nvswitches.push_back(nvs);
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
  build_fabric(t, config.network, endpoints);
  if (servers.link)
    for (VertexId s : c.servers)
      for (LinkId l : t.out_links(s)) t.set_cable_spec(l, *servers.link);
  if (c.comm.goodput_inter < 1) t.scale_fabric_capacity(c.comm.goodput_inter);
  return c;
}

}  // namespace ddlsim
