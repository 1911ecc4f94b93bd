#pragma once
// The CLI's subcommands. Each declares its options with Boost.Program_options (its --help is generated from
// them), parses them with parse_command and returns the exit status (0 ok, 1 runtime failure, 2 bad input);
// user errors are thrown as InputError and turned into one line + status 2 by main.
#include <boost/program_options.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/calib/readers.hpp"
#include "sim/io/output.hpp"
#include "sim/net/cluster.hpp"

namespace ddlsim::cli {

namespace po = boost::program_options;

// What a command takes: its usage line, one paragraph about it, its own options (parse_command adds --help
// and, unless `common` is false, --set and --format) and how many positional files.
struct CommandSpec {
  CommandSpec(std::string name, std::string usage, std::string description);
  std::string name;         // "run"
  std::string usage;        // "SCENARIO.yaml [options]"
  std::string description;  // one paragraph, wrapped when printed
  po::options_description options;
  std::string positional = "scenario file";  // what the positional arguments are, for errors
  size_t min_positional = 1, max_positional = 1;
  bool common = true;
};

struct Args {
  std::vector<std::string> positional;
  std::vector<std::string> sets;  // --set dotted.key=value, in order
  Format format = Format::Table;
  po::variables_map vm;
  bool has(const char* key) const { return vm.count(key) > 0; }
  template <class T>
  std::optional<T> get(const char* key) const {
    if (!vm.count(key)) return std::nullopt;
    return vm[key].as<T>();
  }
  std::string str(const char* key, const std::string& def = "") const {
    return get<std::string>(key).value_or(def);
  }
};

// Parses `args` against `spec`; on --help prints the generated help to stdout and returns nullopt. Bad usage
// (unknown option, missing or malformed value, wrong number of files) is an InputError naming the option.
std::optional<Args> parse_command(const std::vector<std::string>& args, const CommandSpec& spec);

// "4,8,16" -> {4, 8, 16}; InputError naming `flag` for anything but positive whole numbers.
std::vector<int64_t> parse_count_list(const std::string& list, const std::string& flag);
// --jobs N: adds the option; jobs_option gives N (1..4096), or 0 when not given.
void add_jobs_option(po::options_description& options);
int jobs_option(const Args& a);
// --ranks N and --ranks-per-node R, for measurement files that do not record their layout; layout_options
// gives them as the readers take them.
void add_layout_options(po::options_description& options);
ReaderOptions layout_options(const Args& a);
// An integer option that must be at least `lo`, or nullopt when not given.
std::optional<int64_t> count_option(const Args& a, const char* key, int64_t lo);

// A note per comm bandwidth the cluster's routes cannot carry (unreachable_bandwidths), on the cluster built
// at min(2, the largest of `counts`) nodes: routes inside a node and across nodes are the same at every
// count. (Taken before the runs: an interrupt during them leaves the cluster unbuilt.)
std::vector<std::string> bandwidth_notes(const ClusterConfig& config, const std::vector<int64_t>& counts);

int run_command(const std::vector<std::string>& args);
int sweep_command(const std::vector<std::string>& args);
int describe_command(const std::vector<std::string>& args);
int validate_command(const std::vector<std::string>& args);
int calibrate_command(const std::vector<std::string>& args);
int crossover_command(const std::vector<std::string>& args);

}  // namespace ddlsim::cli
