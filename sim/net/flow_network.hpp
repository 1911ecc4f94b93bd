#pragma once
// Flow-level (fluid) network: directed links with a capacity; flows drain at their max-min fair share of
// every link on their route, capped by an optional per-flow bound. Latency is not paid here: callers start a
// flow after its route latency (see Engine). resolve() re-solves incrementally. Every flow keeps the link its
// max-min certificate holds on (it is the largest on that saturated link, or it runs at its cap). A region
// (the flows that started, and the flows certified on a link that a flow left, since the last call) is solved
// by progressive filling with the other flows' rates held, then grown by every flow whose certificate no
// longer holds until all do, which makes the result the max-min allocation; after a few rounds of growth the
// region becomes its whole connected component. A new flow alone on its links takes its rate directly.
// Completion times live in an indexed heap, re-keyed in place when a rate changes.
// Processor sharing per link: flows certified on one link at its fair share (an incast) may be held as that
// link's class: one rate for all, a virtual clock V (bytes each member has drained since the class formed)
// and each member's finish tag (V at its start + its bytes) in a per-link heap; only the class's first member
// sits in the completion heap. A flow joining or leaving the link changes the class rate in one step when
// every other certificate provably stays valid (the held flows on the link are certified elsewhere and below
// the new share, the members' other links stay unsaturated, or are saturated links whose own flows can take
// what the step frees there or give what it takes and stay above the new share: those links are re-shared
// next, by a class step of their own or the region); otherwise the flows concerned leave the class and the
// region solve above takes over. Held flows above the new share (certified on another link, or members of
// its class) come down into the class in the same step, largest first, and the links they were certified on
// are re-shared next.
// Bundles: max-min gives every flow on one route with one cap the same rate, so the solver holds them as one
// flow of several messages (a parameter server's chunks in flight between one worker and one server): the
// flow counts its messages on every link it crosses (in shares, loads and classes), drains them on its own
// clock in order of their bytes left, and only its first is in the completion heap. A message joining a
// flow that holds a rate is taken as that flow ending and a flow of one more message starting; one
// completing leaves the rest at the flow's rate, as any flow ending does.
#include <cstdint>
#include <queue>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/core/units.hpp"

namespace ddlsim {

using LinkId = uint32_t;
using FlowId = uint32_t;  // the API's: one message (inside, an index of flows_: a bundle of them, see Flow)

// TCP incast: the goodput of a link that several senders converge on, as a fraction of its capacity, by the
// number of distinct senders (points (senders, goodput), senders increasing, goodput non-increasing in (0,
// 1]; linear between points, flat outside them). Empty: off (RDMA and credit-based fabrics, NVLink, PCIe).
struct IncastCurve {
  std::vector<std::pair<double, double>> points;
  bool on() const { return !points.empty(); }
  double goodput(double senders) const;
};

// What one directed link carried: bytes, the time it was busy (at least one flow on it), and the most flows
// on it at once.
struct LinkUsage {
  LinkId link = 0;
  double bytes = 0;
  double busy_s = 0;
  uint32_t peak_flows = 0;
};

class FlowNetwork {
 public:
  LinkId add_link(Rate capacity, Time latency);
  void reserve_links(size_t n) { links_.reserve(n); }
  size_t link_count() const { return links_.size(); }
  Rate capacity(LinkId l) const { return Rate{links_[l].capacity}; }
  // Makes link l an incast link: its capacity becomes its line capacity times curve.goodput(n) while n
  // distinct senders (a flow's first link names its sender) have flows on it. `curve` must outlive the
  // network.
  void set_incast(LinkId l, const IncastCurve* curve);
  bool incast(LinkId l) const { return links_[l].incast != kNoIncast; }
  // The capacity of incast link l with `senders` senders (its capacity when l is not one).
  double capacity_with(LinkId l, uint32_t senders) const;
  Time latency(LinkId l) const { return links_[l].latency; }
  Time route_latency(std::span<const LinkId> route) const;
  // The smallest capacity on the route (an incast link's with one sender).
  Rate route_capacity(std::span<const LinkId> route) const;

  // Adds a flow of `bytes` over `route`, draining from `now`. rate_cap <= 0 means unbounded. `tag` is
  // returned by pop_completion. The new rates take effect at the next resolve(now).
  FlowId add_flow(std::span<const LinkId> route, double bytes, double rate_cap, uint64_t tag, Time now);
  // Recomputes the rates of every flow connected to a flow added or removed since the last call.
  void resolve(Time now);

