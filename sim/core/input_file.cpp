#include "sim/core/input_file.hpp"

#include <fmt/format.h>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/core/error.hpp"

namespace ddlsim {

std::string read_input_file(const std::string& path, std::uintmax_t limit) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw InputError({path, 0, 0}, "", "cannot open file");
  if (!fs::is_regular_file(st)) throw InputError({path, 0, 0}, "", "not a regular file");
  std::uintmax_t size = fs::file_size(path, ec);
  if (!ec && size > limit)
    throw InputError(
        {path, 0, 0}, "",
        fmt::format("{} bytes: larger than any input this tool reads ({} bytes at most)", size, limit));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError({path, 0, 0}, "", "cannot open file");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  check_utf8(text, path);
  return text;
}

void check_utf8(std::string_view text, const std::string& name) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  auto cont = [&](size_t i, unsigned lo = 0x80, unsigned hi = 0xBF) {
    return i < text.size() && byte(i) >= lo && byte(i) <= hi;
  };
  int line = 1, col = 1;
  for (size_t i = 0; i < text.size();) {
    const unsigned b = byte(i);
    size_t n = 0;  // length of a well-formed sequence starting at i, 0 if none
    if (b < 0x80)
      n = 1;
    else if (b >= 0xC2 && b <= 0xDF)
      n = cont(i + 1) ? 2 : 0;
    else if (b >= 0xE0 && b <= 0xEF)  // E0: no overlong form; ED: no surrogate
      n = cont(i + 1, b == 0xE0 ? 0xA0 : 0x80, b == 0xED ? 0x9F : 0xBF) && cont(i + 2) ? 3 : 0;
    else if (b >= 0xF0 && b <= 0xF4)  // F0: no overlong form; F4: at most U+10FFFF
      n = cont(i + 1, b == 0xF0 ? 0x90 : 0x80, b == 0xF4 ? 0x8F : 0xBF) && cont(i + 2) && cont(i + 3) ? 4 : 0;
    if (n == 0)
      throw InputError({name, line, col}, "",
                       fmt::format("byte 0x{:02X} is not UTF-8 (inputs are UTF-8 text)", b));
    if (b == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
    i += n;
  }
}

}  // namespace ddlsim
