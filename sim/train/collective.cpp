#include "sim/train/collective.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>

namespace ddlsim {

const char* algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::Ring:
      return "ring";
    case Algorithm::HalvingDoubling:
      return "rhd";
    case Algorithm::RecursiveDoubling:
      return "recursive-doubling";
    case Algorithm::Mpich:
      return "mpich";
    case Algorithm::OpenMpi:
      return "openmpi";
    case Algorithm::Tree:
      return "tree";
    case Algorithm::DoubleTree:
      return "double-tree";
    case Algorithm::Direct:
      return "direct";
    case Algorithm::Hierarchical:
      return "hierarchical";
    case Algorithm::ReduceScatter:
      return "reduce-scatter";
    case Algorithm::AllGather:
      return "all-gather";
    case Algorithm::Broadcast:
      return "broadcast";
    case Algorithm::ParameterServer:
      return "ps";
    case Algorithm::Nvls:
      return "nvls";
    case Algorithm::NvlsTree:
      return "nvls-tree";
    case Algorithm::CollNet:
      return "collnet";
    case Algorithm::Auto:
      return "auto";
  }
  return "?";
}

uint64_t CollectivePlan::message_count() const {
  uint64_t n = 0;
  std::vector<Send> out;
  for (uint32_t s = 0; s < rounds_; ++s)
    for (uint32_t r = 0; r < members_; ++r) {
      out.clear();
      sends(r, s, out);
      n += out.size();
    }
  return n;
}

namespace {

// Ring over all members: `reduce_rounds` rounds of reduce-scatter then `gather_rounds` of all-gather, n/p
// each.
class RingPlan : public CollectivePlan {
 public:
  RingPlan(uint32_t p, double n, bool scatter, bool gather)
      : CollectivePlan(p, (scatter ? p - 1 : 0) + (gather ? p - 1 : 0), n), scatter_(scatter) {}
  void sends(uint32_t r, uint32_t, std::vector<Send>& out) const override {
    out.push_back({(r + 1) % members_, bytes_ / members_});
  }
  uint32_t receives(uint32_t, uint32_t) const override { return 1; }
  double reduce_bytes(uint32_t, uint32_t s) const override {
    return scatter_ && s < members_ - 1 ? bytes_ / members_ : 0;
  }
  uint32_t round_class(uint32_t s) const override { return scatter_ && s < members_ - 1 ? 0 : 1; }

 private:
  bool scatter_;
};

// One channel's chunk to `peer`: merged into the message to that peer among out[first..] (one message per
// peer and round, carrying its channels together), else a message of its own.
void add_channel(std::vector<Send>& out, size_t first, uint32_t peer, double bytes, bool streamed = false) {
  auto it = std::find_if(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
                         [&](const Send& x) { return x.peer == peer; });
  if (it == out.end()) {
    out.push_back({peer, bytes, 1, streamed});
  } else {
    it->bytes += bytes;
    ++it->channels;
  }
}

// A ring allreduce as `channels` rings in parallel over the same members (node-major: member r is local rank
// r % G of node r / G), each carrying n / channels. Channel c visits every node's ranks in its own order
// orders[c] (a permutation of 0..G-1) and goes on to the next node (the first from the last) at that node's
// orders[c][0]. The default order of channel c starts at local rank o_c = c·G / channels and counts up, so
// with one channel per NIC every NIC sends and receives one inter-node stream; a topology may give the
// orders the collective library builds over its GPU links instead (NodeInterior::rings), whose channels
// then use different links inside a node too. On one node the orders close on themselves. Channels to the
// same peer are merged into one message, and a member reduces channels chunks of n / (p·channels).
class ChannelRingPlan : public CollectivePlan {
 public:
  ChannelRingPlan(uint32_t p, uint32_t per_node, std::vector<std::vector<uint32_t>> orders, double n)
      : CollectivePlan(p, 2 * (p - 1), n),
        g_(per_node),
        c_(static_cast<uint32_t>(orders.size())),
        orders_(std::move(orders)),
        next_(static_cast<size_t>(c_) * g_),
        senders_(g_, 0) {
    for (uint32_t c = 0; c < c_; ++c)
      for (uint32_t i = 0; i < g_; ++i) next_[static_cast<size_t>(c) * g_ + orders_[c][i]] = i + 1;
    // The distinct members a local rank hears from: per channel its predecessor in the order, or the
    // previous node's last (across nodes a member of its own: never one of the node's).
    const bool one_node = members_ == g_;
    for (uint32_t l = 0; l < g_; ++l) {
      std::vector<uint32_t> from;
      for (uint32_t c = 0; c < c_; ++c) {
        const std::vector<uint32_t>& o = orders_[c];
        uint32_t at = next_[static_cast<size_t>(c) * g_ + l] - 1;
        uint32_t pred = at > 0 ? o[at - 1] : one_node ? o[g_ - 1] : g_ + o[g_ - 1];
        if (std::find(from.begin(), from.end(), pred) == from.end()) from.push_back(pred);
      }
      senders_[l] = static_cast<uint32_t>(from.size());
    }
  }
  // The default orders: channel c counts up from local rank c·G / channels.
  static std::vector<std::vector<uint32_t>> offset_orders(uint32_t per_node, uint32_t channels) {
    std::vector<std::vector<uint32_t>> orders(channels, std::vector<uint32_t>(per_node));
    for (uint32_t c = 0; c < channels; ++c)
      for (uint32_t i = 0; i < per_node; ++i) orders[c][i] = (c * per_node / channels + i) % per_node;
    return orders;
  }
  void sends(uint32_t r, uint32_t, std::vector<Send>& out) const override {
    const size_t first = out.size();
    for (uint32_t c = 0; c < c_; ++c) add_channel(out, first, successor(r, c), bytes_ / members_ / c_);
  }
  uint32_t receives(uint32_t r, uint32_t) const override { return senders_[r % g_]; }
  double reduce_bytes(uint32_t, uint32_t s) const override {
    return s < members_ - 1 ? bytes_ / members_ : 0;
  }
  double reduce_operand(uint32_t, uint32_t) const override { return bytes_ / members_ / c_; }
  uint32_t round_class(uint32_t s) const override { return s < members_ - 1 ? 0 : 1; }

 private:
  uint32_t successor(uint32_t r, uint32_t c) const {
    const uint32_t node = r / g_, at = next_[static_cast<size_t>(c) * g_ + r % g_];  // position + 1
    if (at < g_) return node * g_ + orders_[c][at];
    return (node + 1) % (members_ / g_) * g_ + orders_[c][0];
  }
  uint32_t g_, c_;
  std::vector<std::vector<uint32_t>> orders_;
  std::vector<uint32_t> next_;     // per channel and local rank: its position in the order + 1
  std::vector<uint32_t> senders_;  // per local rank: the distinct members it receives from in a round
};

// A plan over the largest power of two q <= p ranks, `per_level` rounds per level of log2 q, and for the
// extra = p - q ranks a first round (handing their buffer in) and a last one (getting the result back).
class PowerOfTwoPlan : public CollectivePlan {
 protected:
  PowerOfTwoPlan(uint32_t p, double n, uint32_t per_level)
      : CollectivePlan(p, 0, n), q_(std::bit_floor(p)), log_(std::countr_zero(q_)), extra_(p - q_) {
    rounds_ = per_level * log_ + (extra_ > 0 ? 2 : 0);
  }
  uint32_t pre() const { return extra_ > 0 ? 1 : 0; }  // rounds before the levels
  uint32_t q_, log_, extra_;
};

// Rabenseifner. Non-powers of two: the `extra` ranks above the largest power of two q first hand their buffer
// to rank r-q (which reduces it) and get the result back at the end.
class HalvingDoublingPlan : public PowerOfTwoPlan {
 public:
  HalvingDoublingPlan(uint32_t p, double n) : PowerOfTwoPlan(p, n, 2) {}
  void sends(uint32_t r, uint32_t s, std::vector<Send>& out) const override {
    const uint32_t pre = this->pre();
    if (pre && s == 0) {
      if (r >= q_) out.push_back({r - q_, bytes_});
      return;
    }
    if (pre && s == rounds_ - 1) {
      if (r < extra_) out.push_back({r + q_, bytes_});
      return;
    }
    if (r >= q_) return;
    uint32_t k = s - pre;
    out.push_back({partner(r, k), chunk(k)});
  }
  uint32_t receives(uint32_t r, uint32_t s) const override {
    const uint32_t pre = this->pre();
    if (pre && s == 0) return r < extra_ ? 1 : 0;
    if (pre && s == rounds_ - 1) return r >= q_ ? 1 : 0;
    return r < q_ ? 1 : 0;
  }
  double reduce_bytes(uint32_t r, uint32_t s) const override {
    const uint32_t pre = this->pre();
    if (pre && s == 0) return r < extra_ ? bytes_ : 0;
    if (r >= q_ || (pre && s == rounds_ - 1)) return 0;
    uint32_t k = s - pre;
    return k < log_ ? chunk(k) : 0;
  }

