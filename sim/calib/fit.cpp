#include "sim/calib/fit.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

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

CostTerms cost_terms(const Measurement& m, uint32_t channels) {
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
    const double ch = channels;
    c.messages = {{2 * (p - 1), n / (p * ch)}};
    c.reduces = {{(p - 1) * ch, n / (p * ch)}};
    c.formula = channels > 1 ? fmt::format("2(p-1)*a + 2(p-1)/({}p)*n*b + (p-1)/p*n*g", channels)
                             : "2(p-1)*a + 2(p-1)/p*n*b + (p-1)/p*n*g";
    return c;
  }
  if (m.algorithm == "rhd" && std::has_single_bit(static_cast<uint64_t>(m.ranks))) {
    c.modelled = true;
    for (double chunk = n / 2; chunk >= n / p * 0.999; chunk /= 2) {
      c.messages.push_back({2, chunk});
      c.reduces.push_back({1, chunk});
    }
    c.formula = "2log2(p)*a + 2(p-1)/p*n*b + (p-1)/p*n*g";
    return c;
  }
  c.formula = "replay only (--check)";
  return c;
}

namespace {

// Columns of one link class's design matrix: per size range alpha, beta, gap and gamma.
constexpr int kAlpha = 0, kBeta = 1, kGap = 2, kGammaCol = 3, kPer = 4;
constexpr int kCols = kMaxRanges * kPer;
constexpr double kNone = std::numeric_limits<double>::infinity();
using Breaks = std::vector<double>;  // increasing; size + 1 ranges
using Vec = std::array<double, kCols>;

int range_of(double bytes, const Breaks& bp) {
  return static_cast<int>(std::lower_bound(bp.begin(), bp.end(), bytes) - bp.begin());
}

struct Row {
  size_t index;
  CostTerms terms;
  double t;
};

Vec design(const CostTerms& c, const Breaks& bp) {
  Vec a{};
  for (const CostTerms::Messages& msg : c.messages) {
    size_t base = static_cast<size_t>(range_of(msg.bytes, bp) * kPer);
    a[base + (c.streamed ? kGap : kAlpha)] += msg.count;
    a[base + kBeta] += msg.count * msg.bytes;
  }
  for (const CostTerms::Messages& r : c.reduces)
    a[static_cast<size_t>(range_of(r.bytes, bp) * kPer + kGammaCol)] += r.count * r.bytes;
  return a;
}

bool is_beta(int col) {
  return col % kPer == kBeta;
}

struct Solution {
  Vec x{};
  std::array<bool, kCols> touched{};  // some fit row has this parameter
  double ssr = 0;
  int parameters = 0;  // fitted (not clamped) parameters
  bool clamped_gamma = false;
  std::vector<double> residual;  // per row: relative residual (model / measured - 1)
  std::vector<double> weight;    // per row: the robust fit's final weight (1: plain least squares)
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

// Minimises sum(w_i (a_i.x - y_i)^2) (rows scaled by 1/t_i: relative errors; y_i = 1 unless fixed
// parameters moved part of the time to the right-hand side) with alpha, gap and gamma >= 0 and every beta
// > 0.
std::optional<Solution> solve_weighted(const std::vector<Vec>& a, const std::vector<double>& w,
                                       const std::vector<double>& y) {
  Solution s;
  for (const Vec& v : a)
    for (int j = 0; j < kCols; ++j)
      s.touched[static_cast<size_t>(j)] = s.touched[static_cast<size_t>(j)] || v[static_cast<size_t>(j)] != 0;
  std::array<bool, kCols> active = s.touched;
  std::vector<int> cols;
  while (true) {
    cols.clear();
    for (int j = 0; j < kCols; ++j)
      if (active[static_cast<size_t>(j)]) cols.push_back(j);
    if (cols.size() > a.size()) return std::nullopt;
    size_t k = cols.size();
    std::vector<std::vector<double>> n(k, std::vector<double>(k, 0));
    std::vector<double> rhs(k, 0), scale(k), z;
    for (size_t r = 0; r < a.size(); ++r)
      for (size_t i = 0; i < k; ++i) {
        double vi = a[r][static_cast<size_t>(cols[i])] * w[r];
        if (vi == 0) continue;
        rhs[i] += vi * y[r];
        for (size_t j = 0; j < k; ++j) n[i][j] += vi * a[r][static_cast<size_t>(cols[j])];
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
    for (size_t i = 0; i < k; ++i)
      if (!is_beta(cols[i]) && z[i] < worst_z) {
        worst_z = z[i];
        worst = cols[i];
      }
    if (worst >= 0) {
      active[static_cast<size_t>(worst)] = false;
      if (worst % kPer == kGammaCol) s.clamped_gamma = true;
      continue;
    }
    for (int j : cols)
      if (is_beta(j) && s.x[static_cast<size_t>(j)] <= 0) return std::nullopt;
    break;
  }
  s.parameters = static_cast<int>(cols.size());
  for (size_t r = 0; r < a.size(); ++r) {
    double pred = 0;
    for (int j = 0; j < kCols; ++j) pred += a[r][static_cast<size_t>(j)] * s.x[static_cast<size_t>(j)];
    s.residual.push_back(pred - y[r]);
    s.ssr += w[r] * (pred - y[r]) * (pred - y[r]);
  }
  s.weight = w;
  return s;
}

// Robust scale of relative residuals: the normalised median absolute deviation (1.4826 MAD estimates the
// standard deviation of normal errors; Huber, Robust Statistics, 1981).
double robust_scale(const std::vector<double>& r) {
  std::vector<double> abs;
  for (double v : r) abs.push_back(std::fabs(v));
  if (abs.empty()) return 0;
  std::nth_element(abs.begin(), abs.begin() + static_cast<std::ptrdiff_t>(abs.size() / 2), abs.end());
  return 1.4826 * abs[abs.size() / 2];
}

// The fit, robust to outliers: iteratively reweighted least squares, first with Huber's weights (k = 1.345,
// 95% efficiency on normal errors), then from that start with Tukey's bisquare (c = 4.685), which gives a
// gross outlier weight 0; the residual scale is the normalised MAD of each iterate (Holland & Welsch,
// "Robust regression using iteratively reweighted least-squares", 1977). Residuals at rounding level (exact
// data) keep the plain least squares.
// `fixed_beta` > 0: every range's beta is that (given, not fitted), its share of each time moved to the
// right-hand side.
std::optional<Solution> solve(const std::vector<Row>& rows, const Breaks& bp, bool with_gamma, bool robust,
                              double fixed_beta = 0) {
  std::vector<Vec> a;
  std::vector<double> y;
  std::array<bool, kCols> fixed{};
  for (const Row& r : rows) {
    Vec v = design(r.terms, bp);
    double target = 1 - r.terms.offset_s / r.t;
    for (int j = 0; j < kCols; ++j) {
      double& e = v[static_cast<size_t>(j)];
      e = with_gamma || j % kPer != kGammaCol ? e / r.t : 0;
      if (fixed_beta > 0 && is_beta(j) && e != 0) {
        target -= e * fixed_beta;
        fixed[static_cast<size_t>(j)] = true;
        e = 0;
      }
    }
    a.push_back(v);
    y.push_back(target);
  }
  auto solved = [&](const std::vector<double>& w) {
    std::optional<Solution> out = solve_weighted(a, w, y);
    if (out)
      for (int j = 0; j < kCols; ++j)
        if (fixed[static_cast<size_t>(j)]) {
          out->touched[static_cast<size_t>(j)] = true;
          out->x[static_cast<size_t>(j)] = fixed_beta;
        }
    return out;
  };
  std::optional<Solution> s = solved(std::vector<double>(a.size(), 1.0));
  for (int pass = 0; robust && s && pass < 2; ++pass) {
    for (int it = 0; it < 50; ++it) {
      double scale = robust_scale(s->residual);
      if (scale < 1e-6) return s;
      std::vector<double> w(a.size());
      for (size_t r = 0; r < a.size(); ++r) {
        double u = std::fabs(s->residual[r]) / scale;
        w[r] = pass == 0 ? (u <= 1.345 ? 1 : 1.345 / u)
                         : (u < 4.685 ? std::pow(1 - (u / 4.685) * (u / 4.685), 2) : 0);
      }
      std::optional<Solution> next = solved(w);
      if (!next) break;  // (a weight pattern the clamps cannot solve: keep the last solution)
      bool moved = false;
      for (int j = 0; j < kCols; ++j) {
        double x0 = s->x[static_cast<size_t>(j)], x1 = next->x[static_cast<size_t>(j)];
        moved = moved || std::fabs(x1 - x0) > 1e-9 * std::max(std::fabs(x0), std::fabs(x1));
      }
      s = next;
      if (!moved) break;
    }
  }
  return s;
}

// Fit rows with a message in each range of bp.
std::vector<size_t> rows_per_range(const std::vector<Row>& rows, const Breaks& bp) {
  std::vector<size_t> count(bp.size() + 1, 0);
  std::vector<bool> hit;
  for (const Row& r : rows) {
    hit.assign(bp.size() + 1, false);
    for (const auto& m : r.terms.messages) hit[static_cast<size_t>(range_of(m.bytes, bp))] = true;
    for (size_t i = 0; i < hit.size(); ++i) count[i] += hit[i];
  }
  return count;
}

// Breakpoint sets worth trying for one link class: none, then one or two message sizes, with at least three
// fit rows in every range.
std::vector<Breaks> candidates(const std::vector<Row>& rows) {
  std::set<double> set;
  for (const Row& r : rows)
    for (const auto& m : r.terms.messages) set.insert(m.bytes);
  std::vector<double> sizes(set.begin(), set.end());
  std::vector<Breaks> out{{}};
  auto enough = [&](const Breaks& bp) {
    std::vector<size_t> n = rows_per_range(rows, bp);
    return std::all_of(n.begin(), n.end(), [](size_t c) { return c >= 3; });
  };
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (!enough({sizes[i]})) continue;
    out.push_back({sizes[i]});
    for (size_t j = i + 1; j < sizes.size(); ++j)
      if (enough({sizes[i], sizes[j]})) out.push_back({sizes[i], sizes[j]});
  }
  return out;
}

// Bayesian information criterion of a fit: more ranges must pay for their parameters. Residuals below 1e-9
// relative count as exact, so exact synthetic data pick the fewest ranges that reproduce them.
double bic(const Solution& s, size_t n) {
  double dn = static_cast<double>(n);
  return dn * std::log(std::max(s.ssr, dn * 1e-18) / dn) + s.parameters * std::log(dn);
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

struct ClassFit {
  Solution s;
  Breaks bp;
  bool folded = false;
};

// The best breakpoints for one link class's rows: given ones, none, or the set with the lowest BIC of the
// plain least squares (down-weighting the rows a wrong breakpoint misfits would favour it), refitted
// robustly.
std::optional<ClassFit> fit_class(const std::vector<Row>& rows, const FitOptions& o, std::string& note,
                                  double fixed_beta = 0) {
  std::vector<Breaks> cands;
  if (o.single_range || fixed_beta > 0)
    cands = {{}};
  else if (!o.breakpoints.empty())
    cands = {o.breakpoints};
  else
    cands = candidates(rows);
  if (cands.size() == 1 && !o.single_range && o.breakpoints.empty() && fixed_beta <= 0)
    note = "too few message sizes for a breakpoint (three fit rows in every range needed): one range";
  bool any_reduce =
      std::any_of(rows.begin(), rows.end(), [](const Row& r) { return !r.terms.reduces.empty(); });
  std::optional<ClassFit> best;
  double best_score = 0;
  for (const Breaks& bp : cands) {
    if (bp.size() + 1 > kMaxRanges) continue;
    ClassFit f{{}, bp, false};
    std::optional<Solution> s = solve(rows, bp, true, false, fixed_beta);
    if (!s && any_reduce) {
      s = solve(rows, bp, false, false, fixed_beta);
      f.folded = true;
    }
    if (!s) continue;
    f.s = *s;
    double score = bic(f.s, rows.size());
    if (!best || score < best_score) {
      best = f;
      best_score = score;
    }
  }
  if (best)
    if (std::optional<Solution> r = solve(rows, best->bp, !best->folded, true, fixed_beta)) best->s = *r;
  return best;
}

}  // namespace

double model_time(const CostTerms& c, const FitResult& fit) {
  const FittedClass& cls = fit.link[c.link];
  if (!c.modelled || !cls.measured) return std::nan("");
  double t = c.offset_s;
  for (const CostTerms::Messages& m : c.messages) {
    const FittedRange& r = cls.lookup(m.bytes);
    t += m.count * ((c.streamed ? r.gap : r.alpha) + m.bytes * r.beta);
  }
  for (const CostTerms::Messages& m : c.reduces) t += m.count * m.bytes * cls.lookup(m.bytes).gamma;
  return t;
}

FitResult fit_comm_model(const std::vector<Measurement>& ms, const FitOptions& o) {
  if (o.breakpoints.size() + 1 > kMaxRanges)
    throw InputError({}, "", fmt::format("at most {} breakpoints", kMaxRanges - 1));
  FitResult out;
  out.points.resize(ms.size());
  std::array<std::vector<Row>, 2> rows;
  bool cpu_side = false;
  if (!o.terms.empty() && o.terms.size() != ms.size())
    throw std::logic_error("fit_comm_model: one CostTerms per measurement");
  auto terms_of = [&](size_t i) { return o.terms.empty() ? cost_terms(ms[i]) : o.terms[i]; };
  // Every k-th size of a run held out: positions among the run's distinct sizes.
  std::vector<bool> held(ms.size(), false);
  if (o.hold_out_every >= 2) {
    std::map<std::tuple<std::string, int64_t, int>, std::set<double>> sizes;
    auto run_of = [&](const Measurement& m) {
      return std::make_tuple(m.algorithm, m.ranks, static_cast<int>(m.kind));
    };
    for (const Measurement& m : ms) sizes[run_of(m)].insert(m.bytes);
    for (size_t i = 0; i < ms.size(); ++i) {
      const std::set<double>& s = sizes[run_of(ms[i])];
      auto position = std::distance(s.begin(), s.find(ms[i].bytes));
      held[i] = position % o.hold_out_every == o.hold_out_every - 1;
    }
  }
  for (size_t i = 0; i < ms.size(); ++i) {
    CostTerms c = terms_of(i);
    out.points[i].modelled = c.modelled;
    if (!c.modelled || held[i] || ms[i].bytes > o.max_bytes || ms[i].ranks > o.max_ranks) continue;
    if (!o.algorithms.empty() &&
        std::find(o.algorithms.begin(), o.algorithms.end(), ms[i].algorithm) == o.algorithms.end())
      continue;
    out.points[i].in_fit = true;
    cpu_side = cpu_side || ms[i].tool != "nccl-tests";
    rows[static_cast<size_t>(c.link)].push_back({i, c, ms[i].time_s});
  }
  if (rows[0].empty() && rows[1].empty())
    throw InputError(
        {}, "",
        fmt::format(
            "nothing to fit: no ping-pong, ring/rhd allreduce, nccl-tests or OSU "
            "latency/bandwidth/allreduce measurements{}{}",
            std::isfinite(o.max_bytes) ? fmt::format(" with bytes <= {}", bytes_text(o.max_bytes)) : "",
            o.max_ranks < std::numeric_limits<int64_t>::max()
                ? fmt::format(" and ranks <= {} (raise --fit-max-ranks)", o.max_ranks)
                : ""));

  // The reduction cost is a property of the device, not the link: the class with more reducing rows gives it.
  int reduce_class = -1;
  size_t reduce_rows[2] = {0, 0};
  for (int link : {kIntraNode, kInterNode})
    for (const Row& r : rows[static_cast<size_t>(link)]) reduce_rows[link] += !r.terms.reduces.empty();
  if (reduce_rows[0] + reduce_rows[1] > 0) reduce_class = reduce_rows[0] >= reduce_rows[1] ? 0 : 1;

  for (int link : {kIntraNode, kInterNode}) {
    const std::vector<Row>& cr = rows[static_cast<size_t>(link)];
    if (cr.empty()) continue;
    std::string note;
    std::set<double> sizes;
    for (const Row& r : cr)
      for (const CostTerms::Messages& m : r.terms.messages) sizes.insert(m.bytes);
    const double given = o.bandwidth[link] > 0 ? 1 / o.bandwidth[link] : 0;
    // One message size: alpha and beta cannot be told apart, so beta comes from the cluster (if given).
    std::optional<ClassFit> f = fit_class(cr, o, note, sizes.size() < 2 ? given : 0);
    if (!f && sizes.size() >= 2 && given > 0) {  // e.g. flat timings: no beta > 0 fits; take the cluster's
      f = fit_class(cr, o, note, given);
      if (f)
        out.notes.push_back(
            fmt::format("{}: no beta > 0 fits the times (they do not grow with the "
                        "message size): beta taken from the topology",
                        link_class_name(link)));
    }
    if (!note.empty()) out.notes.push_back(fmt::format("{}: {}", link_class_name(link), note));
    if (f && sizes.size() < 2)
      out.notes.push_back(
          fmt::format("{}: one message size ({:.0f} B): beta from the topology ({:.4g} GB/s), "
                      "alpha fitted",
                      link_class_name(link), *sizes.begin(), o.bandwidth[link] / 1e9));
    if (!f && sizes.size() < 2)
      throw InputError(
          {}, "",
          fmt::format("cannot fit {}: every measurement has one message size ({:.0f} B), so a "
                      "per-message cost (alpha) and a per-byte cost (beta) cannot be told apart; "
                      "measure several sizes, or give --topology to take beta from the cluster's "
                      "links and fit alpha alone",
                      link_class_name(link), sizes.empty() ? 0.0 : *sizes.begin()));
    if (!f)
      throw InputError(
          {}, "",
          fmt::format("cannot fit {}: no positive per-byte cost (beta) fits these times in some message-size "
                      "range (they do not grow with the message size there, or a range has one size); try "
                      "--breakpoint none, or --topology to take beta from the cluster's links",
                      link_class_name(link)));
    FittedClass& cls = out.link[link];
    const Solution& s = f->s;
    // Rows the robust fit gave weight 0: reported, so a bad measurement is seen rather than silently
    // dragging the fit (or silently dropped).
    std::vector<std::string> outliers;
    for (size_t k = 0; k < cr.size() && k < s.weight.size(); ++k)
      if (s.weight[k] == 0) {
        const Measurement& m = ms[cr[k].index];
        out.points[cr[k].index].outlier = true;
        outliers.push_back(fmt::format("{}:{} ({} {:.0f} B, {} ranks: the fit is {:+.0f}% off)", m.file,
                                       m.line, m.algorithm, m.bytes, m.ranks, 100 * s.residual[k]));
      }
    if (!outliers.empty())
      out.notes.push_back(fmt::format(
          "{}: {} outlier{} left out of the fit (off by more than 4.685 robust "
          "standard deviations of the residuals): {}",
          link_class_name(link), outliers.size(), outliers.size() > 1 ? "s" : "", fmt::join(outliers, "; ")));
    const std::vector<size_t> rows_in = rows_per_range(cr, f->bp);
    for (size_t range = 0; range <= f->bp.size(); ++range) {
      size_t base = range * kPer;
      if (!s.touched[base + kBeta]) continue;
      FittedRange r;
      r.max_bytes = range < f->bp.size() ? f->bp[range] : kNone;
      r.alpha = s.x[base + kAlpha];
      r.beta = s.x[base + kBeta];
      r.gap = s.x[base + kGap];
      r.gamma = s.x[base + kGammaCol];
      r.alpha_measured = s.touched[base + kAlpha];
      r.gap_measured = s.touched[base + kGap];
      r.gamma_measured = s.touched[base + kGammaCol] && !f->folded;
      r.points = rows_in[range];
      cls.ranges.push_back(r);
    }
    if (cls.ranges.empty()) continue;
    cls.measured = true;
    cls.ranges.back().max_bytes = kNone;
    // A range no reducing row reached borrows gamma from its nearest measured neighbour below, else above.
    for (size_t i = 0; i < cls.ranges.size(); ++i)
      if (!cls.ranges[i].gamma_measured)
        for (size_t d = 1; d < cls.ranges.size(); ++d) {
          if (i >= d && cls.ranges[i - d].gamma_measured) {
            cls.ranges[i].gamma = cls.ranges[i - d].gamma;
            break;
          }
          if (i + d < cls.ranges.size() && cls.ranges[i + d].gamma_measured) {
            cls.ranges[i].gamma = cls.ranges[i + d].gamma;
            break;
          }
        }
    CommClass& mc = link == kIntraNode ? out.model.intra : out.model.inter;
    mc.ranges.clear();
    for (const FittedRange& r : cls.ranges) {
      CommRange range;
      range.max_bytes = r.max_bytes;
      range.alpha = Time::from_seconds(r.alpha);
      range.bandwidth = 1 / r.beta;
      mc.ranges.push_back(range);
    }
    if (cls.ranges.size() > 1) {
      std::vector<std::string> bps;
      for (double b : f->bp) bps.push_back(bytes_text(b));
      out.notes.push_back(fmt::format("{}: breakpoint{} {} ({})", link_class_name(link),
                                      bps.size() > 1 ? "s" : "", fmt::join(bps, ", "),
                                      o.breakpoints.empty() ? "lowest BIC of 1 to 3 ranges" : "given"));
    }
    for (size_t i = 0; i < cls.ranges.size(); ++i)
      if (cls.ranges[i].alpha_measured && cls.ranges[i].alpha == 0)
        out.notes.push_back(fmt::format(
            "{}: alpha {} fitted negative, fixed at 0", link_class_name(link),
            i + 1 < cls.ranges.size() ? fmt::format("up to {}", bytes_text(cls.ranges[i].max_bytes))
            : i > 0                   ? fmt::format("above {}", bytes_text(cls.ranges[i - 1].max_bytes))
                                      : std::string("")));
    if (link != reduce_class) {
      if (reduce_class >= 0 && reduce_rows[link] > 0)
        out.notes.push_back(fmt::format("{}: its gamma is not used (the {} class has more reducing rows)",
                                        link_class_name(link), link_class_name(reduce_class)));
      continue;
    }
    out.gamma_folded = f->folded;
    out.gamma_measured = !f->folded;
    out.model.reduce.clear();
    for (const FittedRange& r : cls.ranges)
      out.model.reduce.push_back({r.max_bytes, r.gamma, cpu_side ? r.gamma : 0});
    if (f->folded && sizes.size() < 2)
      out.notes.push_back("gamma not separable at one message size: the reductions' cost is inside alpha");
    else if (f->folded)
      out.notes.push_back(
          std::any_of(cr.begin(), cr.end(), [](const Row& r) { return r.terms.reduces.empty(); })
              ? "gamma folded into beta: with gamma free the fit was singular or gave a bandwidth <= 0 "
                "in some range, so the fitted bandwidths are effective ones that include the reduction"
              : "gamma folded into beta: every allreduce row has the same reduce/transfer ratio (e.g. "
                "one rank count and no ping-pong), so the fitted bandwidth is an effective one that "
                "includes the reduction");
    else if (s.clamped_gamma)
      out.notes.push_back(
          "gamma fitted negative in a range, fixed at 0: reductions cost nothing measurable there");
  }
  if (reduce_class < 0) out.notes.push_back("gamma not measured (no allreduce data): 0");

  std::vector<double> errors;
  for (size_t i = 0; i < ms.size(); ++i) {
    FitPoint& p = out.points[i];
    double t = model_time(terms_of(i), out);
    if (std::isnan(t)) continue;
    p.predicted = true;
    p.predicted_s = t;
    p.rel_error = (t - ms[i].time_s) / ms[i].time_s;
    if (p.in_fit && !p.outlier) errors.push_back(std::fabs(p.rel_error));
  }
  out.fit_points = errors.size();
  out.residual_median = median(errors);
  out.residual_max = errors.empty() ? 0 : *std::max_element(errors.begin(), errors.end());
  return out;
}

}  // namespace ddlsim
