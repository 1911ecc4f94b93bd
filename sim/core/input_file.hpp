#pragma once
// Reading an input file (scenario, topology, model, measured CSV, kernel results): refused with a located
// error when it is not a regular file or is too large to be one, so that /dev/zero or a binary given by
// mistake cannot fill memory.
#include <cstdint>
#include <string>
#include <string_view>

namespace ddlsim {

// The largest shipped input is about 100 kB; 64 MiB leaves room for long measurement logs.
constexpr std::uintmax_t kMaxInputBytes = std::uintmax_t{64} << 20;

// The whole text of `path`; InputError at the file when it is missing, not a regular file, or larger than
// `limit` bytes.
// Also refused: text that is not UTF-8 (YAML requires it, and the JSON output could not carry it).
std::string read_input_file(const std::string& path, std::uintmax_t limit = kMaxInputBytes);

// InputError at `name`, at the line and column of the first byte of `text` that does not belong to a
// well-formed UTF-8 sequence (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF).
void check_utf8(std::string_view text, const std::string& name);

}  // namespace ddlsim
