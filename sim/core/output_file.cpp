#include "sim/core/output_file.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace ddlsim {

namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw OutputError(fmt::format("cannot write {}: {}", path, why));
}

// Writes all of `content` to `f` and closes it; false (errno set) on any error, the close's included.
bool write_and_close(std::FILE* f, const std::string& content) {
  bool ok = std::fwrite(content.data(), 1, content.size(), f) == content.size();
  ok = std::fflush(f) == 0 && ok;
  int saved = errno;
  ok = std::fclose(f) == 0 && ok;
  if (!ok && errno == 0) errno = saved;
  return ok;
}

}  // namespace

void check_output_path(const std::string& path) {
  std::error_code ec;
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec)) {
    if (fs::is_directory(path, ec)) fail(path, "it is a folder");
    return;  // a device or a pipe, written in place
  }
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  if (!fs::is_directory(dir, ec)) fail(path, fmt::format("no folder {}", dir.string()));
  if (::access(dir.c_str(), W_OK) != 0)
    fail(path, fmt::format("folder {}: {}", dir.string(), std::strerror(errno)));
}

void write_output_file(const std::string& path, const std::string& content) {
  check_output_path(path);
  std::error_code ec;
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec)) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (!f || !write_and_close(f, content)) fail(path, std::strerror(errno));
    return;
  }
  std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) fail(path, std::strerror(errno));
  if (!write_and_close(f, content)) {
    std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    fail(path, why);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    fail(path, why);
  }
}

}  // namespace ddlsim
