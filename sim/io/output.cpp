#include "sim/io/output.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <nlohmann/json.hpp>

#include "sim/core/error.hpp"

namespace ddlsim {

Format parse_format(const std::string& text) {
  if (text == "table") return Format::Table;
  if (text == "csv") return Format::Csv;
  if (text == "json") return Format::Json;
  throw InputError({"--format", 0, 0}, "", fmt::format("unknown format \"{}\" (table, csv, json)", text));
}

namespace {

std::string plain(const Field& f) {
  if (auto s = std::get_if<std::string>(&f.value)) return *s;
  if (auto i = std::get_if<int64_t>(&f.value)) return std::to_string(*i);
  return fmt::format("{:.9g}", std::get<double>(f.value));
}

std::string pretty(const Field& f) {
  if (auto d = std::get_if<double>(&f.value)) return fmt::format("{:.4g}", *d);
  return plain(f);
}

std::string csv_escape(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

void write_table(std::ostream& out, const Report& r) {
  if (!r.title.empty()) out << r.title << "\n";
  if (r.results.empty()) return;
  std::vector<std::string> cols = r.table_columns;
  if (cols.empty())
    for (const Field& f : r.results[0]) cols.push_back(f.key);
  std::vector<std::vector<std::string>> cells;
  std::vector<size_t> width(cols.size());
  for (size_t c = 0; c < cols.size(); ++c) width[c] = cols[c].size();
  for (const Record& rec : r.results) {
    std::vector<std::string> row;
    for (size_t c = 0; c < cols.size(); ++c) {
      auto it = std::find_if(rec.begin(), rec.end(), [&](const Field& f) { return f.key == cols[c]; });
      row.push_back(it == rec.end() ? "-" : pretty(*it));
      width[c] = std::max(width[c], row.back().size());
    }
    cells.push_back(std::move(row));
  }
  auto line = [&](const std::vector<std::string>& row) {
    for (size_t c = 0; c < row.size(); ++c) {
      bool left = c == 0;
      out << (c ? "  " : "")
          << (left ? fmt::format("{:<{}}", row[c], width[c]) : fmt::format("{:>{}}", row[c], width[c]));
    }
    out << "\n";
  };
  line(cols);
  size_t total = 0;
  for (size_t w : width) total += w + 2;
  out << std::string(total - 2, '-') << "\n";
  for (const auto& row : cells) line(row);
  for (const std::string& n : r.notes) out << n << "\n";
}

void write_csv(std::ostream& out, const Report& r) {
  if (r.results.empty()) return;
  const Record& first = r.results[0];
  for (size_t i = 0; i < first.size(); ++i) out << (i ? "," : "") << first[i].key;
  out << "\n";
  for (const Record& rec : r.results) {
    for (size_t i = 0; i < rec.size(); ++i) out << (i ? "," : "") << csv_escape(plain(rec[i]));
    out << "\n";
  }
}

void write_json(std::ostream& out, const Report& r) {
  nlohmann::ordered_json doc;
  doc["scenario"] = {{"name", r.scenario_name}, {"file", r.scenario_file}};
  doc["results"] = nlohmann::ordered_json::array();
  for (const Record& rec : r.results) {
    nlohmann::ordered_json obj = nlohmann::ordered_json::object();
    for (const Field& f : rec) {
      nlohmann::ordered_json* target = &obj;
      std::string key = f.key;
      for (size_t dot; (dot = key.find('.')) != std::string::npos; key = key.substr(dot + 1))
        target = &(*target)[key.substr(0, dot)];
      if (auto s = std::get_if<std::string>(&f.value))
        (*target)[key] = *s;
      else if (auto i = std::get_if<int64_t>(&f.value))
        (*target)[key] = *i;
      else
        (*target)[key] = std::get<double>(f.value);
    }
    doc["results"].push_back(std::move(obj));
  }
  if (!r.notes.empty()) doc["notes"] = r.notes;
  out << doc.dump(2) << "\n";
}

}  // namespace

void write_report(std::ostream& out, Format format, const Report& r) {
  switch (format) {
    case Format::Table:
      write_table(out, r);
      break;
    case Format::Csv:
      write_csv(out, r);
      break;
    case Format::Json:
      write_json(out, r);
      break;
  }
}

}  // namespace ddlsim
