#include "sim/calib/replay.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <cmath>
#include <map>

#include "sim/calib/calibration.hpp"
#include "sim/core/error.hpp"
#include "sim/train/collective_workload.hpp"
#include "sim/train/strategies/strategy.hpp"

namespace ddlsim {

namespace {

struct Plan {
  bool ok = false;
  CollectiveKind collective = CollectiveKind::Allreduce;
  std::string strategy;       // the strategy's name
  ServerPlacement placement;  // ps: its servers
  std::string label;
  int64_t nodes = 0;
  double largest_message = 0;  // bytes
  std::string note;
};

Plan plan_for(const Measurement& m) {
  Plan p;
  int64_t ranks = m.ranks;
  if (m.kind == MeasurementKind::Step) {
    p.note = "training step: compare with ddlsim validate";
    return p;
  }
  if (m.kind == MeasurementKind::Bandwidth) {
    p.note = "streamed messages (osu_bw): no such workload in the simulator";
    return p;
  }
  if (m.kind == MeasurementKind::PingPong) {
    p.ok = true;
    p.collective = CollectiveKind::Broadcast;
    p.strategy = "tree";
    p.label = "one message";
    p.nodes = 2;
    p.largest_message = m.bytes;
    return p;
  }
  if (ranks < 2) {
    p.note = "one rank: nothing to communicate";
    return p;
  }
  const std::string& a = m.algorithm;
  p.ok = true;
  p.nodes = ranks;
  double n = m.bytes;
  p.largest_message = n / static_cast<double>(ranks);
  if (a == "mpi_allreduce" && (m.library.starts_with("Open MPI") || m.library.starts_with("MPICH"))) {
    // The library the kernels name (their mpi_library) chooses its algorithm by size and ranks.
    const bool ompi = m.library.starts_with("Open MPI");
    p.strategy = p.label = ompi ? "openmpi" : "mpich";
    const auto r = static_cast<uint32_t>(ranks);
    Algorithm chosen = ompi ? open_mpi_allreduce(r, n) : mpich_allreduce(r, n);
    p.largest_message = chosen == Algorithm::Ring              ? n / static_cast<double>(ranks)
                        : chosen == Algorithm::HalvingDoubling ? n / 2
                                                               : n;  // recursive doubling, tree
    p.note = fmt::format("MPI_Allreduce as {} chooses it: {}", ompi ? "Open MPI" : "MPICH",
                         algorithm_name(chosen));
  } else if (a == "ring" || a == "mpi_allreduce" || a == "nccl" || a == "osu_allreduce") {
    p.strategy = "ring";
    p.label = "ring";
    if (a != "ring") p.note = "library allreduce simulated as ring";
  } else if (a == "rhd") {
    p.strategy = "rhd";
    p.label = "rhd";
    p.largest_message = n / 2;
  } else if (a == "direct") {
    p.strategy = "direct";
    p.label = "direct";
    p.largest_message = n;
  } else if (a == "ps") {
    p.strategy = "ps";
    p.placement = {static_cast<uint32_t>(m.servers), true, {}};
    p.label = fmt::format("ps k={}", m.servers);
    p.nodes = ranks - m.servers;
    p.largest_message = n / static_cast<double>(m.servers);
  } else if (a == "ps-colocated") {
    p.strategy = "ps";
    p.placement = {static_cast<uint32_t>(ranks), false, {}};
    p.label = fmt::format("ps colocated k={}", ranks);
  } else {
    p.ok = false;
    p.note = fmt::format("no strategy for \"{}\"", a);
  }
  return p;
}

// The replay's cluster: every rank its own node on a star, with the fitted class's message-size ranges as the
// inter-node comm model and the fitted reduce ranges, so every message and operand pays its own range. A
// rank's link runs at the fitted rate of the case's largest message: one message alone is bound by its
// range's rate anyway, but messages a rank sends or receives at the same time (p-k pushes into one server,
// direct's p-1 sends) share it, as they share the rank's copy engine (a core, a NIC).
ClusterConfig replay_cluster(const FitResult& fit, const Plan& p, const FittedClass& cls) {
  ClusterConfig c;
  c.name = "calibrate-replay";
  c.gpus_per_node = 1;
  c.gpu = known_gpus().front();
  for (const GpuSpec& g : known_gpus())
    if (g.name == "a100-40gb") c.gpu = g;
  c.comm.inter.ranges.clear();
  for (const FittedRange& r : cls.ranges)
    c.comm.inter.ranges.push_back({r.max_bytes, Time::from_seconds(r.alpha), 1 / r.beta, 1});
  c.comm.reduce = fit.model.reduce;
  c.network.kind = FabricKind::Star;
  c.network.link = LinkSpec{Rate{1 / cls.lookup(p.largest_message).beta}, Time()};
  return c;
}

}  // namespace

ReplayResult replay_measurement(const Measurement& m, const FitResult& fit) {
  ReplayResult out;
  Plan p = plan_for(m);
  out.strategy = p.label;
  out.note = p.note;
  if (!p.ok) return out;
  int link = cost_terms(m).link;
  const FittedClass& cls = fit.link[link];
  if (!cls.measured) {
    out.note = fmt::format("no {}-node measurements in the fit", link_class_name(link));
    return out;
  }
  Strategy st;
  st.name = st.label = p.strategy;
  if (p.strategy == "ps") {
    PsOptions ps;
    ps.placement = p.placement;
    st.options = ps;
  } else {
    AllreduceOptions a;
    if (p.collective == CollectiveKind::Broadcast)
      a.algorithm = Algorithm::Broadcast;
    else
      allreduce_algorithm(p.strategy, a.algorithm);
    st.options = a;
  }
  CollectiveResult res = run_collective_workload(replay_cluster(fit, p, cls),
                                                 CollectiveWorkload{p.collective, m.bytes}, st, p.nodes);
  out.replayed = true;
  out.predicted_s = res.time_s;
  return out;
}

CommModel calibrated_comm(const CommModel& base, const FitResult& fit) {
  CommModel m = base;
  m.nccl_protocols = false;  // the fit prices the measured library's messages, its protocols included
  if (fit.link[kIntraNode].measured) m.intra = fit.model.intra;
  if (fit.link[kInterNode].measured) m.inter = fit.model.inter;
  // As the file gives it (calibration_yaml, read by the configuration layer): one range as flat rates over
  // the base's ranges, several as the ranges themselves, none when every fitted gamma is 0.
  const std::vector<ReduceRange>& rr = fit.model.reduce;
  if (fit.gamma_folded) {
    for (ReduceRange& r : m.reduce) r.gamma_gpu = 0;
  } else if (rr.size() == 1 && rr[0].gamma_gpu > 0) {
    for (ReduceRange& r : m.reduce) {
      r.gamma_gpu = rr[0].gamma_gpu;
      if (rr[0].gamma_cpu > 0) r.gamma_cpu = rr[0].gamma_cpu;
    }
  } else if (std::any_of(rr.begin(), rr.end(), [](const ReduceRange& r) { return r.gamma_gpu > 0; })) {
    m.reduce = rr;
  }
  return m;
}

std::string cluster_layout_mismatch(const Measurement& m, const ClusterConfig& cluster) {
  if (m.kind == MeasurementKind::PingPong) {
    if (!(m.same_node || m.ranks_per_node >= 2) && cluster.max_nodes == 1) return "a one-node cluster";
    if ((m.same_node || m.ranks_per_node >= 2) && cluster.gpus_per_node < 2) return "one GPU per node";
    return "";
  }
  if (m.ranks_per_node != cluster.gpus_per_node || m.ranks != m.nodes * m.ranks_per_node)
    return fmt::format("{} ranks on {} node(s), {} per node, where the cluster has {} GPUs per node", m.ranks,
                       m.nodes, m.ranks_per_node, cluster.gpus_per_node);
  if (cluster.max_nodes > 0 && m.nodes > cluster.max_nodes)
    return fmt::format("{} nodes where the cluster has {}", m.nodes, cluster.max_nodes);
  return "";
}

namespace {

// The plan of an allreduce that runs on a cluster as the ring, rhd, openmpi or mpich strategy (plan_for's
// choice); not ok for anything else.
Plan cluster_plan(const Measurement& m) {
  Plan p = plan_for(m);
  p.ok = p.ok && m.kind == MeasurementKind::Allreduce &&
         (p.strategy == "ring" || p.strategy == "rhd" || p.strategy == "openmpi" || p.strategy == "mpich");
  return p;
}

// One message alone on the route a ping-pong takes on the cluster (GPUs 0 and 1 of a node, or the first
// GPUs of nodes 0 and 1) under `comm`.
MessageCost pingpong_cost(const Measurement& m, ClusterConfig cluster, const CommModel& comm) {
  cluster.comm = comm;
  bool intra = m.same_node || m.ranks_per_node >= 2;
  Cluster c = build_cluster(cluster, intra ? 1 : 2);
  return intra ? intra_node_cost(c, m.bytes) : inter_node_cost(c, m.bytes);
}

}  // namespace

CostTerms cluster_cost_terms(const Measurement& m, const ClusterConfig& cluster) {
  if (!cluster_layout_mismatch(m, cluster).empty()) return cost_terms(m);
  if (m.kind == MeasurementKind::PingPong) {
    CostTerms c = cost_terms(m);
    c.offset_s = pingpong_cost(m, cluster, cluster.comm).latency;
    return c;
  }
  uint32_t channels = 1;
  if (cluster_plan(m).strategy == "ring" && m.nodes > 1 && m.ranks_per_node > 1)
    channels = std::min(ring_channels(build_cluster(cluster, 2), 0), static_cast<uint32_t>(m.ranks_per_node));
  return cost_terms(m, channels);
}

ReplayResult replay_on_cluster(const Measurement& m, const ClusterConfig& cluster, const CommModel& comm) {
  ReplayResult out;
  if (std::string why = cluster_layout_mismatch(m, cluster); !why.empty()) {
    out.note = "not on the cluster: " + why;
    return out;
  }
  if (m.kind == MeasurementKind::PingPong) {
    MessageCost c = pingpong_cost(m, cluster, comm);
    out.replayed = true;
    out.strategy = "one message";
    out.predicted_s = c.latency + c.alpha + m.bytes / c.rate;
    return out;
  }
  Plan p = cluster_plan(m);
  if (!p.ok) {
    out.note = fmt::format("no replay of \"{}\" on a cluster", m.algorithm);
    return out;
  }
  Strategy st;
  st.name = st.label = p.strategy;
  AllreduceOptions a;
  allreduce_algorithm(p.strategy, a.algorithm);
  st.options = a;
  ClusterConfig c = cluster;
  c.comm = comm;
  CollectiveResult res =
      run_collective_workload(c, CollectiveWorkload{CollectiveKind::Allreduce, m.bytes}, st, m.nodes);
  out.replayed = true;
  out.strategy = p.strategy;
  out.predicted_s = res.time_s;
  out.note = p.note;
  return out;
}

namespace {

// Per measurement: the algorithm NCCL's tuner runs it with on `cluster` when that is not the ring a fit
// replays ("double-tree", "nvls-tree", ...), else empty. Only for nccl-tests allreduces on a cluster that
// runs NCCL's protocols, in the cluster's layout.
std::vector<std::string> nccl_non_ring(const std::vector<Measurement>& ms, const ClusterConfig& cluster) {
  std::vector<std::string> out(ms.size());
  if (!cluster.comm.nccl_protocols) return out;
  std::map<int64_t, Cluster> built;  // by node count
  for (size_t i = 0; i < ms.size(); ++i) {
    const Measurement& m = ms[i];
    if (m.algorithm != "nccl" || m.kind != MeasurementKind::Allreduce || m.ranks < 2 ||
        !cluster_layout_mismatch(m, cluster).empty())
      continue;
    auto it = built.find(m.nodes);
    if (it == built.end()) it = built.emplace(m.nodes, build_cluster(cluster, m.nodes)).first;
    CollectiveShape shape;
    shape.algorithm = Algorithm::Hierarchical;
    shape.inter_node = Algorithm::Auto;
    shape.ranks = static_cast<uint32_t>(m.ranks);
    shape.ranks_per_node = static_cast<uint32_t>(m.ranks_per_node);
    shape.bytes = m.bytes;
    cluster_plan(shape, it->second, 0);
    if (shape.algorithm != Algorithm::Hierarchical)
      out[i] = algorithm_name(shape.algorithm);
    else if (m.nodes > 1 && shape.inter_node != Algorithm::Ring)
      out[i] = algorithm_name(shape.inter_node);
  }
  return out;
}

// The notes of a fit through `cluster`: the nccl-tests rows NCCL runs there with another algorithm than the
// ring the fit replays, the fit rows the cluster alone makes slower than measured (alpha >= 0 cannot take
// time away), and the fitted rates above one flow's route capacity (the simulator caps them there).
void add_cluster_notes(FitResult& fit, const std::vector<Measurement>& ms,
                       const std::vector<CostTerms>& terms, const ClusterConfig& cluster, bool converged) {
  const std::vector<std::string> non_ring = nccl_non_ring(ms, cluster);
  std::vector<size_t> rows;  // fit rows NCCL does not run as a ring, by size
  for (size_t i = 0; i < ms.size(); ++i)
    if (fit.points[i].in_fit && !non_ring[i].empty()) rows.push_back(i);
  if (!rows.empty() && !converged) {
    std::sort(rows.begin(), rows.end(), [&](size_t a, size_t b) { return ms[a].bytes < ms[b].bytes; });
    std::vector<std::string> ranges;  // "double-tree 8 B-8 MiB"
    for (size_t r = 0; r < rows.size();) {
      size_t e = r;
      while (e + 1 < rows.size() && non_ring[rows[e + 1]] == non_ring[rows[r]]) ++e;
      std::string from = format_bytes(Bytes{ms[rows[r]].bytes}), to = format_bytes(Bytes{ms[rows[e]].bytes});
      ranges.push_back(fmt::format("{} {}", non_ring[rows[r]], from == to ? from : from + "-" + to));
      r = e + 1;
    }
    fit.notes.push_back(fmt::format(
        "NCCL's tuner on {} runs {} of the fit rows with another algorithm than the ring the fit replays "
        "({}), and the ring does not reproduce them there. Fit through this cluster nccl-tests output run "
        "with NCCL_ALGO=Ring, or only the sizes NCCL runs as a ring",
        cluster.name, rows.size(), fmt::join(ranges, ", ")));
  }
  size_t slower = 0, first = ms.size();
  for (size_t i = 0; i < ms.size(); ++i)
    if (fit.points[i].in_fit && terms[i].offset_s > ms[i].time_s) {
      ++slower;
      if (first == ms.size()) first = i;
    }
  if (slower > 0)
    fit.notes.push_back(fmt::format(
        "{} fit row{} take{} less time than {}'s routes alone give {} (e.g. {:.0f} B: {:.4g} us measured, "
        "{:.4g} us of latency and fill on its critical path): {}",
        slower, slower > 1 ? "s" : "", slower > 1 ? "" : "s", cluster.name, slower > 1 ? "them" : "it",
        ms[first].bytes, ms[first].time_s * 1e6, terms[first].offset_s * 1e6,
        non_ring[first].empty()
            ? std::string("the topology's link latencies are too high for these data")
            : fmt::format("NCCL runs that size as {}, in fewer steps than the ring replayed here",
                          non_ring[first])));
  ClusterConfig with = cluster;
  with.comm = calibrated_comm(cluster.comm, fit);
  const Cluster built = build_cluster(with, with.max_nodes == 1 ? 1 : 2);
  for (int link : {kIntraNode, kInterNode}) {
    if (!fit.link[link].measured) continue;
    for (const FittedRange& r : fit.link[link].ranges) {
      double bytes = std::isfinite(r.max_bytes) ? r.max_bytes : 1 << 30;
      MessageCost c = link == kIntraNode ? intra_node_cost(built, bytes) : inter_node_cost(built, bytes);
      if (c.rate > 0 && c.rate < (1 / r.beta) * (1 - 1e-9))
        fit.notes.push_back(fmt::format(
            "{}: the fitted {:.4g} GB/s ({}) is above what one flow gets on {}'s route ({:.4g} GB/s): the "
            "simulator runs those messages at that rate",
            link_class_name(link), 1e-9 / r.beta,
            std::isfinite(r.max_bytes) ? fmt::format("messages up to {:.0f} B", r.max_bytes)
                                       : std::string("the largest messages"),
            cluster.name, c.rate / 1e9));
    }
  }
}

}  // namespace

FitResult fit_on_cluster(const std::vector<Measurement>& ms, FitOptions options,
                         const ClusterConfig& cluster) {
  constexpr int kPasses = 12;
  options.terms.clear();
  for (const Measurement& m : ms) options.terms.push_back(cluster_cost_terms(m, cluster));
  FitResult fit = fit_comm_model(ms, options);
  fit.cluster = cluster.name;
  auto finish = [&](std::string note, bool converged) {
    fit.notes.push_back(std::move(note));
    add_cluster_notes(fit, ms, options.terms, cluster, converged);
    return fit;
  };
  for (int pass = 1;; ++pass) {
    CommModel comm = calibrated_comm(cluster.comm, fit);
    double worst = 0;
    std::vector<CostTerms> next = options.terms;
    for (size_t i = 0; i < ms.size(); ++i) {
      if (!fit.points[i].in_fit || fit.points[i].outlier) continue;
      ReplayResult r = replay_on_cluster(ms[i], cluster, comm);
      if (!r.replayed) continue;
      double model = model_time(options.terms[i], fit);
      if (std::isnan(model)) continue;
      next[i].offset_s += r.predicted_s - model;
      worst = std::max(worst, std::fabs(r.predicted_s - model) / ms[i].time_s);
    }
    if (worst <= 1e-6)
      return finish(
          fmt::format(
              "fitted through the simulator on {} ({} pass{}): every fit row's closed form plus what the "
              "cluster adds (wire latency, pipeline fill) equals its replay there to 1e-6",
              cluster.name, pass, pass > 1 ? "es" : ""),
          true);
    if (pass == kPasses)
      return finish(
          fmt::format(
              "fitted through the simulator on {}: not converged after {} passes (a replay still differs by "
              "{:.2g} of its measured time: the times may be below what the cluster's links carry)",
              cluster.name, kPasses, worst),
          false);
    std::vector<CostTerms> last = std::move(options.terms);
    options.terms = std::move(next);
    try {
      fit = fit_comm_model(ms, options);
      fit.cluster = cluster.name;
    } catch (const InputError&) {
      options.terms = std::move(last);  // (the terms of the fit kept)
      return finish(
          fmt::format(
              "fitted through the simulator on {}: stopped after {} pass{} (with the cluster's offsets no "
              "positive per-byte cost fits: the times may be below what the cluster's links carry)",
              cluster.name, pass, pass > 1 ? "es" : ""),
          false);
    }
  }
}

}  // namespace ddlsim
