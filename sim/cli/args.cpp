#include <fmt/format.h>
#include <algorithm>

#include "sim/cli/commands.hpp"
#include "sim/core/error.hpp"

namespace ddlsim::cli {

bool CommonArgs::has_flag(const std::string& f) const {
  return std::find(flags.begin(), flags.end(), f) != flags.end();
}

std::string CommonArgs::option(const std::string& key, const std::string& def) const {
  for (auto it = options.rbegin(); it != options.rend(); ++it)
    if (it->first == key) return it->second;
  return def;
}

std::vector<std::string> CommonArgs::all(const std::string& key) const {
  std::vector<std::string> out;
  for (const auto& [k, v] : options)
    if (k == key) out.push_back(v);
  return out;
}

CommonArgs parse_args(const std::vector<std::string>& args, const std::vector<std::string>& value_options,
                      const std::vector<std::string>& flag_options) {
  CommonArgs a;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "-h" || arg == "--help") {
      a.help = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0 || arg.size() == 2) {
      a.positional.push_back(arg);
      continue;
    }
    std::string key = arg.substr(2), value;
    auto eq = key.find('=');
    bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
    }
    bool takes_value = key == "set" || key == "format" ||
                       std::find(value_options.begin(), value_options.end(), key) != value_options.end();
    if (!takes_value) {
      if (std::find(flag_options.begin(), flag_options.end(), key) == flag_options.end())
        throw InputError({}, "", fmt::format("unknown option --{} (see --help)", key));
      a.flags.push_back(key);
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= args.size()) throw InputError({}, "", fmt::format("option --{} needs a value", key));
      value = args[++i];
    }
    if (key == "set")
      a.sets.push_back(value);
    else if (key == "format")
      a.format = parse_format(value);
    else
      a.options.emplace_back(key, value);
  }
  return a;
}

std::vector<int64_t> parse_count_list(const std::string& list, const std::string& flag) {
  std::vector<int64_t> counts;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    std::string item = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    try {
      size_t used = 0;
      long long v = std::stoll(item, &used);
      if (used != item.size() || v < 1) throw std::invalid_argument(item);
      counts.push_back(v);
    } catch (const std::exception&) {
      throw InputError({flag, 0, 0}, "", fmt::format("\"{}\" is not a positive whole number", item));
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return counts;
}

int jobs_option(const CommonArgs& a) {
  std::string v = a.option("jobs");
  if (v.empty()) return 0;
  std::vector<int64_t> n = parse_count_list(v, "--jobs");
  if (n.size() != 1 || n[0] > 4096)
    throw InputError({"--jobs", 0, 0}, "", "--jobs takes one number, 1..4096");
  return static_cast<int>(n[0]);
}

}  // namespace ddlsim::cli