  bool empty() const { return active_ == 0; }
  size_t active_flows() const { return active_; }
  // Earliest completion among active flows (Time::max() when none). Valid after resolve().
  Time next_completion();
  // Removes the flow that completes at next_completion() and returns its tag. Call resolve(now) after popping
  // every flow that completes at that instant.
  uint64_t pop_completion();

  double rate(FlowId f) const { return rate_of(messages_[f].flow); }
  uint64_t tag(FlowId f) const { return messages_[f].user; }
  // Bytes flow f has left to drain at `now` (at its current rate since its last update).
  double remaining(FlowId f, Time now) const;
  std::span<const LinkId> route(FlowId f) const { return flows_[messages_[f].flow].route; }
  // Flow ids currently active (for tests and property checks).
  std::vector<FlowId> active_flow_ids() const;

  // A message that provably drains at its standalone rate whatever else runs (every link it crosses can carry
  // the standalone rates of everything that may cross it at once) needs no flow: its caller times it, and
  // these count it in the links' usage from its start to its end, as a flow would be.
  void open_direct(std::span<const LinkId> route, double bytes, Time now);
  void close_direct(std::span<const LinkId> route, Time now);

  // Per-link usage: bytes of the flows routed over a link (counted when they start), the time it had at
  // least one flow (counted when its last flow leaves), the most flows it had at once. One entry per link, in
  // id order. Given `now`, a link that is busy counts its busy time up to `now` (by default, until its last
  // flow leaves).
  std::vector<LinkUsage> link_usage(Time now = Time()) const;

  // Statistics for benchmarks.
  uint64_t flows_started() const { return flows_started_; }
  uint64_t region_solves() const { return solves_; }
  uint64_t region_flows_solved() const { return solved_flows_; }  // the solves' flows, summed
  uint64_t region_growths() const { return growths_; }            // rounds that grew a region
  uint64_t component_fallbacks() const { return fallbacks_; }     // regions that became whole components
  uint64_t class_updates() const { return class_updates_; }       // joins and leaves done by a class step
  uint64_t class_refills() const { return refill_marks_; }        // saturated links a class step handed on
  uint64_t class_moves() const { return moves_; }  // held flows a class step brought down into its class
  uint64_t messages_bundled() const { return bundled_; }     // messages that joined a flow on their route
  uint64_t links_unaffected() const { return unaffected_; }  // links a flow left that no flow depends on

