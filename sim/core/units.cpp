#include "sim/core/units.hpp"

#include <fmt/format.h>
#include <charconv>
#include <cmath>
#include <span>
#include <utility>

#include "sim/core/error.hpp"

namespace ddlsim {

void throw_time_overflow() {
  throw TimeOverflow();
}
namespace {

struct Unit {
  std::string_view suffix;
  double factor;
};

// An example of a well-formed value of each kind, for messages.
std::string_view example(std::string_view what) {
  if (what == "time") return "\"1.5us\"";
  if (what == "size") return "\"64MiB\"";
  if (what == "fraction") return "0.9 or \"90%\"";
  if (what == "FLOP rate") return "\"312TFLOP/s\"";
  if (what == "FLOP count") return "\"4.1GFLOP\"";
  return "\"25GB/s\"";
}

// Splits "25GB/s" into 25 and "GB/s". Whitespace between number and unit is allowed.
std::pair<double, std::string_view> split_number(std::string_view text, std::string_view what) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr == text.data())
    throw ValueError(fmt::format("expected a {} like {}, got \"{}\"", what, example(what), text));
  if (!std::isfinite(value)) throw ValueError(fmt::format("{} \"{}\" is not finite", what, text));
  std::string_view rest(ptr, static_cast<size_t>(text.data() + text.size() - ptr));
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  return {value, rest};
}

double lookup(std::string_view text, std::string_view what, std::span<const Unit> units,
              std::string_view examples) {
  auto [value, suffix] = split_number(text, what);
  if (suffix.empty()) throw ValueError(fmt::format("{} \"{}\" needs a unit ({})", what, text, examples));
  for (const Unit& u : units)
    if (u.suffix == suffix) return value * u.factor;
  throw ValueError(fmt::format("unknown {} unit \"{}\" (use {})", what, suffix, examples));
}

constexpr Unit kByteUnits[] = {
    {"B", 1},        {"kB", 1e3},     {"KB", 1e3},        {"MB", 1e6},           {"GB", 1e9},
    {"TB", 1e12},    {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
    {"b", 0.125},    {"kb", 125.0},   {"Kb", 125.0},      {"Mb", 1.25e5},        {"Gb", 1.25e8},
    {"Tb", 1.25e11}, {"Kib", 128.0},  {"Mib", 131072.0},  {"Gib", 134217728.0}};

double byte_factor(std::string_view suffix) {
  for (const Unit& u : kByteUnits)
    if (u.suffix == suffix) return u.factor;
  return -1;
}

constexpr Unit kFlopUnits[] = {{"FLOP", 1},    {"kFLOP", 1e3},  {"MFLOP", 1e6},
                               {"GFLOP", 1e9}, {"TFLOP", 1e12}, {"PFLOP", 1e15}};

}  // namespace

Time parse_time(std::string_view text) {
  static constexpr Unit kTimeUnits[] = {{"ps", 1e-12}, {"ns", 1e-9}, {"us", 1e-6}, {"µs", 1e-6},
                                        {"ms", 1e-3},  {"s", 1},     {"min", 60},  {"h", 3600}};
  double s = lookup(text, "time", kTimeUnits, "ps, ns, us, ms, s, min, h");
  if (s < 0) throw ValueError(fmt::format("time \"{}\" is negative", text));
  // Simulated time spans at most 2^62 picoseconds (about 53 days).
  if (!(s < kMaxSimulatedSeconds))
    throw ValueError(fmt::format("time \"{}\" is too long (the limit is about 53 days)", text));
  return Time::from_seconds(s);
}

Bytes parse_bytes(std::string_view text) {
  auto [value, suffix] = split_number(text, "size");
  if (suffix.empty())
    throw ValueError(fmt::format("size \"{}\" needs a unit (B, kB, MB, GB, KiB, MiB, GiB, b, Gb)", text));
  double f = byte_factor(suffix);
  if (f < 0)
    throw ValueError(
        fmt::format("unknown size unit \"{}\" (use B, kB, MB, GB, KiB, MiB, GiB, b, Gb)", suffix));
  if (value < 0) throw ValueError(fmt::format("size \"{}\" is negative", text));
  if (!std::isfinite(value * f)) throw ValueError(fmt::format("size \"{}\" is too large", text));
  if (value * f > kMaxBytes) throw ValueError(fmt::format("size \"{}\" is over the limit of 1 PiB", text));
  return Bytes{value * f};
}