 private:
  // Halving step k exchanges with the rank q/2^(k+1) away and n/2^(k+1) bytes; doubling mirrors it.
  uint32_t partner(uint32_t r, uint32_t k) const {
    uint32_t level = k < log_ ? k : 2 * log_ - 1 - k;
    return r ^ (q_ >> (level + 1));
  }
  double chunk(uint32_t k) const {
    uint32_t level = k < log_ ? k : 2 * log_ - 1 - k;
    return bytes_ / static_cast<double>(2u << level);
  }
};

// Recursive doubling as MPICH runs it (Thakur, Rabenseifner and Gropp, "Optimization of Collective
// Communication Operations in MPICH", IJHPCA 2005; MPICH's allreduce): with q the largest power of two <= p
// and e = p - q, the even ranks below 2e first hand their whole buffer to the next (odd) rank, which sums it;
// then the q ranks left (odd r < 2e as r/2, r >= 2e as r - e) exchange the whole buffer with the partner
// 2^k away in round k and sum it, log2 q rounds; finally the odd ranks below 2e hand the result back.
class RecursiveDoublingPlan : public PowerOfTwoPlan {
 public:
  RecursiveDoublingPlan(uint32_t p, double n) : PowerOfTwoPlan(p, n, 1) {}
  void sends(uint32_t r, uint32_t s, std::vector<Send>& out) const override {
    const uint32_t pre = this->pre();
    const bool paired = r < 2 * extra_;
    if (pre && s == 0) {
      if (paired && r % 2 == 0) out.push_back({r + 1, bytes_});
      return;
    }
    if (pre && s == rounds_ - 1) {
      if (paired && r % 2 == 1) out.push_back({r - 1, bytes_});
      return;
    }
    if (paired && r % 2 == 0) return;  // sits the doubling rounds out
    uint32_t to = (paired ? r / 2 : r - extra_) ^ (1u << (s - pre));
    out.push_back({to < extra_ ? 2 * to + 1 : to + extra_, bytes_});
  }
  uint32_t receives(uint32_t r, uint32_t s) const override {
    const uint32_t pre = this->pre();
    const bool paired = r < 2 * extra_;
    if (pre && s == 0) return paired && r % 2 == 1 ? 1 : 0;
    if (pre && s == rounds_ - 1) return paired && r % 2 == 0 ? 1 : 0;
    return paired && r % 2 == 0 ? 0 : 1;
  }
  double reduce_bytes(uint32_t r, uint32_t s) const override {
    const uint32_t pre = this->pre();
    if (pre && s == rounds_ - 1) return 0;
    return receives(r, s) > 0 ? bytes_ : 0;
  }
};

// Binary tree rooted at member 0 (children 2r+1, 2r+2). Reduce: a member sends to its parent in the round
// equal to its subtree height; broadcast: the member at depth d sends to its children in round H + d.
class TreePlan : public CollectivePlan {
 public:
  TreePlan(uint32_t p, double n, bool reduce, bool broadcast)
      : CollectivePlan(p, 0, n), reduce_(reduce), height_(p), depth_(p) {
    for (uint32_t r = p; r-- > 0;) {
      uint32_t h = 0;
      for (uint32_t c : {2 * r + 1, 2 * r + 2})
        if (c < p) h = std::max(h, height_[c] + 1);
      height_[r] = h;
    }
    for (uint32_t r = 0; r < p; ++r) depth_[r] = r == 0 ? 0 : depth_[(r - 1) / 2] + 1;
    tree_height_ = height_[0];
    rounds_ = (reduce ? tree_height_ : 0) + (broadcast ? tree_height_ : 0);
  }
  void sends(uint32_t r, uint32_t s, std::vector<Send>& out) const override {
    if (reduce_ && s < tree_height_) {
      if (r != 0 && height_[r] == s) out.push_back({(r - 1) / 2, bytes_});
      return;
    }
    uint32_t d = s - (reduce_ ? tree_height_ : 0);
    if (depth_[r] != d) return;
    for (uint32_t c : {2 * r + 1, 2 * r + 2})
      if (c < members_) out.push_back({c, bytes_});
  }
  uint32_t receives(uint32_t r, uint32_t s) const override {
    if (reduce_ && s < tree_height_) {
      uint32_t n = 0;
      for (uint32_t c : {2 * r + 1, 2 * r + 2})
        if (c < members_ && height_[c] == s) ++n;
      return n;
    }
    uint32_t d = s - (reduce_ ? tree_height_ : 0);
    return r != 0 && depth_[r] == d + 1 ? 1 : 0;
  }
  double reduce_bytes(uint32_t r, uint32_t s) const override {
    return reduce_ && s < tree_height_ ? receives(r, s) * bytes_ : 0;
  }

 private:
  bool reduce_;
  std::vector<uint32_t> height_, depth_;
  uint32_t tree_height_ = 0;
};

// NCCL's double binary tree (Sanders, Speck, Träff 2009; NCCL 2.4+). Tree 1 over positions 0..p-1 is
// in-order: position 0 is the root and has one child, the largest power of two below p; a position with
// lowest set bit b has its parent at +b when the bit above b is clear (at -b when that is out of range) and
// at -b when it is set, so the edges at level k span 2^k positions and most of them join neighbours. Tree 2
// is tree 1 mirrored (rank p-1-q at position q) for even p, shifted by one for odd p: every rank that is a
// leaf in one tree is inner in the other, so each rank sends about 2n in all, as in a ring.
class DoubleBinaryTree {
 public:
  explicit DoubleBinaryTree(uint32_t p) : p_(p), parent_(p, 0), height_(p, 0), depth_(p, 0) {
    if (p < 2) return;
    for (uint32_t q = 1; q < p; ++q) {
      uint32_t b = q & (~q + 1);
      uint32_t up = (q & (b << 1)) ? q - b : q + b;
      parent_[q] = up < p ? up : q - b;
    }
    // Parents are at a larger lowest set bit, except 0: heights from the leaves up in order of that bit.
    std::vector<uint32_t> order(p - 1);
    for (uint32_t q = 1; q < p; ++q) order[q - 1] = q;
    std::stable_sort(order.begin(), order.end(),
                     [](uint32_t a, uint32_t b) { return (a & (~a + 1)) < (b & (~b + 1)); });
    for (uint32_t q : order) height_[parent_[q]] = std::max(height_[parent_[q]], height_[q] + 1);
    for (auto it = order.rbegin(); it != order.rend(); ++it) depth_[*it] = depth_[parent_[*it]] + 1;
    max_depth_ = *std::max_element(depth_.begin(), depth_.end());
  }
  uint32_t parent(uint32_t q) const { return parent_[q]; }  // q > 0
  uint32_t height(uint32_t q) const { return height_[q]; }
  uint32_t depth(uint32_t q) const { return depth_[q]; }
  uint32_t max_depth() const { return max_depth_; }
  template <class F>
  void for_children(uint32_t q, F&& f) const {
    // Children of q: q - b/2 and q + b/2 for its lowest set bit b (the root's: the largest power of two
    // below p), each only if its parent is q (a right child out of range hangs lower).
    if (q == 0) {
      f(std::bit_floor(p_ - 1));
      return;
    }
    for (uint32_t b = (q & (~q + 1)) >> 1; b > 0; b >>= 1) {
      for (uint32_t c : {q - b, q + b})
        if (c < p_ && parent_[c] == q) f(c);
    }
  }
  // Rank r's position in tree t (0 or 1), and the rank at position q of tree t.
  uint32_t position(int t, uint32_t r) const {
    if (t == 0) return r;
    return p_ % 2 == 0 ? p_ - 1 - r : (r + 1) % p_;
  }
  uint32_t rank(int t, uint32_t q) const {
    if (t == 0) return q;
    return p_ % 2 == 0 ? p_ - 1 - q : (q + p_ - 1) % p_;
  }

