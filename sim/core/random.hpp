#pragma once
// The first two outputs of std::mt19937_64 seeded with one value, without building the engine. The standard
// fixes the engine's algorithm and parameters ([rand.eng.mers], [rand.predef]: w 64, n 312, m 156, r 31, the
// seeding multiplier f = 6364136223846793005): output j twists state words j, j + 1 and j + m and tempers the
// result, so two outputs need only the words 0..2 and 156..157 of the seed sequence, not all 312 words and a
// full twist. A draw per (seed, worker, step) builds a fresh engine each time; this gives the same two
// numbers about 8x faster (tests/unit/test_units.cpp holds it equal to std::mt19937_64).
#include <cstdint>
#include <utility>

namespace ddlsim {

inline std::pair<uint64_t, uint64_t> mt19937_64_first_two(uint64_t seed) {
  constexpr uint64_t kF = 6364136223846793005ULL;
  constexpr int kM = 156;
  uint64_t s[kM + 2];
  s[0] = seed;
  for (uint64_t i = 1; i < kM + 2; ++i) s[i] = kF * (s[i - 1] ^ (s[i - 1] >> 62)) + i;
  auto output = [&](int j) {
    uint64_t y = (s[j] & 0xFFFFFFFF80000000ULL) | (s[j + 1] & 0x7FFFFFFFULL);  // upper 33 bits, lower 31
    uint64_t z = s[j + kM] ^ (y >> 1) ^ ((y & 1) ? 0xB5026F5AA96619E9ULL : 0);
    z ^= (z >> 29) & 0x5555555555555555ULL;  // tempering (u, d), (s, b), (t, c), l
    z ^= (z << 17) & 0x71D67FFFEDA60000ULL;
    z ^= (z << 37) & 0xFFF7EEE000000000ULL;
    return z ^ (z >> 43);
  };
  return {output(0), output(1)};
}

}  // namespace ddlsim
