// libFuzzer target: the unit parsers (25GB/s, 1.5us, 64MiB, 312TFLOP/s, 85%). A bad value must be a
// ValueError; a value they accept must be finite and not negative.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sim/core/error.hpp"
#include "sim/core/units.hpp"
#include "tests/fuzz/fuzz_targets.hpp"

namespace {
template <class F>
void check(F parse, std::string_view text) {
  try {
    double v = parse(text);
    if (!std::isfinite(v) || v < 0) std::abort();
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
  check([](std::string_view t) { return parse_fraction(t); }, text);
  return 0;
}

#ifdef DDLSIM_FUZZ_MAIN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return ddlsim_fuzz_units(data, size);
}
#endif
