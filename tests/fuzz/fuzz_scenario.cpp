// libFuzzer target: a scenario file through the whole configuration layer (YAML, topology and model look-up,
// every range check). Bad input must be an InputError (one located line, exit 2); anything else escaping
// (a logic_error, bad_alloc, a crash, a sanitizer report) is a finding.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "sim/config/scenario.hpp"
#include "sim/core/error.hpp"
#include "tests/fuzz/fuzz_targets.hpp"

namespace {
// The file each input is written to (the loader reads files), removed when the process ends.
struct ScratchFile {
  std::string path = "/tmp/ddlsim-fuzz-scenario-" + std::to_string(getpid()) + ".yaml";
  ~ScratchFile() { std::remove(path.c_str()); }
};
}  // namespace

int ddlsim_fuzz_scenario(const uint8_t* data, size_t size) {
  static const ScratchFile scratch;
  const std::string& path = scratch.path;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    ddlsim::load_scenario(path, {});
  } catch (const ddlsim::InputError&) {
  }
  return 0;
}

#ifdef DDLSIM_FUZZ_MAIN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return ddlsim_fuzz_scenario(data, size);
}
#endif
