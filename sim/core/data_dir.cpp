#include "sim/core/data_dir.hpp"

#include <algorithm>
#include <cstdlib>
#include <system_error>

namespace ddlsim {

std::vector<std::filesystem::path> data_roots() {
  namespace fs = std::filesystem;
  std::vector<fs::path> roots;
  if (const char* env = std::getenv("DDLSIM_DATA"); env && *env) roots.emplace_back(env);
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && exe.has_parent_path()) {
    fs::path dir = exe.parent_path();
    roots.push_back(dir.parent_path() / "share" / "ddlsim");
    roots.push_back(dir / "share" / "ddlsim");
  }
  return roots;
}

std::string first_file(const std::vector<std::filesystem::path>& candidates, std::string& tried) {
  std::vector<std::string> seen;
  for (const std::filesystem::path& p : candidates) {
    std::string path = p.lexically_normal().string();
    if (std::filesystem::is_regular_file(p)) return path;
    if (std::find(seen.begin(), seen.end(), path) == seen.end()) seen.push_back(path);
  }
  tried.clear();
  for (const std::string& s : seen) tried += (tried.empty() ? "" : ", ") + s;
  return "";
}

}  // namespace ddlsim
