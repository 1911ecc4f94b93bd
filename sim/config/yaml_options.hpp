#pragma once
// OptionReader over a YAML entry (a scalar name or a map of options), so that strategy files read their
// options, with file:line:col on error, without including YAML.
#include "sim/core/options.hpp"
#include "sim/io/yaml.hpp"

namespace ddlsim {

class YamlOptions : public OptionReader {
 public:
  explicit YamlOptions(YamlNode node) : node_(std::move(node)) {}
  bool name_only() const override { return node_.is_scalar(); }
  bool has(const std::string& key) const override { return !name_only() && node_.has(key); }
  void expect_keys(const std::vector<std::string>& allowed) const override { node_.expect_keys(allowed); }
  Where where(const std::string& key) const override { return key.empty() ? node_.where() : at(key).where(); }
  std::string text(const std::string& key) const override { return at(key).as_string(); }
  int64_t integer(const std::string& key) const override { return at(key).as_int(); }
  bool boolean(const std::string& key) const override { return at(key).as_bool(); }
  Bytes bytes(const std::string& key) const override { return at(key).as_bytes(); }
  Time time(const std::string& key) const override { return at(key).as_time(); }
  Rate rate(const std::string& key) const override { return at(key).as_rate(); }
  std::unique_ptr<OptionReader> child(const std::string& key) const override {
    return std::make_unique<YamlOptions>(at(key));
  }

 private:
  YamlNode at(const std::string& key) const { return node_[key]; }
  YamlNode node_;
};

}  // namespace ddlsim
