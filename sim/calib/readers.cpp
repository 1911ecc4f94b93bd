#include "sim/calib/readers.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "sim/core/error.hpp"
#include "sim/core/input_file.hpp"
#include "sim/core/units.hpp"
#include "sim/train/collective_workload.hpp"

namespace ddlsim {

const char* kind_name(MeasurementKind k) {
  switch (k) {
    case MeasurementKind::PingPong:
      return "pingpong";
    case MeasurementKind::Allreduce:
      return "allreduce";
    case MeasurementKind::Bandwidth:
      return "bandwidth";
    case MeasurementKind::Step:
      return "step";
  }
  return "?";
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

namespace {

struct Line {
  int number;  // 1-based
  std::string text;
};

std::vector<Line> split_lines(const std::string& text) {
  std::vector<Line> out;
  std::istringstream in(text);
  int n = 0;
  for (std::string s; std::getline(in, s);) {
    if (!s.empty() && s.back() == '\r') s.pop_back();
    out.push_back({++n, s});
  }
  return out;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> tokens(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

std::optional<double> to_double(const std::string& s) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<int64_t> to_int(const std::string& s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

[[noreturn]] void fail_at(const std::string& file, int line, const std::string& message) {
  throw InputError({file, line, line > 0 ? 1 : 0}, "", message);
}

// What a measurement may say. Times outside 1 ns .. 10^6 s (11.6 days) are not a measured collective or step
// (a timer reads microseconds at best; a rate derived from a shorter time is meaningless, and the simulator's
// clock ends at 2^62 ps, 53 days). Sizes are those of scenarios (at most 1 PiB), rank counts at most 10^6.
constexpr double kMinTime = 1e-9, kMaxTime = 1e6;
constexpr const char* kTimeRange = "1 ns .. 1e6 s";
constexpr int64_t kMaxRanks = 1'000'000;

// A run measures each size once: a size already in `seen` (size -> line) is refused at `line`.
void once_per_run(std::map<double, int>& seen, double bytes, const std::string& file, int line) {
  if (auto [it, fresh] = seen.try_emplace(bytes, line); !fresh)
    fail_at(
        file, line,
        fmt::format("size {} B again (line {}): a file holds one run, each size once", bytes, it->second));
}

bool time_in_range(double t) {
  return t >= kMinTime && t <= kMaxTime;
}

// A line shown in a message: trimmed, and cut when long.
std::string excerpt(const std::string& text) {
  constexpr size_t kMax = 60;
  std::string t = trim(text);
  return t.size() <= kMax ? t : t.substr(0, kMax) + "...";
}

// True when `t` (trimmed) starts like a number, signed or not: a data row, however garbled the rest.
bool starts_with_number(const std::string& t) {
  size_t i = !t.empty() && (t[0] == '-' || t[0] == '+') ? 1 : 0;
  return i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]));
}

// ---------------------------------------------------------------------------------------------------------------
// ddlsim-kernels JSON (bench/kernels/README.md, format_version 1)

const std::vector<std::string> kKernelAlgorithms = {
    "ring", "ps", "ps-colocated", "rhd", "direct", "mpi_allreduce", "pingpong"};

// Line of the k-th `"algorithm"` key: the results are the only objects that carry one, in order.
std::vector<int> result_lines(const std::string& text) {
  std::vector<int> out;
  int line = 1;
  size_t pos = 0;
  const std::string key = "\"algorithm\"";
  for (size_t hit; (hit = text.find(key, pos)) != std::string::npos; pos = hit + key.size()) {
    line += static_cast<int>(std::count(text.begin() + static_cast<std::ptrdiff_t>(pos),
                                        text.begin() + static_cast<std::ptrdiff_t>(hit), '\n'));
    out.push_back(line);
  }
  return out;
}

class KernelsReader {
 public:
  KernelsReader(const std::string& text, const std::string& file) : text_(text), file_(file) {}

  std::vector<Measurement> read() {
    nlohmann::json doc;
    try {
      doc = nlohmann::json::parse(text_);
    } catch (const nlohmann::json::parse_error& e) {
      size_t byte = std::min<size_t>(e.byte == 0 ? 0 : e.byte - 1, text_.size());
      int line = 1 + static_cast<int>(
                         std::count(text_.begin(), text_.begin() + static_cast<std::ptrdiff_t>(byte), '\n'));
      std::string what = e.what();
      size_t s = what.find("syntax error");
      throw InputError({file_, line, 1}, "",
                       fmt::format("truncated or malformed ddlsim-kernels JSON: {}",
                                   s == std::string::npos ? what : what.substr(s)));
    } catch (const nlohmann::json::out_of_range& e) {  // a number past double's range: "... parsing '1e999'"
      std::string what = e.what();
      size_t q = what.find('\''), r = what.rfind('\'');
      std::string number = q != std::string::npos && r > q ? what.substr(q + 1, r - q - 1) : "";
      size_t at = number.empty() ? std::string::npos : text_.find(number);
      int line = at == std::string::npos
                     ? 1
                     : 1 + static_cast<int>(std::count(
                               text_.begin(), text_.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
      throw InputError(
          {file_, line, 1}, "",
          fmt::format("a number out of range in ddlsim-kernels JSON: {}", number.empty() ? what : number));
    }
    if (!doc.is_object()) fail(1, "", "expected a JSON object from ddlsim-kernels");
    std::string tool = doc.contains("tool") && doc["tool"].is_string() ? doc["tool"].get<std::string>() : "";
    if (tool != "ddlsim-kernels")
      fail(1, "tool",
           fmt::format("expected \"ddlsim-kernels\", got \"{}\" (only ddlsim-kernels JSON is read)", tool));
    int64_t version = integer(doc, "format_version", "format_version", 1);
    if (version != 1)
      fail(1, "format_version", fmt::format("format_version {} is not known (expected 1)", version));
    if (!doc.contains("results") || !doc["results"].is_array())
      fail(1, "results", "missing \"results\" (expected a list of kernel results)");
    std::vector<int> lines = result_lines(text_);
    std::vector<Measurement> out;
    const nlohmann::json& results = doc["results"];
    if (results.empty())
      fail(1, "results", "no results (the kernels wrote none: was every algorithm skipped?)");
    const std::string library = doc.contains("mpi_library") && doc["mpi_library"].is_string()
                                    ? doc["mpi_library"].get<std::string>()
                                    : "";
    for (size_t i = 0; i < results.size(); ++i) {
      out.push_back(result(results[i], fmt::format("results[{}]", i), i < lines.size() ? lines[i] : 0));
      out.back().library = library;
    }
    return out;
  }

 private:
  [[noreturn]] void fail(int line, const std::string& key, const std::string& message) const {
    throw InputError({file_, line, line > 0 ? 1 : 0}, key, message);
  }
  int64_t integer(const nlohmann::json& obj, const char* key, const std::string& path, int line) const {
    if (!obj.contains(key)) fail(line, path, "missing (expected an integer)");
    const nlohmann::json& v = obj[key];
    if (!v.is_number_integer()) fail(line, path, fmt::format("expected an integer, got {}", v.dump()));
    return v.get<int64_t>();
  }

  Measurement result(const nlohmann::json& r, const std::string& path, int line) const {
    if (!r.is_object()) fail(line, path, "expected an object with algorithm, ranks, bytes, times_s");
    Measurement m;
    m.file = file_;
    m.line = line;
    m.tool = "ddlsim-kernels";
    if (!r.contains("algorithm") || !r["algorithm"].is_string())
      fail(line, path + ".algorithm",
           "missing (expected one of ring, ps, ps-colocated, rhd, direct, mpi_allreduce, pingpong)");
    m.algorithm = r["algorithm"].get<std::string>();
    if (std::find(kKernelAlgorithms.begin(), kKernelAlgorithms.end(), m.algorithm) == kKernelAlgorithms.end())
      fail(line, path + ".algorithm",
           fmt::format(
               "unknown algorithm \"{}\" (ring, ps, ps-colocated, rhd, direct, mpi_allreduce, pingpong)",
               m.algorithm));
    m.kind = m.algorithm == "pingpong" ? MeasurementKind::PingPong : MeasurementKind::Allreduce;
    m.ranks = integer(r, "ranks", path + ".ranks", line);
    m.ranks_per_node = integer(r, "ranks_per_node", path + ".ranks_per_node", line);
    m.nodes = integer(r, "nodes", path + ".nodes", line);
    m.servers = integer(r, "servers", path + ".servers", line);
    if (m.ranks < 1 || m.ranks > kMaxRanks)
      fail(line, path + ".ranks", fmt::format("rank count {} out of range 1..{}", m.ranks, kMaxRanks));
    // ranks_per_node is the largest node's share (nodes may differ), so each other node holds 1 to that many.
    if (m.ranks_per_node < 1 || m.nodes < 1 || m.ranks_per_node > m.ranks || m.nodes > m.ranks ||
        m.ranks < m.ranks_per_node + m.nodes - 1 || m.ranks > m.ranks_per_node * m.nodes)
      fail(line, path,
           fmt::format("inconsistent placement: ranks {}, ranks_per_node {}, nodes {} (expected "
                       "ranks_per_node + nodes - 1 <= ranks <= ranks_per_node x nodes)",
                       m.ranks, m.ranks_per_node, m.nodes));
    if (m.algorithm == "ps" && (m.servers < 1 || m.servers >= m.ranks))
      fail(line, path + ".servers",
           fmt::format("ps needs 1 <= servers < ranks, got {} of {}", m.servers, m.ranks));
    if (!r.contains("bytes") || !r["bytes"].is_number() || r["bytes"].get<double>() < 0)
      fail(line, path + ".bytes", "missing or negative (expected the per-rank buffer size in bytes)");
    m.bytes = r["bytes"].get<double>();
    if (!(m.bytes >= 1 && m.bytes <= kMaxBytes) || std::floor(m.bytes) != m.bytes)
      fail(line, path + ".bytes",
           fmt::format("expected a whole number of bytes from 1 to 1 PiB (2^50), got {}", r["bytes"].dump()));
    if (!r.contains("times_s") || !r["times_s"].is_array() || r["times_s"].empty())
      fail(line, path + ".times_s",
           "missing or empty (expected a list of times in seconds, one per repetition)");
    for (const nlohmann::json& t : r["times_s"]) {
      if (!t.is_number() || t.get<double>() <= 0)
        fail(line, path + ".times_s", fmt::format("expected positive times in seconds, got {}", t.dump()));
      if (!time_in_range(t.get<double>()))
        fail(line, path + ".times_s",
             fmt::format("time {} s is outside {}: not a physically meaningful time", t.dump(), kTimeRange));
      m.reps.push_back(t.get<double>());
    }
    if (r.contains("check") && !(r["check"].is_string() && r["check"].get<std::string>() == "ok"))
      fail(line, path + ".check",
           fmt::format("the kernels found a wrong result ({}); a failed run cannot be calibrated against",
                       r["check"].dump()));
    m.time_s = median(m.reps);
    m.same_node = m.nodes == 1;
    return m;
  }

  const std::string& text_;
  std::string file_;
};

// ---------------------------------------------------------------------------------------------------------------
// nccl-tests all_reduce_perf stdout

class NcclReader {
 public:
  NcclReader(const std::string& text, const std::string& file, const ReaderOptions& o)
      : lines_(split_lines(text)), file_(file), options_(o) {}

  std::vector<Measurement> read() {
    static const std::regex kRank(R"(Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device)");
    static const std::regex kThreads(R"(nThread\s+(\d+)\s+nGpus\s+(\d+))");
    static const std::regex kTest(R"(Collective test starting:\s*(\S+))");
    std::map<int64_t, std::string> rank_host;
    std::map<int64_t, int> rank_line;
    std::map<double, int> size_line;  // size -> its row's line
    int64_t threads = 0, gpus = 0;
    bool trailer = false;
    struct Row {
      int line;
      double bytes, time_s, algbw, busbw;
    };
    std::vector<Row> rows;
    for (const Line& l : lines_) {
      std::string t = trim(l.text);
      if (t.empty()) continue;
      std::smatch m;
      if (t[0] == '#') {
        std::string body = trim(t.substr(1));
        if (std::regex_search(body, m, kRank)) {
          auto rank = to_int(m[1]);
          if (!rank || *rank >= kMaxRanks)
            fail_at(file_, l.number,
                    fmt::format("rank {} out of range 0..{}", std::string(m[1]), kMaxRanks - 1));
          if (rank_host.count(*rank))
            fail_at(file_, l.number, fmt::format("rank {} is listed twice under \"# Using devices\"", *rank));
          rank_host[*rank] = m[2];
          rank_line[*rank] = l.number;
        } else if (std::regex_search(body, m, kThreads)) {
          auto t = to_int(m[1]), g = to_int(m[2]);
          if (!t || !g || *t < 1 || *g < 1 || *t > kMaxRanks || *g > kMaxRanks || *t * *g > kMaxRanks)
            fail_at(file_, l.number,
                    fmt::format("nThread {} nGpus {}: expected 1 to {} ranks in all", std::string(m[1]),
                                std::string(m[2]), kMaxRanks));
          threads = *t;
          gpus = *g;
        } else if (std::regex_search(body, m, kTest)) {
          if (m[1] != "all_reduce_perf")
            fail_at(file_, l.number,
                    fmt::format("this is {} output; only all_reduce_perf is read", std::string(m[1])));
        } else if (starts_with(body, "Avg bus bandwidth")) {
          trailer = true;
        } else if (header_.empty()) {
          std::vector<std::string> cols = tokens(body);
          if (std::find(cols.begin(), cols.end(), "size") != cols.end() &&
              std::find(cols.begin(), cols.end(), "time") != cols.end())
            set_header(cols, l.number);
        }
        continue;
      }
      // NCCL's own log lines (NCCL_DEBUG=INFO: "host:pid:tid [0] NCCL INFO ...", "NCCL version ...") come
      // anywhere, also between the rows (lazy connection setup on the first collectives).
      if (t.find("NCCL INFO") != std::string::npos || t.find("NCCL WARN") != std::string::npos ||
          t.find("NCCL TRACE") != std::string::npos || starts_with(t, "NCCL version"))
        continue;
      // Before the column header (mpirun chatter) and after the trailer (MPI help aggregation): not data.
      // Data rows start with the size; between the header and the trailer nothing else may come.
      if (!starts_with_number(t)) {
        if (header_.empty() || trailer) continue;
        if (!rows.empty()) fail_not_a_row(l);
        if (pending_ == nullptr) pending_ = &l;
        continue;
      }
      if (header_.empty())
        fail_at(file_, l.number, "data row before the column header (expected \"#  size  count  type ...\")");
      if (trailer) fail_at(file_, l.number, "data row after the \"# Avg bus bandwidth\" trailer");
      std::vector<std::string> cells = tokens(t);
      if (cells.size() != header_.size())
        fail_at(file_, l.number,
                fmt::format("expected {} columns ({}), found {}: the row is truncated or garbled",
                            header_.size(), fmt::join(header_, " "), cells.size()));
      auto size = to_int(cells[col_size_]);
      auto time_us = to_double(cells[col_time_]);
      if (!size || *size < 0)
        fail_at(file_, l.number, fmt::format("size \"{}\" is not a byte count", cells[col_size_]));
      if (static_cast<double>(*size) > kMaxBytes)
        fail_at(file_, l.number, fmt::format("size {} B is over the limit of 1 PiB (2^50 B)", *size));
      if (!time_us || *time_us < 0)
        fail_at(file_, l.number,
                fmt::format("out-of-place time \"{}\" is not a number of microseconds", cells[col_time_]));
      if (col_redop_ >= 0 && cells[static_cast<size_t>(col_redop_)] == "none")
        fail_at(file_, l.number,
                "redop \"none\": this is not an allreduce (only all_reduce_perf output is read)");
      if (col_wrong_ >= 0) {
        const std::string& w = cells[static_cast<size_t>(col_wrong_)];
        auto wrong = to_int(w);
        if (wrong && *wrong > 0)
          fail_at(
              file_, l.number,
              fmt::format(
                  "#wrong = {}: nccl-tests found wrong results; a failed run cannot be calibrated against",
                  w));
      }
      if (pending_ != nullptr) fail_not_a_row(*pending_);
      // nccl-tests prints sizes under one element as 0 B rows, which run nothing: only first, as it does.
      if (*size == 0 && rows.empty()) continue;
      if (*size == 0)
        fail_at(
            file_, l.number,
            "size 0 B after larger sizes: expected a positive size (nccl-tests prints zero-byte rows only "
            "first, for sizes under one element)");
      Row r{l.number, static_cast<double>(*size), *time_us * 1e-6, 0, 0};
      if (col_algbw_ >= 0) r.algbw = to_double(cells[static_cast<size_t>(col_algbw_)]).value_or(0);
      if (col_busbw_ >= 0) r.busbw = to_double(cells[static_cast<size_t>(col_busbw_)]).value_or(0);
      if (r.time_s <= 0) fail_at(file_, l.number, "out-of-place time is zero");
      if (!time_in_range(r.time_s))
        fail_at(file_, l.number,
                fmt::format("out-of-place time {} us is outside {}: not a physically meaningful time",
                            cells[col_time_], kTimeRange));
      once_per_run(size_line, r.bytes, file_, l.number);
      rows.push_back(r);
    }
    int last = lines_.empty() ? 1 : lines_.back().number;
    if (header_.empty())
      fail_at(file_, last, "no column header \"#  size  count  type  redop ... time  algbw  busbw\" found");
    if (rows.empty()) fail_at(file_, last, "no result rows after the column header");
    if (!trailer)
      fail_at(file_, last,
              "file ends without the \"# Avg bus bandwidth\" trailer: the run was cut short (expected more "
              "rows, then the trailer)");

    int64_t ranks = 0, per_node = 0, nodes = 0;
    if (!rank_host.empty()) {
      ranks = rank_host.rbegin()->first + 1;
      if (static_cast<int64_t>(rank_host.size()) != ranks)
        fail_at(file_, rank_line.rbegin()->second,
                fmt::format("the \"# Using devices\" lines name {} ranks, but the highest is Rank {}: rank "
                            "lines are missing",
                            rank_host.size(), ranks - 1));
      std::map<std::string, int64_t> per_host;
      for (const auto& [r, h] : rank_host) ++per_host[h];
      nodes = static_cast<int64_t>(per_host.size());
      for (const auto& [h, n] : per_host) per_node = std::max(per_node, n);
    } else if (threads > 0 && gpus > 0) {
      ranks = threads * gpus;  // one process: -t threads x -g GPUs
      per_node = ranks;
      nodes = 1;
    }
    if (options_.ranks) ranks = *options_.ranks;
    if (options_.ranks_per_node) per_node = *options_.ranks_per_node;
    if (ranks <= 0)
      fail_at(file_, 1,
              "no \"# Using devices\" rank lines and no \"# nThread N nGpus G\" line: cannot tell how many "
              "ranks ran (pass --ranks)");
    if (per_node <= 0 || per_node > ranks) per_node = ranks;
    if (options_.ranks || options_.ranks_per_node) nodes = (ranks + per_node - 1) / per_node;
    check_bus_factor(ranks, rows);

    std::vector<Measurement> out;
    for (const Row& r : rows) {
      Measurement m;
      m.file = file_;
      m.line = r.line;
      m.tool = "nccl-tests";
      m.kind = MeasurementKind::Allreduce;
      m.algorithm = "nccl";
      m.ranks = ranks;
      m.ranks_per_node = per_node;
      m.nodes = nodes;
      m.bytes = r.bytes;
      m.time_s = r.time_s;
      m.reps = {r.time_s};
      m.same_node = nodes == 1;
      out.push_back(m);
    }
    return out;
  }

 private:
  void set_header(const std::vector<std::string>& cols, int line) {
    header_ = cols;
    auto find = [&](const std::string& name) -> int {
      auto it = std::find(cols.begin(), cols.end(), name);
      return it == cols.end() ? -1 : static_cast<int>(it - cols.begin());
    };
    col_size_ = static_cast<size_t>(find("size"));
    int time = find("time");  // the first one is out-of-place
    if (time < 0) fail_at(file_, line, "column header without \"time\"");
    col_time_ = static_cast<size_t>(time);
    col_redop_ = find("redop");
    col_algbw_ = find("algbw");
    col_busbw_ = find("busbw");
    col_wrong_ = find("#wrong");
  }

  template <class Rows>
  void check_bus_factor(int64_t p, const Rows& rows) const {
    // busbw = algbw * 2(p-1)/p for an allreduce: a cheap test that this is all_reduce_perf at this rank
    // count.
    if (p < 2) return;
    double expected = bus_factor(CollectiveKind::Allreduce, p);
    for (const auto& r : rows) {
      if (r.algbw < 1.0 || r.busbw <= 0) continue;  // two printed decimals: too coarse below 1 GB/s
      double ratio = r.busbw / r.algbw;
      if (std::fabs(ratio / expected - 1) > 0.02)
        fail_at(file_, r.line,
                fmt::format(
                    "busbw/algbw = {:.3f}, but an allreduce on {} ranks has 2(p-1)/p = {:.3f}: this is not "
                    "all_reduce_perf output, or the rank count is wrong",
                    ratio, p, expected));
      return;
    }
  }

  [[noreturn]] void fail_not_a_row(const Line& l) const {
    fail_at(file_, l.number,
            fmt::format("not a data row: \"{}\" (expected a row of {} columns starting with the size, or a "
                        "\"#\" comment)",
                        excerpt(l.text), header_.size()));
  }

  std::vector<Line> lines_;
  std::string file_;
  ReaderOptions options_;
  // The first line after the header that is no data row, while no row is read yet.
  const Line* pending_ = nullptr;
  std::vector<std::string> header_;
  size_t col_size_ = 0, col_time_ = 0;
  int col_redop_ = -1, col_algbw_ = -1, col_busbw_ = -1, col_wrong_ = -1;
};

// ---------------------------------------------------------------------------------------------------------------
// OSU micro-benchmarks: osu_latency, osu_bw, osu_allreduce

class OsuReader {
 public:
  OsuReader(const std::string& text, const std::string& file, const ReaderOptions& o)
      : lines_(split_lines(text)), file_(file), options_(o) {}

  std::vector<Measurement> read() {
    static const std::regex kTitle(R"(OSU (?:MPI|OpenSHMEM|UPC\+\+|NCCL)(?:-\S+)?\s+(.*?)\s*Test)");
    std::string test;
    int title_line = 0;
    size_t columns = 0;
    size_t iterations_column = 0;  // 0: none
    int header_line = 0;
    std::vector<Measurement> out;
    bool skipped_zero = false;
    std::map<double, int> size_line;  // size -> its row's line
    // The first line after the header that is no data row, while no row is read yet.
    const Line* pending = nullptr;
    for (const Line& l : lines_) {
      std::string t = trim(l.text);
      if (t.empty()) continue;
      if (t[0] == '#') {
        std::string body = trim(t.substr(1));
        std::smatch m;
        if (test.empty() && std::regex_search(body, m, kTitle)) {
          test = m[1];
          title_line = l.number;
          classify(test, l.number);
        } else if (starts_with(body, "Size")) {
          if (test.empty())
            fail_at(file_, l.number,
                    "column header before the \"# OSU MPI ... Test\" title line (expected the title first)");
          columns = header_columns(body);
          iterations_column = column_index(body, "Iterations");
          header_line = l.number;
          check_header(body, l.number);
        }
        continue;
      }
      if (!starts_with_number(t)) {
        // Launcher chatter before the column header; after it, OMB writes only rows.
        if (columns == 0) continue;
        if (!out.empty() || skipped_zero) fail_not_a_row(l);
        if (pending == nullptr) pending = &l;  // reported once a row follows (else: "no result rows")
        continue;
      }
      if (columns == 0) fail_at(file_, l.number, "data row before the \"# Size ...\" column header");
      if (pending != nullptr) fail_not_a_row(*pending);
      std::vector<std::string> cells = tokens(t);
      if (cells.size() != columns)
        fail_at(file_, l.number,
                fmt::format("expected {} columns (size, {}), found {}: the row is truncated or garbled",
                            columns, value_name(), cells.size()));
      auto size = to_int(cells[0]);
      auto value = to_double(cells[1]);
      if (!size || *size < 0)
        fail_at(file_, l.number, fmt::format("size \"{}\" is not a byte count", cells[0]));
      if (static_cast<double>(*size) > kMaxBytes)
        fail_at(file_, l.number, fmt::format("size {} B is over the limit of 1 PiB (2^50 B)", *size));
      if (!value || *value <= 0)
        fail_at(file_, l.number, fmt::format("{} \"{}\" is not a positive number", value_name(), cells[1]));
      // The other columns (minimum and maximum latency, iterations) are not used, but OMB writes numbers
      // there: a row with anything else is not its output.
      for (size_t c = 2; c < cells.size(); ++c) {
        if (c == iterations_column) {
          auto n = to_int(cells[c]);
          if (!n || *n <= 0)
            fail_at(file_, l.number, fmt::format("iterations \"{}\" is not a positive count", cells[c]));
        } else if (auto x = to_double(cells[c]); !x || *x < 0) {
          fail_at(file_, l.number,
                  fmt::format("column {} \"{}\" is not a non-negative number", c + 1, cells[c]));
        }
      }
      if (*size == 0) {
        // osu_latency starts at 0 B (no per-byte information: skipped); nothing else writes a 0-byte row.
        if (kind_ == MeasurementKind::PingPong && out.empty() && !skipped_zero) {
          skipped_zero = true;
          continue;
        }
        fail_at(file_, l.number,
                "size 0 B: expected a positive message size (only osu_latency's first row may be 0 B, and it "
                "is skipped)");
      }
      Measurement m = measurement(l.number, static_cast<double>(*size), *value);
      if (!time_in_range(m.time_s))
        fail_at(file_, l.number,
                kind_ == MeasurementKind::Bandwidth
                    ? fmt::format("bandwidth {} MB/s gives {:.3g} s per {}-byte message, outside {}: not a "
                                  "physically meaningful rate",
                                  cells[1], m.time_s, *size, kTimeRange)
                    : fmt::format("latency {} us is outside {}: not a physically meaningful time", cells[1],
                                  kTimeRange));
      once_per_run(size_line, m.bytes, file_, l.number);
      out.push_back(std::move(m));
    }
    int last = lines_.empty() ? 1 : lines_.back().number;
    if (test.empty()) fail_at(file_, 1, "no \"# OSU MPI ... Test\" title line");
    if (columns == 0)
      fail_at(file_, last,
              fmt::format("no \"# Size ...\" column header after the title on line {}", title_line));
    if (out.empty())
      fail_at(file_, last, fmt::format("no result rows after the column header on line {}", header_line));
    return out;
  }

 private:
  void classify(const std::string& test, int line) {
    if (test == "Latency") {
      kind_ = MeasurementKind::PingPong;
      algorithm_ = "osu_latency";
    } else if (test == "Bandwidth") {
      kind_ = MeasurementKind::Bandwidth;
      algorithm_ = "osu_bw";
    } else if (test == "Allreduce Latency") {
      kind_ = MeasurementKind::Allreduce;
      algorithm_ = "osu_allreduce";
    } else {
      fail_at(file_, line,
              fmt::format("OSU \"{} Test\" is not read (osu_latency, osu_bw and osu_allreduce are)", test));
    }
  }

  // Columns are separated by two or more spaces ("Avg Latency(us)" is one column); old versions used one
  // space between two columns, so never fewer than two.
  static std::vector<std::string> header_cells(const std::string& body) {
    static const std::regex kGap(R"(\s{2,})");
    std::vector<std::string> cells;
    for (std::sregex_token_iterator it(body.begin(), body.end(), kGap, -1), end; it != end; ++it)
      if (std::string c = trim(*it); !c.empty()) cells.push_back(std::move(c));
    return cells;
  }
  static size_t header_columns(const std::string& body) {
    return std::max<size_t>(header_cells(body).size(), 2);
  }
  // The index of the column named `name` (0: no such column; the size is column 0).
  static size_t column_index(const std::string& body, const std::string& name) {
    std::vector<std::string> cells = header_cells(body);
    auto it = std::find(cells.begin(), cells.end(), name);
    return it == cells.end() ? 0 : static_cast<size_t>(it - cells.begin());
  }

  void check_header(const std::string& body, int line) const {
    bool bandwidth = body.find("Bandwidth") != std::string::npos;
    bool latency = body.find("Latency") != std::string::npos;
    if (kind_ == MeasurementKind::Bandwidth && !bandwidth)
      fail_at(file_, line, "expected \"# Size  Bandwidth (MB/s)\" under a bandwidth test title");
    if (kind_ != MeasurementKind::Bandwidth && !latency)
      fail_at(file_, line,
              "expected \"# Size  Latency (us)\" or \"# Size  Avg Latency(us)\" under a latency test title");
    if (bandwidth && body.find("MB/s") == std::string::npos)
      fail_at(file_, line, "bandwidth column not in MB/s");
    if (latency && body.find("(us)") == std::string::npos) fail_at(file_, line, "latency column not in us");
  }

  std::string value_name() const {
    return kind_ == MeasurementKind::Bandwidth ? "bandwidth in MB/s" : "latency in us";
  }

  [[noreturn]] void fail_not_a_row(const Line& l) const {
    fail_at(file_, l.number,
            fmt::format("not a data row: \"{}\" (expected the size and the {}, or a \"#\" comment)",
                        excerpt(l.text), value_name()));
  }

  Measurement measurement(int line, double bytes, double value) const {
    Measurement m;
    m.file = file_;
    m.line = line;
    m.tool = "osu";
    m.kind = kind_;
    m.algorithm = algorithm_;
    m.bytes = bytes;
    // OMB's MB is 10^6 bytes.
    m.time_s = kind_ == MeasurementKind::Bandwidth ? bytes / (value * 1e6) : value * 1e-6;
    m.reps = {m.time_s};
    if (kind_ == MeasurementKind::Allreduce) {
      if (!options_.ranks)
        fail_at(file_, 1,
                "osu_allreduce output does not say how many ranks ran it: pass --ranks N (and "
                "--ranks-per-node R)");
      m.ranks = *options_.ranks;
      m.ranks_per_node = std::min(m.ranks, options_.ranks_per_node.value_or(1));
    } else {
      m.ranks = 2;
      m.ranks_per_node = options_.pt2pt_same_node ? 2 : 1;
    }
    m.nodes = (m.ranks + m.ranks_per_node - 1) / m.ranks_per_node;
    m.same_node = m.nodes == 1;
    return m;
  }

  std::vector<Line> lines_;
  std::string file_;
  ReaderOptions options_;
  MeasurementKind kind_ = MeasurementKind::PingPong;
  std::string algorithm_;
};

// ---------------------------------------------------------------------------------------------------------------
// Measured step times: gpus,step_time_s | gpus,throughput_samples_per_s [,batch_per_gpu]

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  for (std::string cell; std::getline(ss, cell, ',');) out.push_back(trim(cell));
  if (!line.empty() && line.back() == ',') out.push_back("");
  return out;
}

std::vector<Measurement> read_step_csv(const std::vector<Line>& lines, const std::string& file) {
  const std::vector<std::string> known = {"gpus", "step_time_s", "throughput_samples_per_s", "batch_per_gpu"};
  std::vector<std::string> header;
  int header_line = 0;
  std::vector<Measurement> out;
  for (const Line& l : lines) {
    std::string t = trim(l.text);
    if (t.empty() || t[0] == '#') continue;
    if (header.empty()) {
      header = split_csv(t);
      header_line = l.number;
      for (const std::string& c : header) {
        if (std::find(known.begin(), known.end(), c) != known.end()) continue;
        std::string hint = did_you_mean(c, known);
        fail_at(file, l.number,
                fmt::format("unknown column \"{}\"{} (expected gpus, step_time_s or "
                            "throughput_samples_per_s, optional batch_per_gpu)",
                            c, hint.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", hint)));
      }
      auto has = [&](const char* c) { return std::find(header.begin(), header.end(), c) != header.end(); };
      if (!has("gpus") || (!has("step_time_s") && !has("throughput_samples_per_s")))
        fail_at(file, l.number, "header needs gpus and step_time_s or throughput_samples_per_s");
      continue;
    }
    std::vector<std::string> cells = split_csv(t);
    if (cells.size() != header.size())
      fail_at(file, l.number,
              fmt::format("expected {} fields ({}), found {}", header.size(), fmt::join(header, ","),
                          cells.size()));
    Measurement m;
    m.file = file;
    m.line = l.number;
    m.tool = "step-csv";
    m.kind = MeasurementKind::Step;
    m.algorithm = "step";
    for (size_t i = 0; i < header.size(); ++i) {
      const std::string& c = header[i];
      if (c == "gpus" || c == "batch_per_gpu") {
        auto v = to_int(cells[i]);
        if (!v || *v < 1)
          fail_at(file, l.number, fmt::format("{}: expected a positive integer, got \"{}\"", c, cells[i]));
        if (c == "gpus" && *v > kMaxRanks)
          fail_at(file, l.number, fmt::format("gpus: {} out of range 1..{}", *v, kMaxRanks));
        (c == "gpus" ? m.ranks : m.batch_per_gpu) = *v;
      } else {
        auto v = to_double(cells[i]);
        if (!v || *v <= 0)
          fail_at(file, l.number, fmt::format("{}: expected a positive number, got \"{}\"", c, cells[i]));
        if (c == "step_time_s" && !time_in_range(*v))
          fail_at(file, l.number,
                  fmt::format("step_time_s: {} s is outside {}: not a physically meaningful time", cells[i],
                              kTimeRange));
        (c == "step_time_s" ? m.time_s : m.throughput) = *v;
      }
    }
    if (m.time_s == 0 && m.batch_per_gpu > 0) {
      m.time_s = static_cast<double>(m.ranks) * static_cast<double>(m.batch_per_gpu) / m.throughput;
      if (!time_in_range(m.time_s))
        fail_at(
            file, l.number,
            fmt::format("throughput_samples_per_s: {} samples/s at {} GPUs x {} per GPU is a step of {:.3g} "
                        "s, outside {}: not a physically meaningful time",
                        m.throughput, m.ranks, m.batch_per_gpu, m.time_s, kTimeRange));
    }
    if (m.time_s > 0) m.reps = {m.time_s};
    out.push_back(m);
  }
  if (header.empty()) fail_at(file, 1, "empty CSV (expected a header gpus,step_time_s)");
  if (out.empty()) fail_at(file, header_line, "no rows after the header");
  return out;
}

enum class Format { Kernels, Nccl, Osu, StepCsv };

Format detect(const std::string& text, const std::vector<Line>& lines, const std::string& file) {
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) fail_at(file, 1, "empty file (expected measurements)");
  if (text[first] == '{') return Format::Kernels;
  for (const Line& l : lines) {
    const std::string& s = l.text;
    if ((s.find("nThread") != std::string::npos && s.find("nGpus") != std::string::npos) ||
        (s.find("algbw") != std::string::npos && s.find("busbw") != std::string::npos))
      return Format::Nccl;
    if (s.find("# OSU ") != std::string::npos) return Format::Osu;
  }
  for (const Line& l : lines) {
    std::string t = trim(l.text);
    if (t.empty() || t[0] == '#') continue;
    if (starts_with(t, "gpus,") || t.find(",gpus") != std::string::npos) return Format::StepCsv;
    fail_at(
        file, l.number,
        "unrecognised measurement file: expected ddlsim-kernels JSON, nccl-tests all_reduce_perf output, OSU "
        "osu_latency/osu_bw/osu_allreduce output, or a CSV with gpus,step_time_s");
  }
  fail_at(file, 1, "no measurements found (only comments)");
}

}  // namespace

std::vector<Measurement> read_measurements_text(const std::string& text, const std::string& name,
                                                const ReaderOptions& options) {
  if (options.ranks && (*options.ranks < 1 || *options.ranks > kMaxRanks))
    throw InputError({"--ranks", 0, 0}, "",
                     fmt::format("rank count {} out of range 1..{}", *options.ranks, kMaxRanks));
  if (options.ranks_per_node && (*options.ranks_per_node < 1 || *options.ranks_per_node > kMaxRanks))
    throw InputError({"--ranks-per-node", 0, 0}, "",
                     fmt::format("rank count {} out of range 1..{}", *options.ranks_per_node, kMaxRanks));
  std::vector<Line> lines = split_lines(text);
  const Format format = detect(text, lines, name);
  // nccl-tests and OSU write lines of a few hundred characters; a much longer one is not their output, and
  // std::regex (whose matcher recurses per character) would overflow the stack on it (found by tests/fuzz).
  constexpr size_t kMaxTextLine = 4096;
  if (format == Format::Nccl || format == Format::Osu)
    for (const Line& l : lines)
      if (l.text.size() > kMaxTextLine)
        fail_at(
            name, l.number,
            fmt::format("a line of {} characters: nccl-tests and OSU lines are far shorter (at most {} read)",
                        l.text.size(), kMaxTextLine));
  switch (format) {
    case Format::Kernels:
      return KernelsReader(text, name).read();
    case Format::Nccl:
      return NcclReader(text, name, options).read();
    case Format::Osu:
      return OsuReader(text, name, options).read();
    case Format::StepCsv:
      return read_step_csv(lines, name);
  }
  return {};
}

std::vector<Measurement> read_measurements(const std::string& path, const ReaderOptions& options) {
  return read_measurements_text(read_input_file(path), path, options);
}

}  // namespace ddlsim