Rate parse_rate(std::string_view text) {
  auto [value, suffix] = split_number(text, "bandwidth");
  std::string_view unit = suffix;
  if (unit.size() > 2 && unit.substr(unit.size() - 2) == "/s")
    unit.remove_suffix(2);
  else if (unit.size() > 2 && unit.substr(unit.size() - 2) == "ps")
    unit.remove_suffix(2);  // Gbps
  else
    throw ValueError(fmt::format("bandwidth \"{}\" needs a unit per second (GB/s, Gb/s, MiB/s)", text));
  double f = byte_factor(unit);
  if (f < 0) throw ValueError(fmt::format("unknown bandwidth unit \"{}\" (use GB/s, Gb/s, MiB/s)", suffix));
  if (value <= 0) throw ValueError(fmt::format("bandwidth \"{}\" must be positive", text));
  if (!std::isfinite(value * f)) throw ValueError(fmt::format("bandwidth \"{}\" is too large", text));
  if (value * f < kMinRate)
    throw ValueError(fmt::format("bandwidth \"{}\" is below the minimum of 1 B/s", text));
  return Rate{value * f};
}

Flops parse_flops(std::string_view text) {
  double v = lookup(text, "FLOP count", kFlopUnits, "FLOP, kFLOP, MFLOP, GFLOP, TFLOP");
  if (v < 0) throw ValueError(fmt::format("FLOP count \"{}\" is negative", text));
  if (!(v <= kMaxFlops))
    throw ValueError(fmt::format("FLOP count \"{}\" is over the limit of 1e21 FLOP (1 ZFLOP)", text));
  return Flops{v};
}

FlopRate parse_flop_rate(std::string_view text) {
  auto [value, suffix] = split_number(text, "FLOP rate");
  if (suffix.size() < 3 || suffix.substr(suffix.size() - 2) != "/s")
    throw ValueError(fmt::format("FLOP rate \"{}\" needs a unit like TFLOP/s", text));
  suffix.remove_suffix(2);
  for (const Unit& u : kFlopUnits)
    if (u.suffix == suffix) {
      if (value <= 0) throw ValueError(fmt::format("FLOP rate \"{}\" must be positive", text));
      if (!std::isfinite(value * u.factor))
        throw ValueError(fmt::format("FLOP rate \"{}\" is too large", text));
      return FlopRate{value * u.factor};
    }
  throw ValueError(fmt::format("unknown FLOP rate unit \"{}/s\" (use GFLOP/s, TFLOP/s)", suffix));
}

double parse_fraction(std::string_view text) {
  auto [value, suffix] = split_number(text, "fraction");
  if (suffix == "%") return value / 100.0;
  if (!suffix.empty()) throw ValueError(fmt::format("expected a number or a percentage, got \"{}\"", text));
  return value;
}

std::string format_time(Time t) {
  double s = t.seconds();
  double a = std::fabs(s);
  if (a == 0) return "0 s";
  if (a < 1e-6) return fmt::format("{:.4g} ns", s * 1e9);
  if (a < 1e-3) return fmt::format("{:.4g} us", s * 1e6);
  if (a < 1) return fmt::format("{:.4g} ms", s * 1e3);
  return fmt::format("{:.4g} s", s);
}

std::string format_bytes(Bytes b) {
  double v = b.value;
  if (v >= 1073741824.0) return fmt::format("{:.4g} GiB", v / 1073741824.0);
  if (v >= 1048576.0) return fmt::format("{:.4g} MiB", v / 1048576.0);
  if (v >= 1024.0) return fmt::format("{:.4g} KiB", v / 1024.0);
  return fmt::format("{:.4g} B", v);
}

std::string format_size_range(const std::vector<double>& max_bytes, size_t i) {
  if (max_bytes.size() == 1) return "any size";
  if (i + 1 < max_bytes.size()) return "<= " + format_bytes(Bytes{max_bytes[i]});
  return "> " + format_bytes(Bytes{max_bytes[i - 1]});
}

std::string format_rate(Rate r) {
  return fmt::format("{:.4g} GB/s", r.value / 1e9);
}

}  // namespace ddlsim