 private:
  static constexpr uint32_t kNotInHeap = UINT32_MAX;
  static constexpr LinkId kCapped = UINT32_MAX - 1;
  static constexpr LinkId kUncertified = UINT32_MAX;
  static constexpr LinkId kNoClass = UINT32_MAX;
  static constexpr FlowId kNoFlow = UINT32_MAX;
  static constexpr uint32_t kNoIncast = UINT32_MAX;
  static constexpr size_t kScanFlows = 8;  // add_flow looks among this many flows on a link, else by key
  using MessageId = uint32_t;
  // An incast link's state, kept apart from Link so that the solver's links stay as small as they were.
  struct Incast {
    const IncastCurve* curve;
    double line;                                       // the link's capacity without the curve
    std::vector<std::pair<LinkId, uint32_t>> senders;  // (a sender's first link, its flows here)
    bool recap = false;                                // the sender count changed since the last resolve
  };
  struct ClassLink {
    LinkId link;
    uint32_t count;  // members crossing it
    uint32_t back;   // index in links_[link].in_classes
  };
  struct Link {
    // First, in 64 bytes together: what a class step reads and writes on each link its members cross.
    double capacity = 0;
    std::vector<FlowId> flows;  // active flows on this link
    double est = 0;             // the flows' rates summed as they change (drifts by rounding; 0 when empty)
    double delta = 0;           // class step scratch: load change
    uint32_t fixing = 0;        // flows fixed on this link in the current round (class step: its flows here)
    uint32_t crossing = 0;      // class step scratch: members crossing this link
    uint32_t stamp = 0;
    uint32_t incast = kNoIncast;  // incast links: index in incasts_ (the rest carry none of that state)
    Time latency;
    uint32_t nw = 0;  // messages of its flows (their weights summed)
    uint32_t mw = 0;  // messages of its class's members
    // Its flows that are certified on it or not at all (bottleneck this link or kUncertified): without them
    // and without a class, a flow leaving it changes no certificate (see resolve and grow_region).
    uint32_t certs = 0;
    uint32_t capped = 0;  // its flows at their cap (kCapped)
    bool dirty = false;
    // solver scratch
    double residual = 0;  // capacity left to the region's flows
    double share = 0;     // residual / unfixed
    uint32_t unfixed = 0;
    double demand = 0;     // sum over the region's flows of an upper bound on their rates
    uint32_t checked = 0;  // check_ when load and top below are current
    double load = 0;       // sum of the flows' rates (trial rates for region flows)
    double top = 0;        // the largest of those rates
    uint32_t fast = 0;     // == stamp_: a class step settled this link in this resolve
    // == stamp_: a class step elsewhere moved this saturated link's load, and the flows certified here have
    // not been re-shared since (they take what it freed, or give what it took)
    uint32_t refill = 0;
    uint32_t refilled = 0;  // == stamp_: `refills` counts this resolve's marks (at most kMaxRefills)
    uint32_t refills = 0;
    // processor-sharing class (flows certified here at one rate)
    std::vector<FlowId> members;  // heap by (vtag, order)
    double cls_rate = 0;
    double cls_cap = 0;  // smallest cap of a member since the class formed
    double vt = 0;       // virtual time: bytes per member drained from formation to vt_at
    Time vt_at;
    FlowId head = kNoFlow;  // the member in the completion heap
    // The class's members counted per other link they cross (a class step's load changes there without
    // walking every member's route), and on every link, the classes whose members cross it.
    std::vector<ClassLink> cls_links;
    std::vector<std::pair<LinkId, uint32_t>> in_classes;  // (class link, index in its cls_links)
    uint32_t scanned = 0;  // == check_: grow_region took its held flows above scan_above in this round
    double scan_above = 0;
    double held_max = 0;  // the largest rate of a held flow on it (when scanned)
  };
  struct LinkStats {  // kept apart from Link (the solver never reads them), sized at the first flow
    double bytes = 0;
    int64_t busy_ps = 0;
    int64_t busy_since = 0;  // when its current flows' first one started
    uint32_t on = 0;         // flows and direct messages on it now
    uint32_t peak = 0;
  };
  void count_on(LinkId l, double bytes, Time now);
  void count_off(LinkId l, Time now);
  // A flow of the solver is a bundle: every active message on one route with one cap (max-min gives them one
  // rate). Its messages (messages_, whose ids are the API's flow ids) drain on its clock: each is due at a
  // point of it, and has its due less the head's left, plus what the head has left (`remaining`, or `vtag`
  // less the class's clock in a class).
  struct Flow {  // (the fields the solver reads first, in the order they had before bundles)
    std::vector<LinkId> route;
    std::vector<uint32_t> slot;  // index of this flow in links_[route[i]].flows
    double remaining = 0;        // the head's bytes left at `updated`
    double rate = 0;             // per message
    double trial = 0;            // solver scratch: the rate the region solve gives this flow
    double cap = 0;
    Time updated;
    Time finish = Time::max();  // the head's
    uint64_t user = 0;          // the head's caller's tag
    uint64_t order = 0;         // the head's creation order: ties in completion time break by it
    uint32_t heap_pos = kNotInHeap;
    LinkId cls = kNoClass;  // the link whose class holds it (then rate, remaining, updated are unused)
    double vtag = 0;        // member: the class's virtual time at which its head completes
    uint32_t cls_pos = 0;   // member: index in links_[cls].members
    uint32_t join = 0;      // == stamp_: new since the last resolve (seen once)
    bool joining = false;   // one of the new flows a class step is placing
    uint32_t stamp = 0;     // == stamp_: in the region being solved
    uint32_t checked = 0;   // == check_: certificate already looked at in this round
    LinkId bottleneck = kUncertified;  // the link its max-min certificate holds on, or kCapped
    bool active = false;
    bool fixed = false;
    bool pending = false;        // added (or grown) since the last resolve: in new_flows_, holding no rate
    uint32_t w = 0;              // messages (the flow's weight on each link it crosses)
    MessageId head = 0;          // mem.front() (read where mem is not)
    uint64_t key = 0;            // its bundles_ key (0: not there)
    std::vector<MessageId> mem;  // its messages: a heap by (due, creation order), the head first
  };
  struct Message {
    FlowId flow = 0;
    uint32_t pos = 0;  // index in flows_[flow].mem
    double due = 0;    // on the flow's clock: where it completes
    uint64_t user = 0;
    uint64_t order = 0;
    bool active = false;
  };
  bool message_before(MessageId a, MessageId b) const;
  void message_sift(Flow& f, size_t i);
  void grow_flow(FlowId id, MessageId m, double bytes, Time now);
  double head_left(const Flow& f, Time now) const;
  void set_bottleneck(FlowId f, LinkId b);
  void count_certs(const Flow& f, int d);
  bool alone(FlowId f) const;
  bool can_give(LinkId m, double x, double share) const;
  double alone_rate(FlowId f);
  void add_to_region(FlowId f);
  bool solve_region();
  bool grow_region();
  void grow_to_components();
  double current_rate(FlowId f) const;
  double rate_of(FlowId f) const {
    return flows_[f].cls == kNoClass ? flows_[f].rate : links_[flows_[f].cls].cls_rate;
  }
  LinkId class_target(FlowId f) const;
  bool class_step(LinkId l, std::span<const FlowId> joiners, Time now);
  void advance_class(Link& l, Time now);
  void place_head(LinkId l);
  void leave_class(FlowId f, Time now);
  bool before_in_class(FlowId a, FlowId b) const;
  void class_sift(Link& l, size_t i);
  void class_insert(LinkId l, FlowId f);
  void class_remove(LinkId l, FlowId f);
  void count_member(LinkId l, FlowId f, int64_t dw);
  void heap_erase(FlowId id);
  LinkId certify(FlowId f);
  void refresh_link(LinkId l);
  void set_rate(FlowId f, double rate, Time now);
  bool earlier(FlowId a, FlowId b) const;
  void heap_place(size_t i, FlowId id);
  void heap_sift(size_t i);
  void heap_update(FlowId id);
  void count_sender(LinkId l, LinkId sender, bool in);

