#pragma once
// A thin view over yaml-cpp that knows where every value came from, so that every user error names the file,
// the line, the column and the key path. yaml-cpp stays out of this header to keep builds lean.
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/core/units.hpp"

namespace ddlsim {

class YamlNode {
 public:
  // Loads a file; throws InputError for a missing file or a syntax error.
  static YamlNode load_file(const std::string& path);
  static YamlNode load_string(const std::string& text, const std::string& name);

  // Applies `dotted.key=value` (value parsed as YAML, so lists and maps work) to this document.
  void apply_override(const std::string& assignment);

  bool is_map() const;
  bool is_sequence() const;
  bool is_scalar() const;
  bool is_null() const;
  bool has(const std::string& key) const;
  YamlNode operator[](const std::string& key) const;  // required key: throws when missing
  std::optional<YamlNode> get(const std::string& key) const;
  std::vector<YamlNode> elements() const;  // a sequence's elements (throws when not a sequence)
  std::vector<std::string> keys() const;   // a map's keys in file order
  // Throws for any key not in `allowed`, with a "did you mean" suggestion.
  void expect_keys(std::initializer_list<const char*> allowed) const;
  void expect_keys(const std::vector<std::string>& allowed) const;

  std::string as_string() const;
  int64_t as_int() const;
  double as_double() const;  // a plain number (or a percentage for fractions: use as_fraction)
  double as_fraction() const;
  bool as_bool() const;
  Time as_time() const;
  Bytes as_bytes() const;
  Rate as_rate() const;
  Flops as_flops() const;
  FlopRate as_flop_rate() const;
  std::vector<int64_t> as_int_list() const;  // a scalar or a list of integers

  // Convenience: optional keys with defaults.
  std::string get_string(const std::string& key, const std::string& def) const;
  int64_t get_int(const std::string& key, int64_t def) const;
  double get_double(const std::string& key, double def) const;
  bool get_bool(const std::string& key, bool def) const;

  const std::string& file() const;
  const std::string& path() const { return path_; }
  SourceLocation location() const;
  Where where() const { return {location(), path_}; }
  [[noreturn]] void fail(const std::string& message) const;
  // Runs `parse` and turns a ValueError it throws into an InputError at this node.
  template <class F>
  auto parse_value(F&& parse) const -> decltype(parse(std::string())) {
    std::string text = as_string();
    try {
      return parse(text);
    } catch (const ValueError& e) {
      fail(e.what());
    }
  }
  // Dumps this subtree back to YAML text (for echoing scenarios in JSON output).
  std::string dump() const;

  struct Impl;

 private:
  YamlNode(std::shared_ptr<Impl> impl, std::string path) : impl_(std::move(impl)), path_(std::move(path)) {}
  // Whether the value at `path` came from --set (it is, or is inside, an overridden key); with `maps_to_it`,
  // also when an overridden key lies inside it (--set a.b.c=1 makes the maps a and a.b: an unknown key a is
  // the flag's).
  bool from_override(const std::string& path, bool maps_to_it = false) const;
  std::shared_ptr<Impl> impl_;
  std::string path_;
};

}  // namespace ddlsim
