// libFuzzer target: the CSV reader of measured data. Bad input must be an InputError naming the line.
#include <cstdint>
#include <string>

#include "sim/core/error.hpp"
#include "sim/io/csv.hpp"
#include "tests/fuzz/fuzz_targets.hpp"

int ddlsim_fuzz_csv(const uint8_t* data, size_t size) {
  try {
    ddlsim::CsvTable t =
        ddlsim::parse_csv(std::string(reinterpret_cast<const char*>(data), size), "fuzz.csv");
    for (const auto& row : t.rows)
      if (row.size() != t.header.size()) __builtin_trap();  // every row as wide as the header
  } catch (const ddlsim::InputError&) {
  }
  return 0;
}

#ifdef DDLSIM_FUZZ_MAIN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return ddlsim_fuzz_csv(data, size);
}
#endif
