#pragma once
// The software side of communication, on top of the links: per-message overhead (alpha) and the rate one flow
// can reach (a bandwidth bound and/or a fraction of its route's bottleneck), by message-size range (eager vs
// rendezvous), for messages inside a node and across nodes; and the per-byte reduction cost (gamma) on GPUs
// and on parameter-server CPUs. Defaults are the ideal network (no overhead); calibration fits the numbers.
#include <limits>
#include <vector>

#include "sim/core/units.hpp"

namespace ddlsim {

struct CommRange {
  double max_bytes = std::numeric_limits<double>::infinity();  // messages up to this size (inclusive)
  Time alpha;                                                  // per-message overhead
  double bandwidth = 0;                                        // bytes/s bound on one flow; 0 = none
  double efficiency = 1;  // fraction of the route bottleneck one flow gets
};

struct CommClass {
  CommClass() : ranges(1) {}
  std::vector<CommRange> ranges;  // sorted by max_bytes, last one unbounded
  const CommRange& lookup(double bytes) const {
    for (const CommRange& r : ranges)
      if (bytes <= r.max_bytes) return r;
    return ranges.back();
  }
};

struct CommModel {
  CommClass intra;         // both ends in one node
  CommClass inter;         // across nodes
  double gamma_gpu = 0;    // seconds per byte reduced on a GPU
  double gamma_cpu = 0;    // seconds per byte aggregated on a CPU (parameter servers)
  uint32_t multipath = 1;  // split each transfer over this many routes (1 = minimal only)
};

}  // namespace ddlsim
