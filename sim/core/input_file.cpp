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
  return ss.str();
}

}  // namespace ddlsim