 private:
  uint32_t p_;
  std::vector<uint32_t> parent_, height_, depth_;
  uint32_t max_depth_ = 0;
};

// NCCL's double binary tree between N nodes as a pipeline phase of a larger plan: chunk c enters it in round
// c + base, each node's member of a group (local rank l of every node, or the head of a slice) carrying half
// the chunk's part up and down each tree. A node at height k in a tree sends its half, summed with its
// children's, up in c + base + k; one at depth d has the half's sum in c + base + H + d (H the root's height)
// and sends it on down then. Tree messages behind chunk 0 stream.
class TreePhase {
 public:
  TreePhase(uint32_t nodes, uint32_t base) : tree_(nodes), base_(base) {}
  // The rounds from a chunk's entry to the last node's having both sums, plus one.
  uint32_t span() const { return tree_.height(0) + tree_.max_depth() + 1; }
  // When `node` has tree tr's half of a chunk entered at round 0.
  uint32_t summed(int tr, uint32_t node) const {
    return base_ + tree_.height(0) + tree_.depth(tree_.position(tr, node));
  }
  // Member `local` of `node` (peers: the same local index on other nodes, g per node) in round t, of chunks
  // 0..k-1 whose halves are half(c).
  template <class Half>
  void sends(uint32_t node, uint32_t local, uint32_t g, uint32_t t, uint32_t k, Half&& half,
             std::vector<Send>& out) const {
    for (int tr = 0; tr < 2; ++tr) {
      const uint32_t q = tree_.position(tr, node);
      if (uint32_t c; q != 0 && at(t, base_ + tree_.height(q), k, c))
        out.push_back({tree_.rank(tr, tree_.parent(q)) * g + local, half(c), 1, c > 0});
      if (uint32_t c; at(t, summed(tr, node), k, c))
        tree_.for_children(q, [&](uint32_t ch) {
          out.push_back({tree_.rank(tr, ch) * g + local, half(c), 1, c > 0});
        });
    }
  }
  uint32_t receives(uint32_t node, uint32_t t, uint32_t k) const {
    uint32_t n = 0, c;
    for (int tr = 0; tr < 2; ++tr) {
      const uint32_t q = tree_.position(tr, node);
      tree_.for_children(q, [&](uint32_t ch) { n += at(t, base_ + tree_.height(ch), k, c) ? 1 : 0; });
      if (q != 0 && at(t, summed(tr, node) - 1, k, c)) ++n;
    }
    return n;
  }
  // The children's halves `node` sums into its own in round t.
  template <class Half>
  double reduced(uint32_t node, uint32_t t, uint32_t k, Half&& half) const {
    double b = 0;
    uint32_t c;
    for (int tr = 0; tr < 2; ++tr)
      tree_.for_children(tree_.position(tr, node), [&](uint32_t ch) {
        if (at(t, base_ + tree_.height(ch), k, c)) b += half(c);
      });
    return b;
  }

 private:
  // The chunk (of k) at relative round `rel` in round t, if any.
  static bool at(uint32_t t, uint32_t rel, uint32_t k, uint32_t& c) {
    if (t < rel || t - rel >= k) return false;
    c = t - rel;
    return true;
  }
  DoubleBinaryTree tree_;
  uint32_t base_;
};

// Each tree carries half the buffer in C chunks, pipelined: a rank at height h sends chunk k to its parent in
// round k + h (after its children's chunk k arrived and was summed), the root turns chunk k around, and a
// rank at depth d sends chunk k to its children in round k + H + d (H the root's height). Both trees run in
// the same rounds.
class DoubleTreePlan : public CollectivePlan {
 public:
  DoubleTreePlan(uint32_t p, double n) : CollectivePlan(p, 0, n), tree_(p) {
    if (p < 2) return;
    // Chunk size as NCCL tunes it for trees: from 512 KiB, halve while there are fewer than 8·depth chunks
    // (down to 128 KiB), fewer than 4·depth (down to 64 KiB), fewer than depth (down to 32 KiB).
    double half = n / 2, c = kNcclSimpleStep;
    for (auto [per_level, floor] : {std::pair{8.0, 131072.0}, {4.0, 65536.0}, {1.0, 32768.0}})
      while (half / c < per_level * tree_.max_depth() && c > floor) c /= 2;
    chunks_ = std::max<uint32_t>(1, static_cast<uint32_t>(std::ceil(half / c)));
    chunk_ = half / chunks_;
    // The last chunk leaves the deepest inner rank in round C-1 + H + (D-1).
    rounds_ = chunks_ + tree_.height(0) + tree_.max_depth() - 1;
  }
  // Chunks behind the first stream on the path it opened (NCCL keeps several of a channel's steps in
  // flight), so only chunk 0 pays each hop's latency, as in NCCL's model of the tree.
  void sends(uint32_t r, uint32_t s, std::vector<Send>& out) const override {
    for (int t = 0; t < 2; ++t) {
      uint32_t q = tree_.position(t, r);
      if (uint32_t first = tree_.height(q); q != 0 && in_pipe(s, first))
        out.push_back({tree_.rank(t, tree_.parent(q)), chunk_, 1, s > first});
      if (uint32_t first = tree_.height(0) + tree_.depth(q); in_pipe(s, first))
        tree_.for_children(q, [&](uint32_t c) { out.push_back({tree_.rank(t, c), chunk_, 1, s > first}); });
    }
  }
  uint32_t receives(uint32_t r, uint32_t s) const override {
    uint32_t n = 0;
    for (int t = 0; t < 2; ++t) {
      uint32_t q = tree_.position(t, r);
      n += children_in_pipe(q, s);
      if (q != 0 && in_pipe(s, tree_.height(0) + tree_.depth(q) - 1)) ++n;
    }
    return n;
  }
  double reduce_bytes(uint32_t r, uint32_t s) const override {
    double b = 0;
    for (int t = 0; t < 2; ++t) b += children_in_pipe(tree_.position(t, r), s) * chunk_;
    return b;
  }
  double reduce_operand(uint32_t, uint32_t) const override { return chunk_; }

 private:
  bool in_pipe(uint32_t s, uint32_t first) const { return s >= first && s - first < chunks_; }
  uint32_t children_in_pipe(uint32_t q, uint32_t s) const {
    uint32_t n = 0;
    tree_.for_children(q, [&](uint32_t c) { n += in_pipe(s, tree_.height(c)) ? 1 : 0; });
    return n;
  }
  DoubleBinaryTree tree_;
  uint32_t chunks_ = 0;
  double chunk_ = 0;
};

class DirectPlan : public CollectivePlan {
 public:
  DirectPlan(uint32_t p, double n) : CollectivePlan(p, 1, n) {}
  void sends(uint32_t r, uint32_t, std::vector<Send>& out) const override {
    for (uint32_t k = 1; k < members_; ++k) out.push_back({(r + k) % members_, bytes_});
  }
  uint32_t receives(uint32_t, uint32_t) const override { return members_ - 1; }
  double reduce_bytes(uint32_t, uint32_t) const override { return (members_ - 1) * bytes_; }
};

// The intra-node rings of a hierarchical plan: the topology's ring orders (NodeInterior::rings, the rings
// the collective library builds over the node's links) where it gives them for g GPUs, each carrying an even
// share of a step's bytes; else one ring, local rank l to l + 1.
class NodeRings {
 public:
  NodeRings(uint32_t g, const CollectiveShape& c) : g_(g) {
    std::vector<std::vector<uint32_t>> orders;
    if (c.rings && !c.rings->empty() && c.rings->front().size() == g) orders = *c.rings;
    if (orders.empty()) {
      orders.assign(1, std::vector<uint32_t>(g));
      for (uint32_t l = 0; l < g; ++l) orders[0][l] = l;
    }
    c_ = static_cast<uint32_t>(orders.size());
    next_.resize(static_cast<size_t>(c_) * g);
    std::vector<std::vector<uint32_t>> from(g);
    for (uint32_t k = 0; k < c_; ++k)
      for (uint32_t i = 0; i < g; ++i) {
        const uint32_t l = orders[k][i], n = orders[k][(i + 1) % g];
        next_[static_cast<size_t>(k) * g + l] = n;
        if (std::find(from[n].begin(), from[n].end(), l) == from[n].end()) from[n].push_back(l);
      }
    for (const std::vector<uint32_t>& f : from) senders_.push_back(static_cast<uint32_t>(f.size()));
  }
  // Local rank `local` of `node` sends `bytes` over the rings, one message per peer (its channels merged).
  void sends(uint32_t node, uint32_t local, double bytes, bool streamed, std::vector<Send>& out) const {
    const size_t first = out.size();
    for (uint32_t k = 0; k < c_; ++k)
      add_channel(out, first, node * g_ + next_[static_cast<size_t>(k) * g_ + local], bytes / c_, streamed);
  }
  // The distinct local ranks `local` receives from in a step.
  uint32_t senders(uint32_t local) const { return senders_[local]; }

