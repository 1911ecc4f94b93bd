#include "options.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <climits>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <boost/program_options.hpp>
#include <sstream>

namespace ddlsim::kernels {
namespace {

constexpr std::array<std::pair<Algorithm, std::string_view>, 7> algorithm_names{{
    {Algorithm::ring, "ring"},
    {Algorithm::ps, "ps"},
    {Algorithm::ps_colocated, "ps-colocated"},
    {Algorithm::rhd, "rhd"},
    {Algorithm::direct, "direct"},
    {Algorithm::mpi_allreduce, "mpi_allreduce"},
    {Algorithm::pingpong, "pingpong"},
}};

// Element counts travel as MPI int counts: at most INT_MAX floats.
constexpr std::size_t max_bytes = static_cast<std::size_t>(INT_MAX) * sizeof(float);

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

template <typename Names>
std::string did_you_mean(std::string_view word, const Names& names) {
  std::string_view best;
  std::size_t best_distance = 3;  // farther than two edits is no suggestion
  for (std::string_view name : names) {
    const std::size_t distance = edit_distance(word, name);
    if (distance < best_distance) {
      best = name;
      best_distance = distance;
    }
  }
  return best.empty() ? std::string{} : fmt::format(" (did you mean \"{}\"?)", best);
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  while (true) {
    const std::size_t at = text.find(separator);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text.remove_prefix(at + 1);
  }
}

std::size_t unit_factor(std::string_view unit) {
  constexpr std::array<std::pair<std::string_view, std::size_t>, 7> units{{
      {"B", 1},
      {"KiB", std::size_t{1} << 10},
      {"MiB", std::size_t{1} << 20},
      {"GiB", std::size_t{1} << 30},
      {"KB", 1000},
      {"MB", 1000 * 1000},
      {"GB", 1000 * 1000 * 1000},
  }};
  for (const auto& [name, factor] : units) {
    if (name == unit) return factor;
  }
  std::vector<std::string_view> names;
  for (const auto& entry : units) names.push_back(entry.first);
  throw UsageError(fmt::format("unknown size unit \"{}\"{} (units: B KiB MiB GiB KB MB GB)", unit,
                               did_you_mean(unit, names)));
}

}  // namespace

std::vector<Algorithm> all_algorithms() {
  std::vector<Algorithm> all;
  for (const auto& entry : algorithm_names) all.push_back(entry.first);
  return all;
}

std::string_view algorithm_name(Algorithm algorithm) {
  for (const auto& [value, name] : algorithm_names) {
    if (value == algorithm) return name;
  }
  return "?";
}

std::size_t parse_size(std::string_view text) {
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) throw UsageError(fmt::format("size \"{}\" must start with a number, e.g. 64KiB", text));
  const std::string_view unit = text.substr(digits);
  if (unit.empty()) {
    throw UsageError(fmt::format("size \"{}\" needs a unit, e.g. {}B or {}KiB", text, text, text));
  }
  std::size_t number = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + digits, number);
  const std::size_t factor = unit_factor(unit);
  if (error != std::errc{} || end != text.data() + digits || number > max_bytes / factor) {
    throw UsageError(fmt::format("size \"{}\" is too large (at most {} bytes)", text, max_bytes));
  }
  const std::size_t bytes = number * factor;
  if (bytes == 0 || bytes % 4 != 0) {
    throw UsageError(
        fmt::format("size \"{}\" must be a positive multiple of 4 bytes (float32 elements)", text));
  }
  return bytes;
}

