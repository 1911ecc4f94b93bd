#include "sim/core/error.hpp"

#include <fmt/format.h>
#include <algorithm>

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

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

InputError::InputError(const SourceLocation& where, const std::string& key_path, const std::string& message)
    : std::runtime_error(render(where, key_path, message)),
      where_(where),
      key_path_(key_path),
      message_(message) {}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::max<size_t>(2, word.size() / 3) + 1;
  for (const std::string& c : candidates) {
    size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  if (!best.empty() || word.size() < 3) return best;
  // Else the one candidate the word starts (`bucket` for bucket_size) or that starts the word.
  for (const std::string& c : candidates)
    if (c.size() >= 3 && (c.starts_with(word) || word.starts_with(c))) {
      if (!best.empty()) return "";  // more than one: no single guess
      best = c;
    }
  return best;
}

Where command_line(const std::string& flag) {
  Where w;
  w.location.file = flag;
  return w;
}

void Where::fail(const std::string& message) const {
  throw InputError(location, path, message);
}

}  // namespace ddlsim