 private:
  uint32_t g_, c_ = 1;
  std::vector<uint32_t> next_;  // per ring and local rank: its successor
  std::vector<uint32_t> senders_;
};

// Members are node-major: member r is local rank r % g of node r / g. Rounds: g-1 of intra-node ring
// reduce-scatter (n/g), then the inter-node plan on the node's n/g slice, run by the g local ranks of every
// node in parallel (local rank l of each node forms one group), then g-1 of intra-node ring all-gather.
class HierarchicalPlan : public CollectivePlan {
 public:
  HierarchicalPlan(uint32_t p, uint32_t g, double n, std::unique_ptr<CollectivePlan> inter, NodeRings rings)
      : CollectivePlan(p, 0, n), g_(g), inter_(std::move(inter)), rings_(std::move(rings)) {
    rounds_ = 2 * (g_ - 1) + inter_->rounds();
  }
  void sends(uint32_t r, uint32_t s, std::vector<Send>& out) const override {
    uint32_t node = r / g_, local = r % g_;
    if (!inter_round(s)) {
      rings_.sends(node, local, bytes_ / g_, false, out);
      return;
    }
    size_t first = out.size();
    inter_->sends(node, s - (g_ - 1), out);
    for (size_t i = first; i < out.size(); ++i) out[i].peer = out[i].peer * g_ + local;
  }
  uint32_t receives(uint32_t r, uint32_t s) const override {
    return inter_round(s) ? inter_->receives(r / g_, s - (g_ - 1)) : rings_.senders(r % g_);
  }
  double reduce_bytes(uint32_t r, uint32_t s) const override {
    if (s < g_ - 1) return bytes_ / g_;
    return inter_round(s) ? inter_->reduce_bytes(r / g_, s - (g_ - 1)) : 0;
  }
  double reduce_operand(uint32_t r, uint32_t s) const override {
    return inter_round(s) ? inter_->reduce_operand(r / g_, s - (g_ - 1))
                          : CollectivePlan::reduce_operand(r, s);
  }
  uint32_t round_class(uint32_t s) const override {
    if (s < g_ - 1) return 0;
    if (inter_round(s)) return 1 + inter_->round_class(s - (g_ - 1));
    return 1 + inter_->rounds();
  }

 private:
  bool inter_round(uint32_t s) const { return s >= g_ - 1 && s < g_ - 1 + inter_->rounds(); }
  uint32_t g_;
  std::unique_ptr<CollectivePlan> inter_;
  NodeRings rings_;
};

// The hierarchical allreduce with a ring between nodes as NCCL runs its algorithms across nodes: pipelined.
// The buffer is cut into K chunks; chunk c runs the hierarchical schedule of n/K (intra-node ring
// reduce-scatter, G−1 steps; the ring between nodes, 2(N−1) steps; intra-node all-gather, G−1 steps) starting
// in round c, so in one round the chunks in different phases move at once, the NVLink ones and the NIC ones
// in parallel. A member's chunk-steps to one peer go as one message (every intra-node step goes to the next
// local rank, every inter-node one to the same local rank of the next node), and it receives from at most
// those two. Only chunk 0 pays the path's latency: the chunks behind it stream on the same path, their
// latency hidden behind the data ahead (Send::streamed), so the call pays D step latencies, D = 2(G−1) +
// 2(N−1), as NCCL's cost model has it, plus the bottleneck phase's bytes and the fill and drain of the
// others.
class PipelinedHierarchicalPlan : public CollectivePlan {
 public:
  PipelinedHierarchicalPlan(uint32_t p, uint32_t g, double n, uint32_t chunks, NodeRings rings)
      : CollectivePlan(p, 0, n),
        g_(g),
        nodes_(p / g),
        k_(chunks),
        depth_(2 * (g - 1) + 2 * (p / g - 1)),
        rings_(std::move(rings)) {
    rounds_ = k_ + depth_ - 1;
  }
  void sends(uint32_t r, uint32_t t, std::vector<Send>& out) const override {
    const Window w = window(t);
    const uint32_t node = r / g_, local = r % g_;
    if (w.rs + w.ag > 0) rings_.sends(node, local, (w.rs + w.ag) * intra_part(), w.first != kIntra, out);
    if (w.irs + w.iag > 0) {
      Send x{(node + 1) % nodes_ * g_ + local, (w.irs + w.iag) * inter_part()};
      x.streamed = w.first != kInter;
      out.push_back(x);
    }
  }
  uint32_t receives(uint32_t r, uint32_t t) const override {
    const Window w = window(t);
    return (w.rs + w.ag > 0 ? rings_.senders(r % g_) : 0) + (w.irs + w.iag > 0 ? 1 : 0);
  }
  double reduce_bytes(uint32_t, uint32_t t) const override {
    const Window w = window(t);
    return w.rs * intra_part() + w.irs * inter_part();
  }
  // A round's messages, sums and latencies follow from how many chunks are in each phase and where chunk 0
  // is (counts <= K <= 63).
  uint32_t round_class(uint32_t t) const override {
    const Window w = window(t);
    return w.rs + 64 * (w.ag + 64 * (w.irs + 64 * (w.iag + 64 * w.first)));
  }

 private:
  static constexpr uint32_t kNone = 0, kIntra = 1, kInter = 2;
  struct Window {
    uint32_t rs = 0, ag = 0, irs = 0, iag = 0;  // chunks at an intra reduce-scatter step, ...
    uint32_t first = kNone;                     // the phase chunk 0 is in
  };
  // Chunks c active in round t are at step t − c, c in [max(0, t − D + 1), min(K − 1, t)]: their steps fill
  // [lo, hi]; each phase takes its overlap with that range.
  Window window(uint32_t t) const {
    const int64_t lo = static_cast<int64_t>(t) - std::min<int64_t>(k_ - 1, t);
    const int64_t hi = static_cast<int64_t>(t) - std::max<int64_t>(0, static_cast<int64_t>(t) - depth_ + 1);
    auto overlap = [&](int64_t a, int64_t b) {  // steps [a, b)
      return static_cast<uint32_t>(std::max<int64_t>(0, std::min(b, hi + 1) - std::max(a, lo)));
    };
    const int64_t g1 = g_ - 1, n1 = nodes_ - 1;
    Window w;
    w.rs = overlap(0, g1);
    w.irs = overlap(g1, g1 + n1);
    w.iag = overlap(g1 + n1, g1 + 2 * n1);
    w.ag = overlap(g1 + 2 * n1, depth_);
    if (t < depth_) w.first = t >= g1 && t < g1 + 2 * n1 ? kInter : kIntra;
    return w;
  }
  double intra_part() const { return bytes_ / k_ / g_; }
  double inter_part() const { return bytes_ / k_ / g_ / nodes_; }
  uint32_t g_, nodes_, k_, depth_;
  NodeRings rings_;
};

// The hierarchical allreduce with NCCL's double binary tree between more than two nodes, pipelined as NCCL
// runs its tree: chunk c (of K) runs, from round c, the intra-node ring reduce-scatter (G−1 steps of n/KG),
// then the tree between nodes on each GPU's slice (local rank l of every node in one tree pair, half the
// slice up and down each tree, h = n/2KG: a GPU at height k sends up in G−1+k, one at depth d has the sum in
// A = G−1+H+d and sends it on down then), then each half's intra-node ring all-gather from A on (G−1 steps of
// h). A GPU's chunk-steps to its next local rank go as one message; chunk 0's messages pay their path's
// latency and the ones behind it stream (as PipelinedHierarchicalPlan).
class PipelinedTreeHierarchicalPlan : public CollectivePlan {
 public:
  PipelinedTreeHierarchicalPlan(uint32_t p, uint32_t g, double n, uint32_t chunks, NodeRings rings)
      : CollectivePlan(p, 0, n), g_(g), k_(chunks), trees_(p / g, g - 1), rings_(std::move(rings)) {
    span_ = 2 * (g_ - 1) + trees_.span();
    rounds_ = k_ + span_ - 1;
  }
  void sends(uint32_t r, uint32_t t, std::vector<Send>& out) const override {
    const uint32_t node = r / g_, local = r % g_;
    bool first = false;
    if (const double b = intra(node, t, first); b > 0) rings_.sends(node, local, b, !first, out);
    trees_.sends(
        node, local, g_, t, k_, [&](uint32_t) { return half(); }, out);
  }
  uint32_t receives(uint32_t r, uint32_t t) const override {
    bool first = false;  // from the previous local rank, on the same schedule
    return (intra(r / g_, t, first) > 0 ? rings_.senders(r % g_) : 0) + trees_.receives(r / g_, t, k_);
  }
  // The reduce-scatter's received parts, and the children's halves in the trees.
  double reduce_bytes(uint32_t r, uint32_t t) const override {
    return in_window(t, 0, g_ - 1) * part() + trees_.reduced(r / g_, t, k_, [&](uint32_t) { return half(); });
  }
  // Rounds whose every phase holds a chunk behind chunk 0 are alike.
  uint32_t round_class(uint32_t t) const override { return t >= span_ && t < k_ ? 0 : t + 1; }