  std::vector<Link> links_;
  std::vector<LinkStats> stats_;
  std::vector<Flow> flows_;
  std::vector<FlowId> free_flows_;
  std::vector<Message> messages_;
  std::vector<MessageId> free_messages_;
  // route and cap -> the flow with them (kept when it ends until the ended ones outnumber the flows), for
  // flows that started where every link of their route carried more than kScanFlows flows
  std::unordered_map<uint64_t, FlowId> bundles_;
  std::vector<FlowId> new_flows_;
  std::vector<LinkId> dirty_links_;
  std::vector<Incast> incasts_;
  std::vector<LinkId> recap_links_;  // incast links whose sender count changed
  // solver scratch
  std::vector<FlowId> region_flows_;
  std::vector<LinkId> region_links_;
  std::vector<FlowId> grown_;
  std::vector<LinkId> candidates_;  // links that may fix flows
  std::vector<FlowId> capped_;      // region flows with a rate cap, by cap
  std::vector<FlowId> todo_;
  std::vector<LinkId> touched_links_;
  std::vector<FlowId> heap_;                      // completion order (see earlier())
  std::vector<std::pair<LinkId, FlowId>> joins_;  // class step scratch
  std::vector<FlowId> join_group_;
  std::vector<LinkId> delta_links_;
  std::vector<LinkId> refills_;
  std::vector<FlowId> cands_;
  std::vector<std::pair<double, FlowId>> movers_;  // class step scratch: held flows by rate
  Time now_;
  uint32_t stamp_ = 0;
  uint32_t check_ = 0;
  size_t active_ = 0;
  uint64_t next_order_ = 0;
  uint64_t flows_started_ = 0;
  uint64_t solves_ = 0;
  uint64_t solved_flows_ = 0;
  uint64_t growths_ = 0;
  uint64_t fallbacks_ = 0;
  uint64_t class_updates_ = 0;
  uint64_t refill_marks_ = 0;
  uint64_t moves_ = 0;
  uint64_t bundled_ = 0;
  uint64_t unaffected_ = 0;
};

}  // namespace ddlsim
