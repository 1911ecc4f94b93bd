#include "sim/calib/replay.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>

#include "sim/calib/calibration.hpp"
#include "sim/train/collective_workload.hpp"

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
  if (a == "ring" || a == "mpi_allreduce" || a == "nccl" || a == "osu_allreduce") {
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

}  // namespace ddlsim
