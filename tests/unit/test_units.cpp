// Units as types: the parsers accept only unit-suffixed quantities (GB = 1e9, GiB = 2^30, b = bit, B = byte)
// and Time rounds to the nearest picosecond in exactly one place (Time::from_seconds). And the core's one
// random-number helper (sim/core/random.hpp).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/core/random.hpp"
#include "sim/core/units.hpp"

namespace ddlsim {
namespace {

// Relative comparison for quantities that go through a multiplication by a unit factor.
void expect_rel(double got, double want, double rel = 1e-12) {
  EXPECT_NEAR(got, want, rel * std::abs(want)) << "got " << got << ", want " << want;
}

// The ValueError message, or "" (and a failure) when the parser accepted the text.
template <class F>
std::string error_of(F&& parse, const std::string& text) {
  try {
    parse(text);
  } catch (const ValueError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ValueError for \"" << text << "\"";
  return "";
}

TEST(ParseTime, EveryUnit) {
  EXPECT_EQ(parse_time("7ps").picoseconds(), 7);
  EXPECT_EQ(parse_time("130ns").picoseconds(), 130'000);
  EXPECT_EQ(parse_time("1.5us").picoseconds(), 1'500'000);
  EXPECT_EQ(parse_time("1.5µs").picoseconds(), 1'500'000);
  EXPECT_EQ(parse_time("2ms").picoseconds(), 2'000'000'000);
  EXPECT_EQ(parse_time("3s").picoseconds(), 3'000'000'000'000);
  EXPECT_EQ(parse_time("2min").picoseconds(), 120'000'000'000'000);
  EXPECT_EQ(parse_time("1h").picoseconds(), 3'600'000'000'000'000);
  EXPECT_EQ(parse_time("0s").picoseconds(), 0);
}

TEST(ParseTime, WhitespaceAndExponent) {
  EXPECT_EQ(parse_time(" 1.5 us ").picoseconds(), 1'500'000);
  EXPECT_EQ(parse_time("1e3ns").picoseconds(), 1'000'000);
}

TEST(ParseTime, RoundsToNearestPicosecond) {
  EXPECT_EQ(parse_time("0.3ps").picoseconds(), 0);
  EXPECT_EQ(parse_time("1.7ps").picoseconds(), 2);
  EXPECT_EQ(parse_time("0.0012ns").picoseconds(), 1);  // 1.2 ps
}

TEST(ParseTime, Errors) {
  auto parse = [](const std::string& s) { return parse_time(s); };
  EXPECT_NE(error_of(parse, "1").find("needs a unit"), std::string::npos);  // bare number
  EXPECT_NE(error_of(parse, "1.5").find("needs a unit"), std::string::npos);
  EXPECT_NE(error_of(parse, "1.5usec").find("unknown"), std::string::npos);
  EXPECT_NE(error_of(parse, "-1us").find("negative"), std::string::npos);
  EXPECT_NE(error_of(parse, "us").find("expected"), std::string::npos);
  EXPECT_FALSE(error_of(parse, "").empty());
  EXPECT_FALSE(error_of(parse, "inf s").empty());
  EXPECT_FALSE(error_of(parse, "nan s").empty());
}

TEST(ParseTime, OutOfRangeIsAnError) {
  // Simulated time spans at most 2^62 ps ≈ 53.4 days (4.6e6 s below it), so that an instant plus a duration
  // fits int64. Beyond that, parse_time throws instead of wrapping (1e7 s = 1e19 ps, 1300 h = 4.68e6 s).
  EXPECT_THROW(parse_time("1e7s"), ValueError);
  EXPECT_THROW(parse_time("1300h"), ValueError);
  EXPECT_THROW(parse_time("1e30ps"), ValueError);
  EXPECT_NO_THROW(parse_time("1200h"));  // 4.32e18 ps < 2^62 = 4.61e18
  EXPECT_GT(parse_time("1200h").picoseconds(), 0);
}

TEST(ParseBytes, DecimalVsBinary) {
  EXPECT_EQ(parse_bytes("1B").value, 1.0);
  EXPECT_EQ(parse_bytes("1kB").value, 1e3);
  EXPECT_EQ(parse_bytes("1KB").value, 1e3);
  EXPECT_EQ(parse_bytes("1MB").value, 1e6);
  EXPECT_EQ(parse_bytes("1GB").value, 1e9);
  EXPECT_EQ(parse_bytes("1TB").value, 1e12);
  EXPECT_EQ(parse_bytes("1KiB").value, 1024.0);
  EXPECT_EQ(parse_bytes("1MiB").value, 1048576.0);
  EXPECT_EQ(parse_bytes("1GiB").value, 1073741824.0);  // 2^30, not 1e9
  EXPECT_EQ(parse_bytes("1TiB").value, 1099511627776.0);
  EXPECT_EQ(parse_bytes("64MiB").value, 64.0 * 1048576.0);
  expect_rel(parse_bytes("100MB").value, 1e8);
  EXPECT_NE(parse_bytes("1GB").value, parse_bytes("1GiB").value);
}

TEST(ParseBytes, BitsAreAnEighthOfBytes) {
  EXPECT_EQ(parse_bytes("8b").value, 1.0);
  EXPECT_EQ(parse_bytes("1kb").value, 125.0);
  expect_rel(parse_bytes("1Mb").value, 1.25e5);
  expect_rel(parse_bytes("200Gb").value, 25e9);  // 200e9 bits / 8
  expect_rel(parse_bytes("1Tb").value, 1.25e11);
  EXPECT_EQ(parse_bytes("1Gib").value, 1073741824.0 / 8);
}

TEST(ParseBytes, Errors) {
  auto parse = [](const std::string& s) { return parse_bytes(s); };
  EXPECT_NE(error_of(parse, "64").find("needs a unit"), std::string::npos);
  EXPECT_NE(error_of(parse, "64XB").find("unknown"), std::string::npos);
  EXPECT_NE(error_of(parse, "64gb").find("unknown"), std::string::npos);  // case matters: g is not a prefix
  EXPECT_NE(error_of(parse, "-1MB").find("negative"), std::string::npos);
  EXPECT_FALSE(error_of(parse, "MB").empty());
}

TEST(ParseBytes, OverflowIsAnError) {
  // The range check applies after the unit: 1e308 TB = 1e320 bytes is not a finite double.
  EXPECT_THROW(parse_bytes("1e308TB"), ValueError);
  EXPECT_THROW(parse_rate("1e308TB/s"), ValueError);
}

TEST(ParseRate, BytesAndBitsPerSecond) {
  expect_rel(parse_rate("25GB/s").value, 25e9);
  expect_rel(parse_rate("200Gb/s").value, 25e9);  // 200 Gbit/s = 25 GB/s
  expect_rel(parse_rate("100Gb/s").value, 12.5e9);
  expect_rel(parse_rate("100Gbps").value, 12.5e9);
  expect_rel(parse_rate("1GiB/s").value, 1073741824.0);
  expect_rel(parse_rate("1.5 MB/s").value, 1.5e6);
  expect_rel(parse_rate("400MiB/s").value, 400 * 1048576.0);
  expect_rel(parse_rate("1TB/s").value, 1e12);
  EXPECT_NE(parse_rate("1GB/s").value, parse_rate("1GiB/s").value);
  EXPECT_NE(parse_rate("1GB/s").value, parse_rate("1Gb/s").value);
}

TEST(ParseRate, Errors) {
  auto parse = [](const std::string& s) { return parse_rate(s); };
  EXPECT_NE(error_of(parse, "25").find("needs a unit"), std::string::npos);  // bare number
  EXPECT_NE(error_of(parse, "25GB").find("per second"), std::string::npos);  // a size, not a rate
  EXPECT_NE(error_of(parse, "25GBs").find("per second"), std::string::npos);
  EXPECT_NE(error_of(parse, "25XB/s").find("unknown"), std::string::npos);    // unknown unit
  EXPECT_NE(error_of(parse, "-25GB/s").find("positive"), std::string::npos);  // negative bandwidth
  EXPECT_NE(error_of(parse, "0GB/s").find("positive"), std::string::npos);
  EXPECT_FALSE(error_of(parse, "GB/s").empty());
  EXPECT_FALSE(error_of(parse, "inf GB/s").empty());
  EXPECT_FALSE(error_of(parse, "25GB/s/s").empty());
}

TEST(ParseFlops, Units) {
  EXPECT_EQ(parse_flops("1FLOP").value, 1.0);
  EXPECT_EQ(parse_flops("4kFLOP").value, 4e3);
  EXPECT_EQ(parse_flops("4MFLOP").value, 4e6);
  expect_rel(parse_flops("4.1GFLOP").value, 4.1e9);
  expect_rel(parse_flops("1.5TFLOP").value, 1.5e12);
  expect_rel(parse_flops("2PFLOP").value, 2e15);
  auto parse = [](const std::string& s) { return parse_flops(s); };
  EXPECT_NE(error_of(parse, "1000").find("needs a unit"), std::string::npos);
  EXPECT_NE(error_of(parse, "1GFLOPS").find("unknown"), std::string::npos);
  EXPECT_NE(error_of(parse, "-1GFLOP").find("negative"), std::string::npos);
}

TEST(ParseFlopRate, Units) {
  expect_rel(parse_flop_rate("19.5TFLOP/s").value, 19.5e12);
  expect_rel(parse_flop_rate("312 TFLOP/s").value, 312e12);
  expect_rel(parse_flop_rate("1PFLOP/s").value, 1e15);
  expect_rel(parse_flop_rate("900GFLOP/s").value, 9e11);
  auto parse = [](const std::string& s) { return parse_flop_rate(s); };
  EXPECT_FALSE(error_of(parse, "19.5").empty());
  EXPECT_FALSE(error_of(parse, "19.5TFLOP").empty());
  EXPECT_FALSE(error_of(parse, "19.5TFLOPS").empty());
  EXPECT_NE(error_of(parse, "19.5XFLOP/s").find("unknown"), std::string::npos);
  EXPECT_NE(error_of(parse, "-1TFLOP/s").find("positive"), std::string::npos);
  EXPECT_NE(error_of(parse, "0TFLOP/s").find("positive"), std::string::npos);
}

TEST(ParseFraction, NumberOrPercent) {
  EXPECT_DOUBLE_EQ(parse_fraction("0.85"), 0.85);
  EXPECT_DOUBLE_EQ(parse_fraction("85%"), 0.85);
  EXPECT_DOUBLE_EQ(parse_fraction("100 %"), 1.0);
  EXPECT_THROW(parse_fraction("85 percent"), ValueError);
  EXPECT_THROW(parse_fraction("x"), ValueError);
}

TEST(TimeType, ConstructorsAgree) {
  EXPECT_EQ(Time::ns(1), Time::ps(1000));
  EXPECT_EQ(Time::us(1), Time::ps(1'000'000));
  EXPECT_EQ(Time::ms(1), Time::ps(1'000'000'000));
  EXPECT_EQ(Time::from_seconds(1), Time::ps(1'000'000'000'000));
  EXPECT_EQ(Time::us(1.5).picoseconds(), 1'500'000);
  EXPECT_DOUBLE_EQ(Time::ps(2'500'000).seconds(), 2.5e-6);
}

TEST(TimeType, RoundsHalfAwayFromZero) {
  // Values chosen well away from .5 so the double product s * 1e12 is unambiguous, plus exact halves in ns.
  EXPECT_EQ(Time::from_seconds(1.25e-12).picoseconds(), 1);
  EXPECT_EQ(Time::from_seconds(1.75e-12).picoseconds(), 2);
  EXPECT_EQ(Time::from_seconds(-1.25e-12).picoseconds(), -1);
  EXPECT_EQ(Time::from_seconds(-1.75e-12).picoseconds(), -2);
  EXPECT_EQ(Time::ns(0.0004).picoseconds(), 0);
  EXPECT_EQ(Time::ns(0.0006).picoseconds(), 1);
  EXPECT_EQ(Time::ns(0.0025).picoseconds(), 3);    // 2.5 ps: half rounds up
  EXPECT_EQ(Time::ns(-0.0025).picoseconds(), -3);  // and away from zero below it
  EXPECT_EQ(Time::from_seconds(0).picoseconds(), 0);
}

TEST(TimeType, Arithmetic) {
  Time a = Time::us(3), b = Time::us(1);
  EXPECT_EQ(a + b, Time::us(4));
  EXPECT_EQ(a - b, Time::us(2));
  EXPECT_EQ(b * 3, a);
  Time c = a;
  c += b;
  EXPECT_EQ(c, Time::us(4));
  EXPECT_LT(b, a);
  EXPECT_GT(Time::max(), Time::from_seconds(1e6));  // a million seconds (~11.6 days) still fits
  EXPECT_EQ(Time().picoseconds(), 0);
}

TEST(TimeType, TransferTime) {
  // n/B: 1 GB at 25 GB/s = 40 ms
  EXPECT_EQ(transfer_time(Bytes{1e9}, Rate{25e9}), Time::ms(40));
  // 100 MB at 200 Gb/s (25 GB/s) = 4 ms
  EXPECT_EQ(transfer_time(parse_bytes("100MB"), parse_rate("200Gb/s")), Time::ms(4));
  // one byte at 3 B/s = 0.333... s, rounded to the nearest picosecond
  EXPECT_EQ(transfer_time(Bytes{1}, Rate{3}).picoseconds(), 333'333'333'333);
}

TEST(Format, HumanReadable) {
  EXPECT_EQ(format_time(Time::us(1.5)), "1.5 us");
  EXPECT_EQ(format_time(Time()), "0 s");
  EXPECT_EQ(format_bytes(Bytes{64.0 * 1048576.0}), "64 MiB");
  EXPECT_EQ(format_rate(Rate{25e9}), "25 GB/s");
}

// mt19937_64_first_two(s) is std::mt19937_64(s)'s first two outputs, bit for bit, for seeds of every shape
// (0, all ones, powers of two, and 20,000 mixed seeds as the training loop makes them).
TEST(Random, FirstTwoOutputsAreStdMt19937_64s) {
  std::vector<uint64_t> seeds = {0, 1, ~0ULL, 5489};
  for (int b = 0; b < 64; ++b) seeds.push_back(1ULL << b);
  for (uint64_t k = 0; k < 20000; ++k)
    seeds.push_back(k * 0x9e3779b97f4a7c15ULL ^ (k << 20) ^ (k % 7) ^ (k << 56));
  for (uint64_t s : seeds) {
    std::mt19937_64 reference(s);
    uint64_t a = reference(), b = reference();
    auto [x, y] = mt19937_64_first_two(s);
    ASSERT_EQ(x, a) << s;
    ASSERT_EQ(y, b) << s;
  }
}

// did_you_mean: the candidate within an edit distance of max(2, |word| / 3) (the closest), else the one
// candidate the word starts or that starts the word (3 letters at least), else none.
TEST(DidYouMean, CloseSpellingThenTheOnePrefix) {
  const std::vector<std::string> keys = {"bucket_size", "overlap", "alpha_intra", "alpha_inter"};
  EXPECT_EQ(did_you_mean("buket_size", keys), "bucket_size");  // one letter dropped
  EXPECT_EQ(did_you_mean("bucket", keys), "bucket_size");      // distance 5, but the start of one key
  EXPECT_EQ(did_you_mean("overlapping", keys), "overlap");     // starts with a key
  EXPECT_EQ(did_you_mean("alpha", keys), "");                  // the start of two keys: no single guess
  EXPECT_EQ(did_you_mean("ov", keys), "");                     // too short to guess from
  EXPECT_EQ(did_you_mean("channels", keys), "");
}

}  // namespace
}  // namespace ddlsim
