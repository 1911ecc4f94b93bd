// libFuzzer target: the unit parsers (25GB/s, 1.5us, 64MiB, 312TFLOP/s, 85%). A bad value must be a
// ValueError; a value they accept must be finite, and not negative but for a fraction.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sim/core/error.hpp"
#include "sim/core/units.hpp"
#include "tests/fuzz/fuzz_targets.hpp"

namespace {
// `signed_ok`: a fraction may be negative here (each key range-checks it: 0..1, or above 0).
template <class F>
void check(F parse, std::string_view text, bool signed_ok = false) {
  try {
    double v = parse(text);
    if (!std::isfinite(v) || (v < 0 && !signed_ok)) std::abort();
  } catch (const ddlsim::ValueError&) {
  }
}
}  // namespace

int ddlsim_fuzz_units(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  using namespace ddlsim;
  check([](std::string_view t) { return parse_time(t).seconds(); }, text);
  check([](std::string_view t) { return parse_bytes(t).value; }, text);
  check([](std::string_view t) { return parse_rate(t).value; }, text);
  check([](std::string_view t) { return parse_flops(t).value; }, text);
  check([](std::string_view t) { return parse_flop_rate(t).value; }, text);
  check([](std::string_view t) { return parse_fraction(t); }, text, true);
  return 0;
}

#ifdef DDLSIM_FUZZ_MAIN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return ddlsim_fuzz_units(data, size);
}
#endif
