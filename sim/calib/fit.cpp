#include "sim/calib/fit.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <set>

#include "sim/core/error.hpp"

namespace ddlsim {

const char* link_class_name(int link) {
  return link == kIntraNode ? "intra" : "inter";
}

const FittedRange& FittedClass::lookup(double bytes) const {
  for (const FittedRange& r : ranges)
    if (bytes <= r.max_bytes) return r;
  return ranges.back();
}

CostTerms cost_terms(const Measurement& m) {
  CostTerms c;
  c.link = m.same_node ? kIntraNode : kInterNode;
  double n = m.bytes, p = static_cast<double>(m.ranks);
  if (m.time_s <= 0 || n <= 0) return c;
  switch (m.kind) {
    case MeasurementKind::PingPong:
      // Ranks 0 and 1 bounce the message: one node when a node holds two or more ranks (block placement).
      c.link = m.same_node || m.ranks_per_node >= 2 ? kIntraNode : kInterNode;
      c.modelled = true;
      c.messages = {{1, n}};
      c.formula = "a + n*b";
      return c;
    case MeasurementKind::Bandwidth:
      c.link = m.same_node || m.ranks_per_node >= 2 ? kIntraNode : kInterNode;
      c.modelled = true;
      c.streamed = true;
      c.messages = {{1, n}};
      c.formula = "gap + n*b";
      return c;
    case MeasurementKind::Step:
      return c;
    case MeasurementKind::Allreduce:
      break;
  }
  if (m.ranks < 2) return c;
  bool ring = m.algorithm == "ring" || m.algorithm == "nccl" || m.algorithm == "osu_allreduce";
  if (ring) {
    c.modelled = true;
    c.messages = {{2 * (p - 1), n / p}};
    c.reduce_bytes = (p - 1) / p * n;
    c.formula = "2(p-1)*a + 2(p-1)/p*n*b + (p-1)/p*n*g";
    return c;
  }
  if (m.algorithm == "rhd" && std::has_single_bit(static_cast<uint64_t>(m.ranks))) {
    c.modelled = true;
    for (double chunk = n / 2; chunk >= n / p * 0.999; chunk /= 2) c.messages.push_back({2, chunk});
    c.reduce_bytes = (p - 1) / p * n;
    c.formula = "2log2(p)*a + 2(p-1)/p*n*b + (p-1)/p*n*g";
    return c;
  }
  c.formula = "replay only (--check)";
  return c;
}

namespace {

constexpr int kAlpha = 0, kBeta = 1, kGap = 2;
constexpr int kGamma = 12, kCols = 13;
constexpr double kNone = std::numeric_limits<double>::infinity();

int column(int link, int range, int what) {
  return (link * 2 + range) * 3 + what;
}

struct Row {
  size_t index;
  CostTerms terms;
  double t;
};

using Vec = std::array<double, kCols>;

Vec design(const CostTerms& c, const std::array<double, 2>& bp) {
  Vec a{};
  for (const CostTerms::Messages& msg : c.messages) {
    int range = msg.bytes <= bp[static_cast<size_t>(c.link)] ? 0 : 1;
    a[static_cast<size_t>(column(c.link, range, c.streamed ? kGap : kAlpha))] += msg.count;
    a[static_cast<size_t>(column(c.link, range, kBeta))] += msg.count * msg.bytes;
  }
  a[kGamma] = c.reduce_bytes;
  return a;
}

struct Solution {
  Vec x{};
  std::array<bool, kCols> touched{};  // some fit row has this parameter
  double ssr = 0;
  bool clamped_gamma = false;
};

// Gaussian elimination with partial pivoting on an equilibrated system (unit diagonal). False when singular.
bool solve_dense(std::vector<std::vector<double>> m, std::vector<double> b, std::vector<double>& x) {
  size_t k = b.size();
  for (size_t c = 0; c < k; ++c) {
    size_t piv = c;
    for (size_t r = c + 1; r < k; ++r)
      if (std::fabs(m[r][c]) > std::fabs(m[piv][c])) piv = r;
    if (std::fabs(m[piv][c]) < 1e-11) return false;
    std::swap(m[piv], m[c]);
    std::swap(b[piv], b[c]);
    for (size_t r = c + 1; r < k; ++r) {
      double f = m[r][c] / m[c][c];
      for (size_t j = c; j < k; ++j) m[r][j] -= f * m[c][j];
      b[r] -= f * b[c];
    }
  }
  x.assign(k, 0);
  for (size_t c = k; c-- > 0;) {
    double s = b[c];
    for (size_t j = c + 1; j < k; ++j) s -= m[c][j] * x[j];
    x[c] = s / m[c][c];
  }
  return true;
}

// Minimises sum((a_i.x - t_i)/t_i)^2 with alpha, gap and gamma >= 0 and every beta > 0.
std::optional<Solution> solve(const std::vector<Row>& rows, const std::array<double, 2>& bp,
                              bool with_gamma) {
  std::vector<Vec> a;
  Solution s;
  for (const Row& r : rows) {
    Vec v = design(r.terms, bp);
    for (double& e : v) e /= r.t;
    if (!with_gamma) v[kGamma] = 0;
    for (int j = 0; j < kCols; ++j)
      s.touched[static_cast<size_t>(j)] = s.touched[static_cast<size_t>(j)] || v[static_cast<size_t>(j)] != 0;
    a.push_back(v);
  }
  std::array<bool, kCols> active = s.touched;
  while (true) {
    std::vector<int> cols;
    for (int j = 0; j < kCols; ++j)
      if (active[static_cast<size_t>(j)]) cols.push_back(j);
    if (cols.size() > a.size()) return std::nullopt;
    size_t k = cols.size();
    std::vector<std::vector<double>> n(k, std::vector<double>(k, 0));
    std::vector<double> rhs(k, 0), scale(k), z;
    for (const Vec& v : a)
      for (size_t i = 0; i < k; ++i) {
        double vi = v[static_cast<size_t>(cols[i])];
        if (vi == 0) continue;
        rhs[i] += vi;
        for (size_t j = 0; j < k; ++j) n[i][j] += vi * v[static_cast<size_t>(cols[j])];
      }
    for (size_t i = 0; i < k; ++i) scale[i] = 1 / std::sqrt(n[i][i]);
    for (size_t i = 0; i < k; ++i) {
      rhs[i] *= scale[i];
      for (size_t j = 0; j < k; ++j) n[i][j] *= scale[i] * scale[j];
    }
    if (!solve_dense(n, rhs, z)) return std::nullopt;
    s.x = {};
    for (size_t i = 0; i < k; ++i) s.x[static_cast<size_t>(cols[i])] = z[i] * scale[i];
    // The most negative overhead (in units of its effect) is fixed at zero; then refit.
    int worst = -1;
    double worst_z = 0;
    for (size_t i = 0; i < k; ++i) {
      bool beta = cols[i] != kGamma && cols[i] % 3 == kBeta;
      if (!beta && z[i] < worst_z) {
        worst_z = z[i];
        worst = cols[i];
      }
    }
    if (worst >= 0) {
      active[static_cast<size_t>(worst)] = false;
      if (worst == kGamma) s.clamped_gamma = true;
      continue;
    }
    for (int j : cols)
      if (j != kGamma && j % 3 == kBeta && s.x[static_cast<size_t>(j)] <= 0) return std::nullopt;
    break;
  }
  for (const Vec& v : a) {
    double pred = 0;
    for (int j = 0; j < kCols; ++j) pred += v[static_cast<size_t>(j)] * s.x[static_cast<size_t>(j)];
    s.ssr += (pred - 1) * (pred - 1);
  }
  return s;
}

// Breakpoints worth trying for one link class: message sizes with at least three fit rows on each side.
std::vector<double> candidates(const std::vector<Row>& rows, int link) {
  std::set<double> sizes;
  for (const Row& r : rows)
    if (r.terms.link == link)
      for (const auto& m : r.terms.messages) sizes.insert(m.bytes);
  std::vector<double> out;
  for (double b : sizes) {
    size_t below = 0, above = 0;
    for (const Row& r : rows) {
      if (r.terms.link != link) continue;
      bool lo = false, hi = false;
      for (const auto& m : r.terms.messages) (m.bytes <= b ? lo : hi) = true;
      below += lo;
      above += hi;
    }
    if (below >= 3 && above >= 3) out.push_back(b);
  }
  return out;
}

std::string bytes_text(double b) {
  if (!std::isfinite(b)) return "none";
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  double v = b;
  while (u < 3 && v >= 1024 && std::fmod(v, 1024) == 0) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:g} {}", v, units[u]);
}

}  // namespace

