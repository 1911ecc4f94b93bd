#pragma once
// Units as types. Time is integer picoseconds (the one rounding point is Time::from_seconds); the other
// quantities are doubles in SI base units (bytes, bytes per second, FLOP, FLOP per second).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ddlsim {

class Time {
 public:
  constexpr Time() = default;
  static constexpr Time ps(int64_t v) { return Time(v); }
  static constexpr Time ns(double v) { return from_seconds(v * 1e-9); }
  static constexpr Time us(double v) { return from_seconds(v * 1e-6); }
  static constexpr Time ms(double v) { return from_seconds(v * 1e-3); }
  // Rounds to the nearest picosecond: the only place where simulated time is rounded.
  static constexpr Time from_seconds(double s) {
    double p = s * 1e12;
    return Time(static_cast<int64_t>(p >= 0 ? p + 0.5 : p - 0.5));
  }
  static constexpr Time max() { return Time(INT64_MAX); }
  constexpr int64_t picoseconds() const { return ps_; }
  constexpr double seconds() const { return static_cast<double>(ps_) * 1e-12; }
  constexpr Time operator+(Time o) const { return Time(ps_ + o.ps_); }
  constexpr Time operator-(Time o) const { return Time(ps_ - o.ps_); }
  constexpr Time& operator+=(Time o) {
    ps_ += o.ps_;
    return *this;
  }
  constexpr Time operator*(int64_t k) const { return Time(ps_ * k); }
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