 private:
  double part() const { return bytes_ / k_ / g_; }
  double half() const { return part() / 2; }
  // How many chunks are at relative steps [first, first + len) in round t.
  uint32_t in_window(uint32_t t, uint32_t first, uint32_t len) const {
    const int64_t lo = std::max<int64_t>(0, static_cast<int64_t>(t) - first - len + 1);
    const int64_t hi = std::min<int64_t>(k_ - 1, static_cast<int64_t>(t) - first);
    return hi >= lo ? static_cast<uint32_t>(hi - lo + 1) : 0;
  }
  // A GPU of `node` to its next local rank in round t: the reduce-scatter steps and each half's all-gather
  // steps; `first`: chunk 0 among them.
  double intra(uint32_t node, uint32_t t, bool& first) const {
    double b = in_window(t, 0, g_ - 1) * part();
    first = t < g_ - 1;
    for (int tr = 0; tr < 2; ++tr) {
      const uint32_t a = trees_.summed(tr, node);
      b += in_window(t, a, g_ - 1) * half();
      first = first || (t >= a && t < a + g_ - 1);
    }
    return b;
  }
  uint32_t g_, k_;
  TreePhase trees_;
  NodeRings rings_;
  uint32_t span_ = 0;
};

// Members 0..p-1 are workers, p..p+k-1 servers. Round 0: every worker pushes n/k to every server; servers
// aggregate p shards. Round 1: every server sends its n/k shard back to every worker. A worker colocated with
// a server still "sends" to it: the endpoints decide whether that crosses a link.
class ParameterServerPlan : public CollectivePlan {
 public:
  ParameterServerPlan(uint32_t p, uint32_t k, double n)
      : CollectivePlan(p + k, 2, n), workers_(p), servers_(k) {}
  void sends(uint32_t r, uint32_t s, std::vector<Send>& out) const override {
    double shard = bytes_ / servers_;
    if (s == 0 && r < workers_)
      for (uint32_t j = 0; j < servers_; ++j) out.push_back({workers_ + (r + j) % servers_, shard});
    if (s == 1 && r >= workers_)
      for (uint32_t w = 0; w < workers_; ++w) out.push_back({(w + r) % workers_, shard});
  }
  uint32_t receives(uint32_t r, uint32_t s) const override {
    if (s == 0) return r >= workers_ ? workers_ : 0;
    return r < workers_ ? servers_ : 0;
  }
  // Summing p shards of n/k is p−1 additions per element: (p−1)·n/k at the per-byte reduction cost γ, the
  // same unit as ring's (p−1)/p·n.
  double reduce_bytes(uint32_t r, uint32_t s) const override {
    return s == 0 && r >= workers_ ? (workers_ - 1) * (bytes_ / servers_) : 0;
  }
  double reduce_operand(uint32_t, uint32_t) const override { return bytes_ / servers_; }

 private:
  uint32_t workers_, servers_;
};

// NVLink SHARP inside one node (NCCL's NVLS allreduce, src/device/all_reduce.h, one node): members 0..G-1 are
// the GPUs, member G the node's NVSwitch, which sums in flight (multimem.ld_reduce) and writes every result
// to all GPUs at once (multimem.st). Per GPU and direction that moves n(1 + 1/G) bytes: the switch reads
// every head's slice from each GPU once (n), and each GPU, the head of one slice in G, fetches its slice's
// sum and stores it (n/G). NCCL cuts the buffer into loops of channels x G heads x chunk bytes, its chunk
// by calcCollChunking (src/enqueue.cc: NCCL_NVLS_CHUNKSIZE, 128 KiB by default, cut to 64, 32 and 16 KiB
// below 64, 8 and 2 loops' worth of the chunk it has so far). Loop l goes up in round l and its sums come
// down in round l + 1, so a loop's reduction overlaps the next one's reads.
class NvlsPlan : public CollectivePlan {
 public:
  NvlsPlan(uint32_t g, double n, uint32_t channels, double max_chunk)
      : CollectivePlan(g + 1, loops(n, loop_bytes(n, g, channels, max_chunk)) + 1, n),
        g_(g),
        loop_(loop_bytes(n, g, channels, max_chunk)) {}
  void sends(uint32_t r, uint32_t s, std::vector<Send>& out) const override {
    const uint32_t k = rounds_ - 1;
    if (r < g_ && s < k) out.push_back({g_, moved(s)});
    if (r == g_ && s >= 1)
      for (uint32_t i = 0; i < g_; ++i) out.push_back({i, moved(s - 1)});
  }
  uint32_t receives(uint32_t r, uint32_t s) const override {
    if (r < g_) return s >= 1 ? 1 : 0;
    return s + 1 < rounds_ ? g_ : 0;
  }
  double reduce_bytes(uint32_t, uint32_t) const override { return 0; }  // in the switch, at line rate
  // Rounds 1..k-2 move two full loops each; the first, the last two and a short last loop differ.
  uint32_t round_class(uint32_t s) const override { return s >= 1 && s + 2 < rounds_ ? 1 : s + 2; }

