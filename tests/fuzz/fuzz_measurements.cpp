// libFuzzer target: the measurement readers (ddlsim-kernels JSON, nccl-tests, OSU, step CSV; the format is
// detected from the content). Bad input must be an InputError; what they accept must be finite.
#include <cmath>
#include <cstdint>
#include <string>

#include "sim/calib/readers.hpp"
#include "sim/core/error.hpp"
#include "tests/fuzz/fuzz_targets.hpp"

int ddlsim_fuzz_measurements(const uint8_t* data, size_t size) {
  try {
    for (const ddlsim::Measurement& m :
         ddlsim::read_measurements_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz.txt"))
      if (!std::isfinite(m.time_s) || !std::isfinite(m.bytes) || m.time_s < 0 || m.bytes < 0)
        __builtin_trap();
  } catch (const ddlsim::InputError&) {
  }
  return 0;
}

#ifdef DDLSIM_FUZZ_MAIN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return ddlsim_fuzz_measurements(data, size);
}
#endif
