#pragma once
// The JSON record (format_version 1) and the human summary table.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "environment.hpp"
#include "measure.hpp"

namespace ddlsim::kernels {

// Now, as "2026-11-22T22:30:00Z".
std::string utc_timestamp();

double median(std::vector<double> values);

nlohmann::ordered_json to_json(const RunEnvironment& environment, const std::string& started,
                               const std::string& finished, const std::vector<Measurement>& results);

// Indented at the top level, one line per result, so that files diff and grep well.
std::string format_json(const nlohmann::ordered_json& document);

std::string table_header();
// algbw = bytes / median time (nccl-tests definition; for pingpong the one-way message rate).
std::string table_row(const Measurement& result);

}  // namespace ddlsim::kernels
