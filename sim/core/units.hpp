#pragma once
// Units as types. Time is integer picoseconds (the one rounding point is Time::from_seconds); the other
// quantities are doubles in SI base units (bytes, bytes per second, FLOP, FLOP per second).
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ddlsim {

// Thrown when simulated time leaves its range, 2^62 picoseconds (about 53 days): a conversion from seconds
// out of that range (or NaN), an event past it (the engine checks every instant it reaches), or a product of
// Times that would wrap. Runs turn it into an InputError at the strategy being simulated; nothing past the
// limit is ever silently wrapped. Sums and differences are not checked one by one (they are the engine's
// hot path): every duration and every instant stays within 2^62 ps, so the sum of two fits int64.
class TimeOverflow : public std::overflow_error {
 public:
  TimeOverflow() : std::overflow_error("simulated time passes 2^62 picoseconds (about 53 days)") {}
};

// Throws TimeOverflow; out of line, so that the checked Time operations stay small enough to inline.
[[noreturn]] void throw_time_overflow();

// The range of simulated time and of any one duration: 2^62 ps.
inline constexpr int64_t kTimeLimitPs = int64_t{1} << 62;
// The longest simulated span in seconds (just under 2^62 ps, about 53 days).
inline constexpr double kMaxSimulatedSeconds = 4.6e6;

class Time {
 public:
  constexpr Time() = default;
  static constexpr Time ps(int64_t v) { return Time(v); }
  static constexpr Time ns(double v) { return from_seconds(v * 1e-9); }
  static constexpr Time us(double v) { return from_seconds(v * 1e-6); }
  static constexpr Time ms(double v) { return from_seconds(v * 1e-3); }
  // Rounds to the nearest picosecond: the only place where simulated time is rounded.
  // Throws TimeOverflow outside ±2^62 ps (or for NaN) instead of an undefined conversion.
  static constexpr Time from_seconds(double s) {
    double p = s * 1e12;
    if (!(p < 4611686018427387904.0 && p > -4611686018427387904.0)) [[unlikely]]
      throw_time_overflow();
    return Time(static_cast<int64_t>(p >= 0 ? p + 0.5 : p - 0.5));
  }
  static constexpr Time max() { return Time(INT64_MAX); }
  constexpr int64_t picoseconds() const { return ps_; }
  constexpr double seconds() const { return static_cast<double>(ps_) * 1e-12; }
  // Past the range of simulated time (Time::max(), "never", excepted).
  constexpr bool past_limit() const { return ps_ > kTimeLimitPs && ps_ != INT64_MAX; }
  constexpr Time operator+(Time o) const { return Time(ps_ + o.ps_); }
  constexpr Time operator-(Time o) const { return Time(ps_ - o.ps_); }
  constexpr Time& operator+=(Time o) { return *this = *this + o; }
  constexpr Time operator*(int64_t k) const {
    int64_t r = 0;
    if (__builtin_mul_overflow(ps_, k, &r)) [[unlikely]]
      throw_time_overflow();
    return Time(r);
  }
  constexpr auto operator<=>(const Time&) const = default;

 private:
  constexpr explicit Time(int64_t v) : ps_(v) {}
  int64_t ps_ = 0;
};

struct Bytes {
  double value = 0;
  constexpr auto operator<=>(const Bytes&) const = default;
};
struct Rate {  // bytes per second
  double value = 0;
  constexpr auto operator<=>(const Rate&) const = default;
};
struct Flops {
  double value = 0;
};
struct FlopRate {  // FLOP per second
  double value = 0;
};

constexpr Time transfer_time(Bytes n, Rate r) {
  return Time::from_seconds(n.value / r.value);
}

// Ranges the parsers enforce, so that what is derived from a value stays finite and inside simulated time:
// sizes at most 1 PiB (2^50 B; doubles are exact integers up to 2^53), bandwidths at least 1 B/s, FLOP counts
// finite and at most 1e21 (1 ZFLOP), FLOP rates finite.
inline constexpr double kMaxBytes = 1125899906842624.0;  // 1 PiB
inline constexpr double kMinRate = 1;                    // bytes per second
inline constexpr double kMaxFlops = 1e21;
// Latency-like options (alpha, link latency, transport overhead, Horovod's cycle_time, per-sample GPU cost):
// at most 1 s each. The configuration layer checks it per key.
inline constexpr double kMaxLatencySeconds = 1;

// Parsers for unit-suffixed strings. They throw ValueError with a one-line reason; a bare number is an error.
// Time: ps ns us ms s min h. Bytes: B kB KB MB GB TB KiB MiB GiB TiB, and bits b kb Mb Gb Tb.
// Rate: any bytes or bits unit followed by /s (25GB/s, 200Gb/s). Flops: FLOP kFLOP MFLOP GFLOP TFLOP PFLOP.
// FlopRate: the same with /s (19.5TFLOP/s).
Time parse_time(std::string_view text);
Bytes parse_bytes(std::string_view text);
Rate parse_rate(std::string_view text);
Flops parse_flops(std::string_view text);
FlopRate parse_flop_rate(std::string_view text);
// A plain number, maybe with a % suffix (0.85 or 85%); returns the fraction.
double parse_fraction(std::string_view text);

// Human formatting: 1.5 us, 64 MiB, 25 GB/s.
std::string format_time(Time t);
std::string format_bytes(Bytes b);
// Label of one message-size range i of a sorted list whose bounds are `max_bytes` (the last one unbounded):
// "any size" when there is one range, else "<= 2 KiB" for a bounded range and "> 4 MiB" for the last.
std::string format_size_range(const std::vector<double>& max_bytes, size_t i);
std::string format_rate(Rate r);

}  // namespace ddlsim