std::vector<std::size_t> parse_sizes(std::string_view text) {
  std::vector<std::size_t> sizes;
  for (std::string_view item : split(text, ',')) {
    const std::size_t range_at = item.find("..");
    if (range_at == std::string_view::npos) {
      sizes.push_back(parse_size(item));
      continue;
    }
    const std::size_t first = parse_size(item.substr(0, range_at));
    const std::size_t last = parse_size(item.substr(range_at + 2));
    if (first > last) throw UsageError(fmt::format("size range \"{}\" runs backwards", item));
    for (std::size_t bytes = first; bytes <= last && bytes <= max_bytes; bytes *= 2) sizes.push_back(bytes);
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

std::vector<Algorithm> parse_algorithms(std::string_view text) {
  std::vector<std::string_view> known;
  for (const auto& entry : algorithm_names) known.push_back(entry.second);
  std::vector<Algorithm> chosen;
  for (std::string_view word : split(text, ',')) {
    const auto found = std::find_if(algorithm_names.begin(), algorithm_names.end(),
                                    [&](const auto& entry) { return entry.second == word; });
    if (found == algorithm_names.end()) {
      throw UsageError(fmt::format("unknown algorithm \"{}\"{} (known: {})", word, did_you_mean(word, known),
                                   fmt::join(known, ",")));
    }
    chosen.push_back(found->first);
  }
  // Reported in the canonical order, each once.
  std::vector<Algorithm> ordered;
  for (Algorithm algorithm : all_algorithms()) {
    if (std::find(chosen.begin(), chosen.end(), algorithm) != chosen.end()) ordered.push_back(algorithm);
  }
  return ordered;
}

namespace {

namespace po = boost::program_options;

// The options and their help, generated into usage_text(); values land in `options`.
po::options_description describe(Options& options, std::string& sizes, std::string& algorithms) {
  po::options_description d("Options", 100, 50);
  d.add_options()  //
      ("sizes", po::value(&sizes)->value_name("LIST"),
       "per-rank buffer sizes: a power-of-two range FIRST..LAST and/or a comma list, units B KiB MiB GiB KB "
       "MB "
       "GB, multiples of 4 bytes (default 1KiB..16MiB)")  //
      ("reps", po::value(&options.reps)->value_name("N")->default_value(options.reps),
       "timed repetitions per size")  //
      ("warmup", po::value(&options.warmup)->value_name("N")->default_value(options.warmup),
       "untimed repetitions before them")  //
      ("algorithms", po::value(&algorithms)->value_name("LIST"),
       "comma list of ring,ps,ps-colocated,rhd,direct,mpi_allreduce,pingpong (default all)")  //
      ("servers", po::value(&options.servers)->value_name("K")->default_value(options.servers),
       "dedicated parameter servers for ps: the last K ranks")  //
      ("out", po::value(&options.out_path)->value_name("FILE"),
       "write all repetition times as JSON (rank 0); otherwise only the summary table")  //
      ("inject-error", po::bool_switch(&options.inject_error),
       "self-test: corrupt one result element, so the check must fail (exit 1)")  //
      ("help,h", po::bool_switch(&options.help), "this text");
  return d;
}

void at_least(const char* option, int value, int minimum) {
  if (value < minimum)
    throw UsageError(fmt::format("--{}: must be at least {}, got {}", option, minimum, value));
}

}  // namespace

Options parse_options(const std::vector<std::string>& args) {
  Options options;
  std::string sizes = "1KiB..16MiB", algorithms;
  po::options_description d = describe(options, sizes, algorithms);
  try {
    po::variables_map vm;
    auto style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    po::store(po::command_line_parser(args).options(d).style(style).run(), vm);
    po::notify(vm);
    if (vm.count("out") && options.out_path.empty()) throw UsageError("--out needs a file name");
  } catch (const po::unknown_option& e) {
    std::vector<std::string> known;
    for (const auto& option : d.options()) known.push_back("--" + option->long_name());
    throw UsageError(fmt::format("{}{}; see --help", e.what(), did_you_mean(e.get_option_name(), known)));
  } catch (const po::error& e) {
    throw UsageError(fmt::format("{}; see --help", e.what()));
  }
  at_least("reps", options.reps, 1);
  at_least("warmup", options.warmup, 0);
  at_least("servers", options.servers, 1);
  options.sizes_bytes = parse_sizes(sizes);
  options.algorithms = algorithms.empty() ? all_algorithms() : parse_algorithms(algorithms);
  return options;
}

std::string usage_text() {
  Options defaults;
  std::string sizes, algorithms;
  std::ostringstream text;
  text << "Usage: mpirun -np P ddlsim-kernels [options]\n\n"
          "Hand-written MPI communication kernels, timed and checked, for calibrating ddlsim.\n\n"
       << describe(defaults, sizes, algorithms)
       << "\nExit status: 0 success, 1 a result did not check or a run-time failure, 2 bad usage.\n";
  return text.str();
}

}  // namespace ddlsim::kernels
