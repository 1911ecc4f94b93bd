#pragma once
// The options of one configuration entry (a strategy's map, say) as the typed configuration layer hands them
// to the code that owns them: typed reads that name file:line:col and key path on error, without that code
// knowing the file format.
#include <fmt/format.h>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/core/units.hpp"

namespace ddlsim {

class OptionReader {
 public:
  virtual ~OptionReader() = default;
  // Whether the entry was given by name alone (`- ring`) rather than as a map: it has no options then.
  virtual bool name_only() const = 0;
  virtual bool has(const std::string& key) const = 0;
  // Throws InputError for any key not in `allowed`, with a "did you mean" suggestion.
  virtual void expect_keys(const std::vector<std::string>& allowed) const = 0;
  virtual Where where(const std::string& key) const = 0;  // "" names the entry itself
  virtual std::string text(const std::string& key) const = 0;
  virtual int64_t integer(const std::string& key) const = 0;
  virtual bool boolean(const std::string& key) const = 0;
  virtual Bytes bytes(const std::string& key) const = 0;
  virtual Time time(const std::string& key) const = 0;
  virtual Rate rate(const std::string& key) const = 0;
  virtual std::unique_ptr<OptionReader> child(const std::string& key) const = 0;  // a nested map
  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    where(key).fail(message);
  }
};

// The value `word` names in `table` ({word, value} pairs), or none: a configuration word read into its enum.
template <class E, size_t N>
std::optional<E> named(std::string_view word, const std::pair<const char*, E> (&table)[N]) {
  for (const auto& [w, v] : table)
    if (word == w) return v;
  return std::nullopt;
}

// A latency-like time option (cycle_time, a link's latency): at most kMaxLatencySeconds (1 s).
inline Time latency_option(const OptionReader& o, const std::string& key) {
  Time t = o.time(key);
  if (t.seconds() > kMaxLatencySeconds)
    o.fail(key, fmt::format("\"{}\" is over the limit of 1 s for {}", o.text(key), key));
  return t;
}

// A size option that must be at least one byte.
inline double positive_bytes(const OptionReader& o, const std::string& key) {
  double b = o.bytes(key).value;
  if (b < 1) o.fail(key, key + " must be at least 1 byte");
  return b;
}

}  // namespace ddlsim
