#include <fmt/format.h>
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "sim/cli/commands.hpp"
#include "sim/core/error.hpp"
#include "sim/net/cluster.hpp"

namespace ddlsim::cli {

namespace {
constexpr unsigned kHelpWidth = 110;  // option lines in --help
}

CommandSpec::CommandSpec(std::string name_, std::string usage_, std::string description_)
    : name(std::move(name_)),
      usage(std::move(usage_)),
      description(std::move(description_)),
      options("options", kHelpWidth, kHelpWidth / 2) {}

std::optional<Args> parse_command(const std::vector<std::string>& args, const CommandSpec& spec) {
  po::options_description visible = spec.options;
  if (spec.common) {
    visible.add_options()  //
        ("set", po::value<std::vector<std::string>>()->value_name("KEY=VALUE"),
         "override a scenario key, e.g. --set cluster.nodes=8 (repeatable)")  //
        ("format", po::value<std::string>()->value_name("table|csv|json")->default_value("table"),
         "output format");
  }
  visible.add_options()("help,h", "show this help");
  po::options_description all = visible;
  all.add_options()("positional-file", po::value<std::vector<std::string>>(), "");
  po::positional_options_description positional;
  positional.add("positional-file", -1);

  Args a;
  try {
    auto style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    po::store(po::command_line_parser(args).options(all).positional(positional).style(style).run(), a.vm);
    po::notify(a.vm);
  } catch (const po::error& e) {
    throw InputError({}, "", fmt::format("{} (see ddlsim {} --help)", e.what(), spec.name));
  }
  // An empty value ('' from a script's unset variable, say) names no file and no setting: refused rather
  // than taken as "not given".
  for (const auto& [key, value] : a.vm) {
    const po::option_description* d = all.find_nothrow(key, false);
    if (value.defaulted() || !d || d->semantic()->min_tokens() == 0) continue;  // (a switch has no value)
    bool empty = false;
    if (const auto* s = boost::any_cast<std::string>(&value.value())) empty = s->empty();
    if (const auto* list = boost::any_cast<std::vector<std::string>>(&value.value()))
      empty = std::any_of(list->begin(), list->end(), [](const std::string& s) { return s.empty(); });
    if (empty)
      throw InputError({}, "",
                       key == "positional-file"
                           ? fmt::format("an empty file name (see ddlsim {} --help)", spec.name)
                           : fmt::format("--{} has an empty value", key));
  }
  if (a.has("help")) {
    std::cout << "usage: ddlsim " << spec.name << " " << spec.usage << "\n\n"
              << spec.description << "\n\n"
              << visible;
    return std::nullopt;
  }
  a.positional = a.get<std::vector<std::string>>("positional-file").value_or(std::vector<std::string>{});
  if (a.positional.size() < spec.min_positional || a.positional.size() > spec.max_positional) {
    std::string how = spec.min_positional == spec.max_positional
                          ? fmt::format("exactly {}", spec.min_positional == 1 ? "one" : "two")
                          : "at least one";
    throw InputError({}, "", fmt::format("{} needs {} {} (see --help)", spec.name, how, spec.positional));
  }
  if (spec.common) {
    a.sets = a.get<std::vector<std::string>>("set").value_or(std::vector<std::string>{});
    a.format = parse_format(a.str("format"));
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

std::optional<int64_t> count_option(const Args& a, const char* key, int64_t lo) {
  std::optional<int64_t> v = a.get<int64_t>(key);
  if (v && *v < lo)
    throw InputError({fmt::format("--{}", key), 0, 0}, "",
                     fmt::format("expected an integer >= {}, got {}", lo, *v));
  return v;
}

void add_jobs_option(po::options_description& options) {
  options.add_options()("jobs", po::value<int64_t>()->value_name("N"),
                        "run up to N simulations at once (default: the CPUs this process may use, so a Slurm "
                        "task or an mpirun rank keeps to the cores it was given)");
}

void add_layout_options(po::options_description& options) {
  options.add_options()  //
      ("ranks", po::value<int64_t>()->value_name("N"),
       "ranks of collective runs whose files do not record it (osu_allreduce; nccl-tests without \"Using "
       "devices\" lines)")  //
      ("ranks-per-node", po::value<int64_t>()->value_name("R"), "ranks per node of such runs");
}

ReaderOptions layout_options(const Args& a) {
  ReaderOptions ro;
  if (auto v = count_option(a, "ranks", 1)) ro.ranks = *v;
  if (auto v = count_option(a, "ranks-per-node", 1)) ro.ranks_per_node = *v;
  return ro;
}

std::vector<std::string> bandwidth_notes(const ClusterConfig& config, const std::vector<int64_t>& counts) {
  if (counts.empty()) return {};
  const int64_t nodes = std::min<int64_t>(2, *std::max_element(counts.begin(), counts.end()));
  return unreachable_bandwidths(build_cluster(config, nodes));
}

int jobs_option(const Args& a) {
  std::optional<int64_t> n = a.get<int64_t>("jobs");
  if (!n) return 0;
  if (*n < 1 || *n > 4096) throw InputError({"--jobs", 0, 0}, "", "--jobs takes one number, 1..4096");
  return static_cast<int>(*n);
}

}  // namespace ddlsim::cli