double model_time(const CostTerms& c, const FitResult& fit) {
  const FittedClass& cls = fit.link[c.link];
  if (!c.modelled || !cls.measured) return std::nan("");
  double t = c.reduce_bytes * fit.gamma;
  for (const CostTerms::Messages& m : c.messages) {
    const FittedRange& r = cls.lookup(m.bytes);
    t += m.count * ((c.streamed ? r.gap : r.alpha) + m.bytes * r.beta);
  }
  return t;
}

FitResult fit_comm_model(const std::vector<Measurement>& ms, const FitOptions& o) {
  FitResult out;
  out.points.resize(ms.size());
  std::vector<Row> rows;
  bool cpu_side = false;
  for (size_t i = 0; i < ms.size(); ++i) {
    CostTerms c = cost_terms(ms[i]);
    out.points[i].modelled = c.modelled;
    if (!c.modelled || ms[i].bytes > o.max_bytes || ms[i].ranks > o.max_ranks) continue;
    if (!o.algorithms.empty() &&
        std::find(o.algorithms.begin(), o.algorithms.end(), ms[i].algorithm) == o.algorithms.end())
      continue;
    out.points[i].in_fit = true;
    cpu_side = cpu_side || ms[i].tool != "nccl-tests";
    rows.push_back({i, c, ms[i].time_s});
  }
  if (rows.empty())
    throw InputError(
        {}, "",
        fmt::format(
            "nothing to fit: no ping-pong, ring/rhd allreduce, nccl-tests or OSU "
            "latency/bandwidth/allreduce measurements{}{}",
            std::isfinite(o.max_bytes) ? fmt::format(" with bytes <= {}", bytes_text(o.max_bytes)) : "",
            o.max_ranks < std::numeric_limits<int64_t>::max()
                ? fmt::format(" and ranks <= {} (raise --fit-max-ranks)", o.max_ranks)
                : ""));
  std::array<std::vector<double>, 2> cands;
  for (int link : {kIntraNode, kInterNode}) {
    auto& c = cands[static_cast<size_t>(link)];
    bool present = std::any_of(rows.begin(), rows.end(), [&](const Row& r) { return r.terms.link == link; });
    if (!present || o.single_range)
      c = {kNone};
    else if (o.breakpoint)
      c = {*o.breakpoint};
    else
      c = candidates(rows, link);
    if (c.empty()) {
      c = {kNone};
      out.notes.push_back(
          fmt::format("{}: too few message sizes for a breakpoint (three fit rows on each side "
                      "needed): one range",
                      link_class_name(link)));
    }
  }
  bool any_reduce =
      std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.terms.reduce_bytes > 0; });
  std::optional<Solution> best;
  std::array<double, 2> best_bp{kNone, kNone};
  bool best_folded = false;
  for (double b0 : cands[0])
    for (double b1 : cands[1]) {
      std::array<double, 2> bp{b0, b1};
      bool folded = false;
      std::optional<Solution> s = solve(rows, bp, true);
      if (!s && any_reduce) {
        s = solve(rows, bp, false);
        folded = true;
      }
      if (s && (!best || s->ssr < best->ssr)) {
        best = s;
        best_bp = bp;
        best_folded = folded;
      }
    }
  if (!best)
    throw InputError(
        {}, "",
        "cannot fit: alpha and beta are not separable with these measurements (each link class and "
        "message-size range needs at least two message sizes; try --breakpoint none)");

  const Solution& s = *best;
  for (int link : {kIntraNode, kInterNode}) {
    FittedClass& cls = out.link[link];
    for (int range : {0, 1}) {
      size_t beta = static_cast<size_t>(column(link, range, kBeta));
      if (!s.touched[beta]) continue;
      FittedRange r;
      r.max_bytes = range == 0 ? best_bp[static_cast<size_t>(link)] : kNone;
      r.alpha = s.x[static_cast<size_t>(column(link, range, kAlpha))];
      r.beta = s.x[beta];
      r.gap = s.x[static_cast<size_t>(column(link, range, kGap))];
      r.alpha_measured = s.touched[static_cast<size_t>(column(link, range, kAlpha))];
      r.gap_measured = s.touched[static_cast<size_t>(column(link, range, kGap))];
      for (const Row& row : rows) {
        if (row.terms.link != link) continue;
        for (const auto& m : row.terms.messages)
          if ((m.bytes <= best_bp[static_cast<size_t>(link)]) == (range == 0)) {
            ++r.points;
            break;
          }
      }
      cls.ranges.push_back(r);
    }
    if (cls.ranges.empty()) continue;
    cls.measured = true;
    cls.ranges.back().max_bytes = kNone;
    CommClass& mc = link == kIntraNode ? out.model.intra : out.model.inter;
    mc.ranges.clear();
    for (const FittedRange& r : cls.ranges) {
      CommRange cr;
      cr.max_bytes = r.max_bytes;
      cr.alpha = Time::from_seconds(r.alpha);
      cr.bandwidth = 1 / r.beta;
      mc.ranges.push_back(cr);
    }
    if (cls.ranges.size() == 2)
      out.notes.push_back(fmt::format("{}: breakpoint {} ({})", link_class_name(link),
                                      bytes_text(best_bp[static_cast<size_t>(link)]),
                                      o.breakpoint ? "given" : "least total squared relative error"));
    for (const FittedRange& r : cls.ranges)
      if (r.alpha_measured && r.alpha == 0)
        out.notes.push_back(fmt::format("{}: alpha up to {} fitted negative, fixed at 0",
                                        link_class_name(link), bytes_text(r.max_bytes)));
  }
  out.gamma = s.x[kGamma];
  out.gamma_measured = any_reduce && !best_folded;
  out.gamma_folded = any_reduce && best_folded;
  if (out.gamma_folded)
    out.notes.push_back(
        "gamma folded into beta: every allreduce row has the same reduce/transfer ratio (e.g. one "
        "rank count and no ping-pong), so the fitted bandwidth is an effective one that includes "
        "the reduction");
  else if (!any_reduce)
    out.notes.push_back("gamma not measured (no allreduce data): 0");
  else if (s.clamped_gamma)
    out.notes.push_back("gamma fitted negative, fixed at 0: reductions cost nothing measurable here");
  out.model.gamma_gpu = out.gamma;
  out.model.gamma_cpu = cpu_side ? out.gamma : 0;

  std::vector<double> errors;
  for (size_t i = 0; i < ms.size(); ++i) {
    FitPoint& p = out.points[i];
    double t = model_time(cost_terms(ms[i]), out);
    if (std::isnan(t)) continue;
    p.predicted = true;
    p.predicted_s = t;
    p.rel_error = (t - ms[i].time_s) / ms[i].time_s;
    if (p.in_fit) errors.push_back(std::fabs(p.rel_error));
  }
  out.fit_points = errors.size();
  out.residual_median = median(errors);
  out.residual_max = errors.empty() ? 0 : *std::max_element(errors.begin(), errors.end());
  return out;
}

}  // namespace ddlsim