 private:
  static double loop_bytes(double n, uint32_t g, uint32_t channels, double chunk) {
    const double ops = static_cast<double>(channels) * g;  // NCCL's concurrent operations
    if (n < 64 * ops * chunk && chunk > 64 * 1024) chunk = 64 * 1024;
    if (n < 8 * ops * chunk && chunk > 32 * 1024) chunk = 32 * 1024;
    if (n < 2 * ops * chunk && chunk > 16 * 1024) chunk = 16 * 1024;
    return ops * chunk;
  }
  static uint32_t loops(double n, double loop) {
    return static_cast<uint32_t>(std::max(1.0, std::ceil(n / loop)));
  }
  double moved(uint32_t l) const {  // bytes one GPU sends (or receives) for loop l
    return std::min(loop_, bytes_ - l * loop_) * (1 + 1.0 / g_);
  }
  uint32_t g_;
  double loop_;
};

// NVLS inside every node and NCCL's double binary tree between nodes (NCCL's NVLSTree allreduce,
// src/device/all_reduce.h): members 0..p-1 are the GPUs, node-major, G per node; member p + i is node i's
// NVSwitch. Every GPU is the head of one slice in G, and the heads of a slice, one per node, run the trees
// over the nodes through their own NICs. NCCL cuts the buffer into loops of channels x G heads x chunk bytes,
// its chunk by calcCollChunking (src/enqueue.cc, NVLS_TREE: NCCL_NVLS_CHUNKSIZE, 128 KiB by default, capped
// by NCCL_NVLSTREE_MAX_CHUNKSIZE, by default 64 KiB from 4 nodes (src/transport/nvls.cc), then cut to 256,
// 128, 64 and 32 KiB below 32, 16, 4 and 1 loops' worth of the chunk it has so far). Loop l, in rounds after
// l:
//   0: every GPU hands its loop to its switch (n_l: the switch reads every slice of it);
//   1: the switch sends each head its slice summed over the node (n_l/G);
//   2 + k: a head at height k in a tree sends that tree's half of its slice (n_l/2G), summed with its
//      children's, to its parent;
//   2 + H + d: a head at depth d (H the root's height) has that half's sum over all nodes: it sends it on to
//      its children and stores it into its switch;
//   3 + H + d: the switch writes the node's heads' halves to every GPU (n_l/2).
// Per GPU and direction that is n(1 + 1/G) over NVLink, as NVLS on one node, and n/G through its NIC.
class NvlsTreePlan : public CollectivePlan {
 public:
  NvlsTreePlan(uint32_t p, uint32_t g, double n, uint32_t channels, double nvls_chunk, double max_chunk)
      : CollectivePlan(p + p / g, 0, n), g_(g), nodes_(p / g), trees_(p / g, 2) {
    const double ops = static_cast<double>(channels) * g;  // NCCL's concurrent operations
    if (max_chunk <= 0) max_chunk = nodes_ >= 4 ? 64 * 1024 : nvls_chunk;
    double chunk = std::min(nvls_chunk, max_chunk);
    if (n < 32 * ops * chunk && chunk > 256 * 1024) chunk = 256 * 1024;
    if (n < 16 * ops * chunk && chunk > 128 * 1024) chunk = 128 * 1024;
    if (n < 4 * ops * chunk && chunk > 64 * 1024) chunk = 64 * 1024;
    if (n < ops * chunk && chunk > 32 * 1024) chunk = 32 * 1024;
    loop_ = ops * chunk;
    loops_ = static_cast<uint32_t>(std::max(1.0, std::ceil(n / loop_)));
    last_ = 2 + trees_.span();
    rounds_ = loops_ + last_;
  }
  // What a GPU and its switch exchange in a round goes as one message each way (NCCL drives a GPU's NVLink
  // as one stream); the trees' messages between nodes go one per tree, streamed behind loop 0's.
  void sends(uint32_t r, uint32_t t, std::vector<Send>& out) const override {
    const uint32_t gpus = nodes_ * g_;
    if (r >= gpus) {  // a node's switch
      const uint32_t node = r - gpus;
      if (double b = down(node, t); b > 0)
        for (uint32_t i = 0; i < g_; ++i) out.push_back({node * g_ + i, b});
      return;
    }
    const uint32_t node = r / g_;
    if (double b = up(node, t); b > 0) out.push_back({gpus + node, b});
    trees_.sends(
        node, r % g_, g_, t, loops_, [&](uint32_t l) { return half(l); }, out);
  }
  uint32_t receives(uint32_t r, uint32_t t) const override {
    const uint32_t gpus = nodes_ * g_;
    if (r >= gpus) return up(r - gpus, t) > 0 ? g_ : 0;
    return (down(r / g_, t) > 0 ? 1 : 0) + trees_.receives(r / g_, t, loops_);
  }
  // A head sums its children's halves into its own (the switch sums in flight).
  double reduce_bytes(uint32_t r, uint32_t t) const override {
    if (r >= nodes_ * g_) return 0;
    return trees_.reduced(r / g_, t, loops_, [&](uint32_t l) { return half(l); });
  }
  // Rounds in which every phase moves a whole loop, loop 0 behind them all, are alike.
  uint32_t round_class(uint32_t t) const override { return t >= last_ && t + 1 < loops_ ? 0 : t + 1; }

 private:
  bool valid(uint32_t t, uint32_t rel) const { return t >= rel && t - rel < loops_; }
  double loop(uint32_t l) const { return std::min(loop_, bytes_ - l * loop_); }
  double half(uint32_t l) const { return loop(l) / (2.0 * g_); }
  // A GPU of `node` to its switch in round t: its loop t, and the halves of its slice whose sum over the
  // nodes it has.
  double up(uint32_t node, uint32_t t) const {
    double b = valid(t, 0) ? loop(t) : 0;
    for (int tr = 0; tr < 2; ++tr)
      if (const uint32_t rel = trees_.summed(tr, node); valid(t, rel)) b += half(t - rel);
    return b;
  }
  // The switch of `node` to each of its GPUs: the GPU's slice of loop t - 1 summed over the node, and each
  // tree's halves of all its heads a round after they stored them.
  double down(uint32_t node, uint32_t t) const {
    double b = valid(t, 1) ? loop(t - 1) / g_ : 0;
    for (int tr = 0; tr < 2; ++tr)
      if (const uint32_t rel = trees_.summed(tr, node) + 1; valid(t, rel)) b += loop(t - rel) / 2;
    return b;
  }
  uint32_t g_, nodes_;
  TreePhase trees_;
  double loop_ = 0;
  uint32_t loops_ = 1, last_ = 0;
};

// NCCL's CollNet Direct allreduce with the sums between nodes in the fabric's switches (InfiniBand SHARP;
// NVIDIA/nccl src/device/all_reduce.h, runRing of ncclPatternCollnetDirect): members 0..p-1 are the GPUs,
// node-major, G per node, then each slice's tree switches (SwitchTree, slice l's after slice l-1's). Every
// GPU is the head of one slice in G. NCCL cuts the buffer into loops of channels x G heads x chunk bytes
// (chunk: one Simple step, 512 KiB, halved down to 128 KiB while there are fewer than 64·depth loops, then to
// 64 and 32 KiB below 8·depth; depth 2: src/enqueue.cc, src/graph/connect.cc). Loop l, in rounds after l:
//   0: every GPU sends each other GPU of its node that GPU's slice of the loop (n_l/G): the heads sum them;
//   1 + h: a tree member at height h (the heads at 0) sends its slice, summed with its children's, up;
//   1 + H + d: a member at depth d (H the root's height) sends the sum on down to its children;
//   1 + H + D: a head at depth D has its slice's sum over all nodes: it sends it to the node's other GPUs.
// Per GPU and direction that is 2(G-1)/G·n over NVLink, as a ring inside the node, and n/G through its NIC
// and on every cable of the tree, whatever the node count. The switches sum at line rate.
class CollNetPlan : public CollectivePlan {
 public:
  CollNetPlan(uint32_t p, uint32_t g, double n, uint32_t channels,
              std::shared_ptr<const std::vector<SwitchTree>> trees)
      : CollectivePlan(p, 0, n), g_(g), nodes_(p / g) {
    if (!trees || trees->size() != g_)
      throw std::invalid_argument("collnet needs one switch tree per GPU of a node");
    uint32_t top = 0;
    for (const SwitchTree& t : *trees) {
      Tree tr;
      const size_t m = t.parent.size();
      tr.first = members_;
      members_ += static_cast<uint32_t>(t.switches.size());
      tr.parent = t.parent;
      tr.children.resize(m);
      tr.height.assign(m, 0);
      tr.depth.assign(m, 0);
      for (uint32_t v = 0; v < m; ++v)
        if (t.parent[v] != SwitchTree::kRoot) tr.children[t.parent[v]].push_back(v);
      // Heights: up each head's chain to the root, every switch at least one above the member below it.
      for (uint32_t v = 0; v < nodes_; ++v)
        for (uint32_t c = v, h = 0; t.parent[c] != SwitchTree::kRoot; c = t.parent[c]) {
          tr.height[t.parent[c]] = std::max(tr.height[t.parent[c]], ++h);
          h = tr.height[t.parent[c]];
        }
      for (uint32_t v = 0; v < m; ++v) {
        uint32_t d = 0;
        for (uint32_t c = v; t.parent[c] != SwitchTree::kRoot; c = t.parent[c]) ++d;
        tr.depth[v] = d;
        if (t.parent[v] == SwitchTree::kRoot) tr.root_height = tr.height[v];
      }
      for (uint32_t v = 0; v < nodes_; ++v) top = std::max(top, tr.root_height + tr.depth[v]);
      trees_.push_back(std::move(tr));
    }
    const double ops = static_cast<double>(channels) * g;  // NCCL's concurrent operations
    double chunk = kNcclSimpleStep;
    while (n < 128 * ops * chunk && chunk > 128 * 1024) chunk /= 2;
    while (n < 16 * ops * chunk && chunk > 32 * 1024) chunk /= 2;
    loop_ = ops * chunk;
    loops_ = static_cast<uint32_t>(std::max(1.0, std::ceil(n / loop_)));
    last_ = 1 + top;  // a loop's last round (its gather), relative to its first
    rounds_ = loops_ + last_;
  }
  void sends(uint32_t r, uint32_t t, std::vector<Send>& out) const override {
    const uint32_t gpus = nodes_ * g_;
    if (r >= gpus) {  // a switch
      const auto [l, v] = tree_member(r);
      const Tree& tr = trees_[l];
      if (uint32_t c; tr.parent[v] != SwitchTree::kRoot && at(t, 1 + tr.height[v], c))
        out.push_back({member(l, tr.parent[v]), slice(c), 1, c > 0});
      if (uint32_t c; at(t, 1 + tr.root_height + tr.depth[v], c))
        for (uint32_t ch : tr.children[v]) out.push_back({member(l, ch), slice(c), 1, c > 0});
      return;
    }
    const uint32_t node = r / g_, a = r % g_;
    // To each other GPU b of the node: b's slice of loop t, and this head's summed slice.
    for (uint32_t b = 0; b < g_; ++b) {
      if (b == a) continue;
      double bytes = 0;
      bool streamed = true;
      if (uint32_t c; at(t, 0, c)) bytes += slice(c), streamed = streamed && c > 0;
      if (uint32_t c; at(t, summed(a, node), c)) bytes += slice(c), streamed = streamed && c > 0;
      if (bytes > 0) out.push_back({node * g_ + b, bytes, 1, streamed});
    }
    if (uint32_t c; at(t, 1, c)) out.push_back({member(a, trees_[a].parent[node]), slice(c), 1, c > 0});
  }
  uint32_t receives(uint32_t r, uint32_t t) const override {
    const uint32_t gpus = nodes_ * g_;
    uint32_t n = 0, c;
    if (r >= gpus) {
      const auto [l, v] = tree_member(r);
      const Tree& tr = trees_[l];
      for (uint32_t ch : tr.children[v]) n += at(t, 1 + tr.height[ch], c) ? 1 : 0;
      if (tr.parent[v] != SwitchTree::kRoot && at(t, tr.root_height + tr.depth[v], c)) ++n;
      return n;
    }
    const uint32_t node = r / g_, a = r % g_;
    for (uint32_t b = 0; b < g_; ++b)
      if (b != a && (at(t, 0, c) || at(t, summed(b, node), c))) ++n;
    if (at(t, summed(a, node) - 1, c)) ++n;  // its slice's sum, from its tree
    return n;
  }
  // A head sums the node's G-1 other parts of its slice; the switches sum in flight.
  double reduce_bytes(uint32_t r, uint32_t t) const override {
    uint32_t c;
    return r < nodes_ * g_ && at(t, 0, c) ? slice(c) * (g_ - 1) : 0;
  }
  // Rounds in which every phase moves a whole loop, loop 0 behind them all, are alike.
  uint32_t round_class(uint32_t t) const override { return t > last_ && t + 1 < loops_ ? 0 : t + 1; }

