#pragma once
// Messages on the flow network for the Engine: a message from one endpoint to another pays its route latency
// and the CommModel's α, then drains as a flow (split over comm.multipath routes across nodes), capped by the
// CommModel's per-flow bound and efficiency. Flow starts wait in the event queue (EventKind::FlowStart) for
// their latency. Also keeps the isolation promise of fast-path collectives: no message may start while one
// owns the network.
#include <algorithm>
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
  // `unbound` (by link id, from unbound_links): a message on one path whose every link is unbound drains at
  // its standalone rate without a flow (EventKind::DirectDone at its end, then finish_direct()).
  uint32_t send(VertexId src, VertexId dst, double bytes, uint64_t tag, Time now,
                const MessageProtocol& protocol = {}, const std::vector<char>* unbound = nullptr) {
    return send(path(src, dst, protocol), src, dst, bytes, tag, now, protocol, unbound);
  }
  struct Path;
  // The same, given the message's path(src, dst, protocol) (its caller may keep it: see path()).
  uint32_t send(const Path& minimal, VertexId src, VertexId dst, double bytes, uint64_t tag, Time now,
                const MessageProtocol& protocol, const std::vector<char>* unbound);
  // The FlowStart event of request `slot`: its flow starts draining.
  void start_flow(uint32_t slot, Time now);
  // The DirectDone event of request `slot`: returns its tag (it completed as its flow would have).
  uint64_t finish_direct(uint32_t slot, Time now);
  // The links that no set of the given messages running at once can oversubscribe: the standalone rates of
  // every route they take (of its messages of one round together) sum to at most the link's capacity
  // (incast links never qualify). By max-min, a
  // message whose links are all unbound drains at its standalone rate whatever else of them runs, and
  // leaves every other rate as it is.
  struct MessageEnds {
    VertexId src, dst;
    double bytes;
    uint32_t channels;   // as Send::channels
    uint32_t round = 0;  // messages of one round run at once (given round by round)
  };
  std::vector<char> unbound_links(const std::vector<MessageEnds>& messages, const MessageProtocol& protocol);
  // Adaptive routing (Router, the network's `routing: adaptive`): each message (of one path) whose route the
  // given messages' standalone rates oversubscribe on a link between switches moves, in order, to the
  // cheapest detour whose fabric links have room for its rate besides the others' (Router::detour); the
  // loads follow each move.
  void adapt_routes(const std::vector<MessageEnds>& messages, const MessageProtocol& protocol);
  // What every message between two endpoints on one route shares, computed once: the route, its latency,
  // its bottleneck capacity (an incast link's with one sender) and whether both ends are in one node.
  struct Path {
    const std::vector<LinkId>* route;
    Time latency;
    double capacity;
    bool same_node;
  };
  // The path of a message from src to dst under `protocol` (its rail): the minimal route, or the detour
  // adapt_routes gave its pair. Valid while the transport lives; a detour given later changes it in place.
  const Path& path(VertexId src, VertexId dst, const MessageProtocol& protocol) {
    return path(src, dst, rail(protocol));
  }
  // Latency (route + α) and rate (bottleneck x efficiency, at most the per-flow bound) of one message alone
  // on its path.
  void message_timing(VertexId src, VertexId dst, double bytes, Time& latency, double& rate,
                      const MessageProtocol& protocol = {}) {
    message_timing(path(src, dst, protocol), bytes, latency, rate, protocol);
  }
  void message_timing(const Path& path, double bytes, Time& latency, double& rate,
                      const MessageProtocol& protocol);
  // Message parts sent so far (flows and direct messages).
  uint64_t parts_sent() const { return parts_sent_; }
  // True when nothing runs or waits to start on the network.
  bool idle() const { return net_.empty() && pending_flow_starts_ == 0; }
  // A fast-path collective owns the network until `t`: send() before then is an internal error.
  void isolate_until(Time t) { isolated_until_ = t; }
  Time isolated_until() const { return isolated_until_; }

  FlowNetwork& net() { return net_; }
  const FlowNetwork& net() const { return net_; }
  Router& router() { return router_; }
  // The route flag of a message: a collective library's (protocol on) leaves a node on the receiver's rail
  // (Router::kRail).
  static uint32_t rail(const MessageProtocol& protocol) { return protocol.on() ? Router::kRail : 0; }
  const CommModel& comm() const { return comm_; }

 private:
  struct FlowRequest {
    const std::vector<LinkId>* route;
    double bytes, cap;
    uint64_t tag;
    double direct_rate = 0;  // > 0: a direct message at this rate (no flow)
  };
  // A part's rate alone on its route: its cap (none when 0) within the route's capacity.
  struct RouteLoad {
    VertexId src, dst;
    const std::vector<LinkId>* route;
    double rate;     // the most its parts of one round take: their standalone rates summed
    uint32_t paths;  // its message's parts (multipath)
  };
  std::vector<RouteLoad> route_loads(const std::vector<MessageEnds>& messages,
                                     const MessageProtocol& protocol, std::vector<double>& load);
  static double standalone_rate(const FlowRequest& r, double capacity) {
    return r.cap > 0 ? std::min(r.cap, capacity) : capacity;
  }
  // Calls part(request, delay before it starts, its route's capacity, paths) for each path of a message.
  template <class F>
  uint32_t for_each_part(const Path& minimal, VertexId src, VertexId dst, double bytes,
                         const MessageProtocol& protocol, F&& part);
  const Path& path(VertexId src, VertexId dst, uint32_t p = 0);
  Path make_path(VertexId src, VertexId dst, uint32_t p);
  std::unordered_map<uint64_t, Path> paths_;
  const CommModel& comm_;
  EventQueue& events_;
  FlowNetwork net_;
  Router router_;
  std::vector<FlowRequest> requests_;
  std::vector<uint32_t> free_requests_;
  uint32_t pending_flow_starts_ = 0;
  uint64_t parts_sent_ = 0;
  Time isolated_until_;
};

}  // namespace ddlsim
