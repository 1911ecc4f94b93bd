#pragma once
// Messages on the flow network for the Engine: a message from one endpoint to another pays its route latency
// and the CommModel's α, then drains as a flow (split over comm.multipath routes across nodes), capped by the
// CommModel's per-flow bound and efficiency. Flow starts wait in the event queue (EventKind::FlowStart) for
// their latency. Also keeps the isolation promise of fast-path collectives: no message may start while one
// owns the network.
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "sim/net/comm_model.hpp"
#include "sim/net/flow_network.hpp"
#include "sim/net/topology.hpp"
#include "sim/train/collective.hpp"
#include "sim/train/event_core.hpp"

namespace ddlsim {

class Transport {
 public:
  Transport(const Topology& topo, const CommModel& comm, EventQueue& events);
  // Sends `bytes` from endpoint src to dst at `now`; the flow completions carry `tag`. Returns the number of
  // flows (parts) it started.
  // A collective library's protocol (on) replaces the route latency and the comm model's α by its per-step
  // latency and puts bytes x its wire factor on the network, its payload rate bounded by its cap.
  uint32_t send(VertexId src, VertexId dst, double bytes, uint64_t tag, Time now,
                const MessageProtocol& protocol = {});
  // The FlowStart event of request `slot`: its flow starts draining.
  void start_flow(uint32_t slot, Time now) {
    const FlowRequest& r = requests_[slot];
    net_.add_flow(*r.route, r.bytes, r.cap, r.tag, now);
    free_requests_.push_back(slot);
    --pending_flow_starts_;
  }
  // Latency (route + α) and rate (bottleneck x efficiency, at most the per-flow bound) of one message alone
  // on the minimal route.
  void message_timing(VertexId src, VertexId dst, double bytes, Time& latency, double& rate,
                      const MessageProtocol& protocol = {});
  // True when nothing runs or waits to start on the network.
  bool idle() const { return net_.empty() && pending_flow_starts_ == 0; }
  // A fast-path collective owns the network until `t`: send() before then is an internal error.
  void isolate_until(Time t) { isolated_until_ = t; }
  Time isolated_until() const { return isolated_until_; }

  FlowNetwork& net() { return net_; }
  const FlowNetwork& net() const { return net_; }
  Router& router() { return router_; }
  const CommModel& comm() const { return comm_; }

 private:
  struct FlowRequest {
    const std::vector<LinkId>* route;
    double bytes, cap;
    uint64_t tag;
  };
  // What every message between two endpoints on one route shares, computed once: the route, its latency,
  // its bottleneck capacity (an incast link's with one sender) and whether both ends are in one node.
  struct Path {
    const std::vector<LinkId>* route;
    Time latency;
    double capacity;
    bool same_node;
  };
  const Path& path(VertexId src, VertexId dst, uint32_t p = 0);
  std::unordered_map<uint64_t, Path> paths_;
  const CommModel& comm_;
  EventQueue& events_;
  FlowNetwork net_;
  Router router_;
  std::vector<FlowRequest> requests_;
  std::vector<uint32_t> free_requests_;
  uint32_t pending_flow_starts_ = 0;
  Time isolated_until_;
};

}  // namespace ddlsim