 private:
  struct Tree {
    uint32_t first = 0;  // member index of its first switch
    std::vector<uint32_t> parent, height, depth;
    std::vector<std::vector<uint32_t>> children;
    uint32_t root_height = 0;
  };
  // The loop (of loops_) at relative round `rel` in round t, if any.
  bool at(uint32_t t, uint32_t rel, uint32_t& c) const {
    if (t < rel || t - rel >= loops_) return false;
    c = t - rel;
    return true;
  }
  double slice(uint32_t c) const { return std::min(loop_, bytes_ - c * loop_) / g_; }
  // When the head of slice l on `node` has the sum (relative to its loop's first round).
  uint32_t summed(uint32_t l, uint32_t node) const {
    return 1 + trees_[l].root_height + trees_[l].depth[node];
  }
  uint32_t member(uint32_t l, uint32_t v) const {
    return v < nodes_ ? v * g_ + l : trees_[l].first + (v - nodes_);
  }
  std::pair<uint32_t, uint32_t> tree_member(uint32_t r) const {
    uint32_t l = 0;
    while (l + 1 < trees_.size() && r >= trees_[l + 1].first) ++l;
    return {l, nodes_ + (r - trees_[l].first)};
  }
  uint32_t g_, nodes_;
  std::vector<Tree> trees_;
  double loop_ = 0;
  uint32_t loops_ = 1, last_ = 0;
};

}  // namespace

double estimate_seconds(const CollectivePlan& plan, double alpha, double rate) {
  std::vector<double> out(plan.members()), in(plan.members());
  std::vector<char> paid(plan.members());  // a message of the member's pays the latency (is not streamed)
  std::vector<Send> sends;
  double total = 0;
  for (uint32_t s = 0; s < plan.rounds(); ++s) {
    std::fill(out.begin(), out.end(), 0.0);
    std::fill(in.begin(), in.end(), 0.0);
    std::fill(paid.begin(), paid.end(), 0);
    double round = 0;
    for (uint32_t r = 0; r < plan.members(); ++r) {
      sends.clear();
      plan.sends(r, s, sends);
      for (const Send& m : sends) {
        out[r] += m.bytes;
        in[m.peer] += m.bytes;
        paid[r] = paid[r] || !m.streamed;
      }
    }
    for (uint32_t r = 0; r < plan.members(); ++r)
      round = std::max(round, alpha * paid[r] + std::max(out[r], in[r]) / rate);
    total += round;
  }
  return total;
}

bool allreduce_algorithm(const std::string& name, Algorithm& out) {
  static const std::pair<const char*, Algorithm> kNames[] = {
      {"ring", Algorithm::Ring},
      {"rhd", Algorithm::HalvingDoubling},
      {"halving-doubling", Algorithm::HalvingDoubling},
      {"recursive-doubling", Algorithm::RecursiveDoubling},
      {"mpich", Algorithm::Mpich},
      {"openmpi", Algorithm::OpenMpi},
      {"tree", Algorithm::Tree},
      {"double-tree", Algorithm::DoubleTree},
      {"direct", Algorithm::Direct},
      {"hierarchical", Algorithm::Hierarchical},
      {"nvls", Algorithm::Nvls},
      {"nvls-tree", Algorithm::NvlsTree},
      {"collnet", Algorithm::CollNet}};
  for (const auto& [n, a] : kNames)
    if (name == n) {
      out = a;
      return true;
    }
  return false;
}

Algorithm resolve_inter_node(const CollectiveShape& c) {
  if (c.algorithm != Algorithm::Hierarchical || c.inter_node != Algorithm::Auto) return c.inter_node;
  CollectiveShape between;
  between.ranks = c.ranks_per_node > 0 ? c.ranks / c.ranks_per_node : 0;
  between.bytes = c.ranks_per_node > 0 ? c.bytes / c.ranks_per_node : 0;
  if (between.ranks <= 1) return Algorithm::Ring;  // one node: nothing between nodes
  if (c.rate <= 0) throw std::invalid_argument("inter_node auto needs the inter-node rate");
  std::unique_ptr<CollectivePlan> ring = make_plan(between);
  between.algorithm = Algorithm::DoubleTree;
  std::unique_ptr<CollectivePlan> tree = make_plan(between);
  return estimate_seconds(*tree, c.alpha, c.rate) < estimate_seconds(*ring, c.alpha, c.rate)
             ? Algorithm::DoubleTree
             : Algorithm::Ring;
}

bool pipelined_hierarchical(const CollectiveShape& c, Algorithm between) {
  const uint32_t nodes = c.ranks_per_node > 0 ? c.ranks / c.ranks_per_node : 0;
  return c.chunks > 1 && c.ranks_per_node > 1 && nodes > 1 &&
         (between == Algorithm::Ring || between == Algorithm::DoubleTree);
}

bool pipelined_as_ring(const CollectiveShape& c, Algorithm between) {
  return pipelined_hierarchical(c, between) &&
         (between == Algorithm::Ring || c.ranks / c.ranks_per_node == 2);
}

// MPICH's allreduce: MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE = 2048 bytes; Rabenseifner also needs at least one
// 4-byte element per rank of the power of two (count >= pof2), else recursive doubling.
Algorithm mpich_allreduce(uint32_t p, double bytes) {
  return bytes <= 2048 || bytes / 4 < std::bit_floor(p) ? Algorithm::RecursiveDoubling
                                                        : Algorithm::HalvingDoubling;
}

