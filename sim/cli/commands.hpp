#pragma once
// The CLI's subcommands. Each parses its own arguments and returns the exit status (0 ok, 1 runtime failure,
// 2 bad input); user errors are thrown as InputError and turned into one line + status 2 by main.
#include <string>
#include <vector>

#include "sim/io/output.hpp"

namespace ddlsim::cli {

// Arguments common to every command.
struct CommonArgs {
  std::vector<std::string> positional;
  std::vector<std::string> sets;  // --set dotted.key=value
  Format format = Format::Table;
  bool help = false;
  std::vector<std::pair<std::string, std::string>> options;  // other --key value pairs, in order
  std::vector<std::string> flags;                            // other --flag
  bool has_flag(const std::string& f) const;
  std::string option(const std::string& key, const std::string& def = "") const;
  std::vector<std::string> all(const std::string& key) const;
};

// `value_options` lists the options of this command that take a value; anything else unknown is an error.
CommonArgs parse_args(const std::vector<std::string>& args, const std::vector<std::string>& value_options,
                      const std::vector<std::string>& flag_options);

// "4,8,16" -> {4, 8, 16}; InputError naming `flag` for anything but positive whole numbers.
std::vector<int64_t> parse_count_list(const std::string& list, const std::string& flag);
// --jobs N (1..4096), or 0 when not given.
int jobs_option(const CommonArgs& a);

int run_command(const std::vector<std::string>& args);
int sweep_command(const std::vector<std::string>& args);
int describe_command(const std::vector<std::string>& args);
int validate_command(const std::vector<std::string>& args);
int calibrate_command(const std::vector<std::string>& args);
int crossover_command(const std::vector<std::string>& args);

}  // namespace ddlsim::cli
