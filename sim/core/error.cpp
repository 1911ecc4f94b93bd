#include "sim/core/error.hpp"

#include <fmt/format.h>

namespace ddlsim {
namespace {
std::string render(const SourceLocation& where, const std::string& key_path, const std::string& message) {
  std::string out;
  if (!where.file.empty()) {
    out = where.file;
    if (where.line > 0) out += fmt::format(":{}:{}", where.line, where.column);
    out += ": ";
  }
  if (!key_path.empty()) out += key_path + ": ";
  return out + message;
}
}  // namespace

InputError::InputError(const SourceLocation& where, const std::string& key_path, const std::string& message)
    : std::runtime_error(render(where, key_path, message)),
      where_(where),
      key_path_(key_path),
      message_(message) {}

void Where::fail(const std::string& message) const {
  throw InputError(location, path, message);
}

}  // namespace ddlsim
