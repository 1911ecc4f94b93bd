#pragma once
// The libFuzzer targets' bodies (tests/fuzz/fuzz_*.cpp): each returns 0 for any input it handles as it
// should and aborts on a finding. In a DDLSIM_FUZZ build each is a fuzzer's LLVMFuzzerTestOneInput; in the
// test suite, test_fuzz_seeds.cpp runs them on their seed files and the regression inputs.
#include <cstddef>
#include <cstdint>

int ddlsim_fuzz_scenario(const uint8_t* data, size_t size);
int ddlsim_fuzz_units(const uint8_t* data, size_t size);
int ddlsim_fuzz_csv(const uint8_t* data, size_t size);
int ddlsim_fuzz_measurements(const uint8_t* data, size_t size);