// Open MPI 4.1's allreduce for a commutative operation (a sum), as coll/tuned's fixed decision picks it by
// communicator size p and buffer bytes (ompi/mca/coll/tuned/coll_tuned_decision_fixed.c,
// ompi_coll_tuned_allreduce_intra_dec_fixed, of Open MPI v4.1, from open-mpi/ompi commit f670364d76 of
// 2020-11-13). Its algorithms map to the plans here: 3 recursive doubling, 4 ring and 5 segmented ring (the
// ring, its segments pipelined: a ring here), 6 Rabenseifner (rhd), 2 "nonoverlapping" (a reduce to rank 0,
// then a broadcast: the binary tree here, where Open MPI's reduce and broadcast pick their own trees).
Algorithm open_mpi_allreduce(uint32_t p, double bytes) {
  constexpr Algorithm kRd = Algorithm::RecursiveDoubling, kRing = Algorithm::Ring,
                      kRab = Algorithm::HalvingDoubling, kTree = Algorithm::Tree;
  struct Step {
    double below;  // bytes
    Algorithm a;
  };
  // Per communicator size bound (p below it): the algorithm of the first step whose bound the buffer is
  // below, else `rest`.
  struct Row {
    uint32_t p_below;
    std::vector<Step> steps;
    Algorithm rest;
  };
  static const std::vector<Row> kRows = {
      // (fewer than 4 ranks: the ring below 64 KiB, the segmented ring from there to 256 KiB)
      {4, {{8, kRing}, {4096, kRd}, {8192, kRing}, {16384, kRd}, {262144, kRing}}, kRab},
      {8, {{16, kRing}, {8192, kRd}}, kRab},
      {16, {{8192, kRd}}, kRab},
      {32, {{64, kRing}, {4096, kRd}}, kRab},
      {64, {{128, kRing}}, kRab},
      {128, {{262144, kRd}}, kRab},
      {256, {{131072, kTree}, {262144, kRd}}, kRab},
      {512, {{4096, kTree}}, kRab},
      {2048, {{2048, kTree}, {16384, kRd}}, kRab},
      {4096, {{2048, kTree}, {4096, kRing}, {16384, kRd}}, kRab},
      {UINT32_MAX, {{2048, kTree}, {16384, kRing}, {32768, kRd}}, kRab}};
  for (const Row& r : kRows) {
    if (p >= r.p_below) continue;
    for (const Step& s : r.steps)
      if (bytes < s.below) return s.a;
    return r.rest;
  }
  return kRab;
}

std::unique_ptr<CollectivePlan> make_plan(const CollectiveShape& c) {
  if (c.ranks == 0) throw std::invalid_argument("a collective needs at least one rank");
  uint32_t p = c.ranks;
  switch (c.algorithm) {
    case Algorithm::Ring:
      if (c.rings && !c.rings->empty() && c.rings->front().size() == c.ranks_per_node &&
          c.ranks_per_node > 1 && p % c.ranks_per_node == 0) {
        std::vector<std::vector<uint32_t>> orders;
        for (uint32_t k = 0; k < std::max<uint32_t>(1, c.channels); ++k)
          orders.push_back((*c.rings)[k % c.rings->size()]);
        return std::make_unique<ChannelRingPlan>(p, c.ranks_per_node, std::move(orders), c.bytes);
      }
      if (c.channels > 1 && c.ranks_per_node > 1 && p % c.ranks_per_node == 0 && p > c.ranks_per_node)
        return std::make_unique<ChannelRingPlan>(
            p, c.ranks_per_node,
            ChannelRingPlan::offset_orders(c.ranks_per_node, std::min(c.channels, c.ranks_per_node)),
            c.bytes);
      return std::make_unique<RingPlan>(p, c.bytes, true, true);
    case Algorithm::ReduceScatter:
      return std::make_unique<RingPlan>(p, c.bytes, true, false);
    case Algorithm::AllGather:
      return std::make_unique<RingPlan>(p, c.bytes, false, true);
    case Algorithm::HalvingDoubling:
      return std::make_unique<HalvingDoublingPlan>(p, c.bytes);
    case Algorithm::RecursiveDoubling:
      return std::make_unique<RecursiveDoublingPlan>(p, c.bytes);
    case Algorithm::Mpich:
    case Algorithm::OpenMpi: {
      CollectiveShape chosen = c;
      chosen.algorithm =
          c.algorithm == Algorithm::Mpich ? mpich_allreduce(p, c.bytes) : open_mpi_allreduce(p, c.bytes);
      return make_plan(chosen);
    }
    case Algorithm::Tree:
      return std::make_unique<TreePlan>(p, c.bytes, true, true);
    case Algorithm::Broadcast:
      return std::make_unique<TreePlan>(p, c.bytes, false, true);
    case Algorithm::DoubleTree:
      return std::make_unique<DoubleTreePlan>(p, c.bytes);
    case Algorithm::Direct:
      return std::make_unique<DirectPlan>(p, c.bytes);
    case Algorithm::Hierarchical:
      if (c.ranks_per_node == 0 || p % c.ranks_per_node != 0)
        throw std::invalid_argument(
            fmt::format("hierarchical allreduce needs ranks ({}) to be a multiple of ranks per node ({})", p,
                        c.ranks_per_node));
      if (c.inter_node != Algorithm::Ring && c.inter_node != Algorithm::HalvingDoubling &&
          c.inter_node != Algorithm::Tree && c.inter_node != Algorithm::DoubleTree &&
          c.inter_node != Algorithm::Auto)
        throw std::invalid_argument(fmt::format(
            "hierarchical allreduce runs ring, rhd, tree, double-tree or auto between nodes, not {}",
            algorithm_name(c.inter_node)));
      {
        CollectiveShape between;
        between.algorithm = resolve_inter_node(c);
        between.ranks = p / c.ranks_per_node;
        between.bytes = c.bytes / c.ranks_per_node;
        if (pipelined_hierarchical(c, between.algorithm)) {
          const uint32_t chunks = std::min(c.chunks, kMaxPipelineChunks);
          if (pipelined_as_ring(c, between.algorithm))
            return std::make_unique<PipelinedHierarchicalPlan>(p, c.ranks_per_node, c.bytes, chunks,
                                                               NodeRings(c.ranks_per_node, c));
          return std::make_unique<PipelinedTreeHierarchicalPlan>(p, c.ranks_per_node, c.bytes, chunks,
                                                                 NodeRings(c.ranks_per_node, c));
        }
        return std::make_unique<HierarchicalPlan>(p, c.ranks_per_node, c.bytes, make_plan(between),
                                                  NodeRings(c.ranks_per_node, c));
      }
    case Algorithm::ParameterServer:
      if (c.servers == 0) throw std::invalid_argument("a parameter server needs at least one server");
      return std::make_unique<ParameterServerPlan>(p, c.servers, c.bytes);
    case Algorithm::Nvls:
      if (p != c.ranks_per_node || p < 2)
        throw std::invalid_argument(fmt::format(
            "nvls runs inside one node of at least 2 GPUs, not {} ranks at {} per node (across nodes: "
            "nvls-tree)",
            p, c.ranks_per_node));
      // NVLS's chunk starts at Simple's step, which NCCL_NVLS_CHUNKSIZE caps (calcCollChunking); NVLSTree's
      // is NCCL_NVLS_CHUNKSIZE itself.
      return std::make_unique<NvlsPlan>(p, c.bytes, std::max<uint32_t>(1, c.channels),
                                        std::min(c.nvls_chunk, kNcclSimpleStep));
    case Algorithm::NvlsTree:
      if (c.ranks_per_node < 2 || p % c.ranks_per_node != 0 || p / c.ranks_per_node < 2)
        throw std::invalid_argument(fmt::format(
            "nvls-tree runs on at least 2 nodes of at least 2 GPUs each, not {} ranks at {} per node", p,
            c.ranks_per_node));
      return std::make_unique<NvlsTreePlan>(p, c.ranks_per_node, c.bytes, std::max<uint32_t>(1, c.channels),
                                            c.nvls_chunk, c.nvls_tree_max_chunk);
    case Algorithm::CollNet:
      if (c.ranks_per_node < 1 || p % c.ranks_per_node != 0 || p / c.ranks_per_node < 2)
        throw std::invalid_argument(fmt::format(
            "collnet runs on at least 2 nodes, not {} ranks at {} per node", p, c.ranks_per_node));
      return std::make_unique<CollNetPlan>(p, c.ranks_per_node, c.bytes, std::max<uint32_t>(1, c.channels),
                                           c.trees);
    case Algorithm::Auto:
      break;
  }
  throw std::invalid_argument("unknown algorithm");
}

}  // namespace ddlsim
