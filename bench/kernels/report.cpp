#include "report.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>

#include <fmt/format.h>

namespace ddlsim::kernels {

std::string utc_timestamp() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32] = {};
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

nlohmann::ordered_json to_json(const RunEnvironment& environment, const std::string& started,
                               const std::string& finished, const std::vector<Measurement>& results) {
  nlohmann::ordered_json entries = nlohmann::ordered_json::array();
  for (const Measurement& result : results) {
    entries.push_back({
        {"algorithm", std::string(algorithm_name(result.algorithm))},
        {"ranks", environment.ranks},
        {"ranks_per_node", environment.ranks_per_node},
        {"nodes", environment.nodes},
        {"servers", result.servers},
        {"bytes", result.bytes},
        {"element", "float32"},
        {"times_s", result.times_s},
        {"check", result.check},
    });
  }
  return {
      {"tool", "ddlsim-kernels"},
      {"format_version", 1},
      {"mpi_library", environment.mpi_library},
      {"mpi_version", environment.mpi_version},
      {"hosts", environment.hosts},
      {"ranks", environment.ranks},
      {"ranks_per_node", environment.ranks_per_node},
      {"nodes", environment.nodes},
      {"started", started},
      {"finished", finished},
      {"results", std::move(entries)},
  };
}

std::string format_json(const nlohmann::ordered_json& document) {
  std::string text = "{\n";
  bool first = true;
  for (const auto& [key, value] : document.items()) {
    text += fmt::format("{} {}: ", first ? "" : ",\n", nlohmann::ordered_json(key).dump());
    first = false;
    if (!value.is_array() || value.empty() || !value.front().is_object()) {
      text += value.dump();
      continue;
    }
    text += "[\n";
    for (std::size_t i = 0; i < value.size(); ++i) {
      text += fmt::format("  {}{}\n", value[i].dump(), i + 1 < value.size() ? "," : "");
    }
    text += " ]";
  }
  return text + "\n}\n";
}

std::string table_header() {
  return fmt::format("{:<14} {:>12} {:>14} {:>12}  {}", "algorithm", "bytes", "median_s", "algbw_GB/s",
                     "check");
}

std::string table_row(const Measurement& result) {
  const double time = median(result.times_s);
  const double algbw = time > 0 ? static_cast<double>(result.bytes) / time / 1e9 : 0.0;
  return fmt::format("{:<14} {:>12} {:>14.6e} {:>12.3f}  {}", algorithm_name(result.algorithm), result.bytes,
                     time, algbw, result.check);
}

}  // namespace ddlsim::kernels
