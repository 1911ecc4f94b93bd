#include "sim/io/output.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>

#include "sim/core/error.hpp"
#include "sim/core/input_file.hpp"
#include "sim/core/output_file.hpp"
#include "sim/io/csv.hpp"

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

// How the table shows a number, by its key. The first rule whose pattern matches wins; a key no rule matches
// is a plain number. CSV and JSON always give the value as it is.
enum class Match { Exact, Prefix, Suffix };
enum class Show {
  Fraction,  // shares, efficiencies, relative errors: fixed 3 decimals
  Time,      // a duration: one readable unit per column (ns .. d), in the header
  Rate,      // per second: thousands separators, the unit in the header
  Plain,     // thousands separators, decimals for the column
};
struct ShowRule {
  Match match;
  const char* pattern;
  Show show;
  double scale;      // Time: seconds per value unit
  const char* unit;  // Rate: the unit shown in the header ("" takes the noun before _per_s)
};
constexpr ShowRule kShowRules[] = {
    {Match::Prefix, "shares.", Show::Fraction, 1, ""},
    {Match::Prefix, "kernel_shares.", Show::Fraction, 1, ""},
    {Match::Exact, "efficiency", Show::Fraction, 1, ""},
    {Match::Suffix, "_err", Show::Fraction, 1, ""},
    {Match::Suffix, "_error", Show::Fraction, 1, ""},
    {Match::Suffix, "_per_s", Show::Rate, 1, ""},
    {Match::Suffix, "_GBps", Show::Rate, 1, "GB/s"},
    {Match::Suffix, "_us", Show::Time, 1e-6, ""},
    {Match::Suffix, "_s", Show::Time, 1, ""},
};

bool matches(const ShowRule& r, const std::string& key) {
  std::string_view p = r.pattern;
  switch (r.match) {
    case Match::Exact:
      return key == p;
    case Match::Prefix:
      return key.starts_with(p);
    case Match::Suffix:
      return key.size() > p.size() && key.ends_with(p);
  }
  return false;
}

const ShowRule* show_rule(const std::string& key) {
  for (const ShowRule& r : kShowRules)
    if (matches(r, key)) return &r;
  return nullptr;
}

// "38900.5" -> "38,900.5"
std::string group_thousands(const std::string& s) {
  size_t start = s.find_first_of("0123456789");
  if (start == std::string::npos) return s;
  size_t end = s.find_first_not_of("0123456789", start);
  if (end == std::string::npos) end = s.size();
  std::string out = s.substr(0, start);
  for (size_t i = start; i < end; ++i) {
    if (i > start && (end - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out + s.substr(end);
}

// One column's numbers: unit, header and decimals chosen from all of its values.
struct ColumnFormat {
  const ShowRule* rule = nullptr;
  std::string header;
  double divisor = 1;  // value in the shown unit = value * scale / divisor
  int decimals = 3;

  std::string cell(const Field& f) const {
    if (std::holds_alternative<std::string>(f.value)) return std::get<std::string>(f.value);
    if (auto i = std::get_if<int64_t>(&f.value); i && (!rule || rule->show != Show::Time))
      return group_thousands(std::to_string(*i));
    double v = std::holds_alternative<double>(f.value) ? std::get<double>(f.value)
                                                       : static_cast<double>(std::get<int64_t>(f.value));
    if (!std::isfinite(v)) return fmt::format("{}", v);
    if (rule && rule->show == Show::Time) v = v * rule->scale / divisor;
    return group_thousands(fmt::format("{:.{}f}", v, decimals));
  }
};

// Decimals that show the smallest non-zero magnitude with 3 significant digits, 0..3.
int decimals_for(double smallest) {
  if (!(smallest > 0) || !std::isfinite(smallest)) return 3;
  int digits = static_cast<int>(std::floor(std::log10(smallest))) + 1;  // before the point
  return std::clamp(3 - digits, 0, 3);
}

ColumnFormat column_format(const std::string& key, const std::vector<const Field*>& fields) {
  ColumnFormat c;
  c.rule = show_rule(key);
  c.header = key;
  double largest = 0, smallest = INFINITY;
  for (const Field* f : fields) {
    double v;
    if (auto d = std::get_if<double>(&f->value))
      v = *d;
    else if (auto i = std::get_if<int64_t>(&f->value))
      v = static_cast<double>(*i);
    else
      continue;
    if (!std::isfinite(v) || v == 0) continue;
    largest = std::max(largest, std::fabs(v));
    smallest = std::min(smallest, std::fabs(v));
  }
  Show show = c.rule ? c.rule->show : Show::Plain;
  std::string_view pattern = c.rule ? c.rule->pattern : "";
  std::string stem =
      c.rule && c.rule->match == Match::Suffix ? key.substr(0, key.size() - pattern.size()) : key;
  switch (show) {
    case Show::Fraction:
      c.decimals = 3;
      break;
    case Show::Time: {
      // The largest unit in which the geometric middle of the column's range is at least 1, so that a column
      // spanning decades stays readable at both ends (0.3 us .. 30 ms: us; 0.8 .. 13 h: h; 0.1 s: ms).
      struct Unit {
        const char* name;
        double seconds;
      };
      constexpr Unit units[] = {{"d", 86400}, {"h", 3600},  {"min", 60}, {"s", 1},
                                {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};
      smallest *= c.rule->scale;
      double middle = std::sqrt(smallest * largest * c.rule->scale);
      const Unit* u = &units[std::size(units) - 1];
      for (const Unit& x : units)
        if (middle >= x.seconds) {
          u = &x;
          break;
        }
      if (largest == 0) u = c.rule->scale == 1 ? &units[3] : &units[5];  // nothing to choose from: s or us
      c.divisor = u->seconds;
      c.decimals = decimals_for(smallest / u->seconds);
      c.header = fmt::format("{} [{}]", stem, u->name);
      break;
    }
    case Show::Rate: {
      c.decimals = decimals_for(smallest);
      std::string unit = c.rule->unit;
      if (unit.empty()) {  // throughput_samples_per_s: "throughput [samples/s]"
        size_t us = stem.rfind('_');
        unit = (us == std::string::npos ? stem : stem.substr(us + 1)) + "/s";
        if (us != std::string::npos) stem = stem.substr(0, us);
      }
      c.header = fmt::format("{} [{}]", stem, unit);
      break;
    }
    case Show::Plain:
      c.decimals = decimals_for(smallest);
      break;
  }
  return c;
}

std::string csv_escape(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// The CSV line of a record's keys (header: true) or values.
std::string csv_line(const Record& rec, bool header) {
  std::string line;
  bool first = true;
  for (const Field& f : rec) {
    if (f.detail) continue;
    if (!std::exchange(first, false)) line += ',';
    line += csv_escape(header ? f.key : plain(f));
  }
  line += '\n';
  return line;
}

void write_table(std::ostream& out, const Report& r) {
  if (!r.title.empty()) out << r.title << "\n";
  if (r.results.empty()) {
    for (const std::string& n : r.notes) out << n << "\n";
    return;
  }
  std::vector<std::string> cols = r.table_columns;
  if (cols.empty())
    for (const Field& f : r.results[0])
      if (!f.detail) cols.push_back(f.key);
  std::vector<std::vector<const Field*>> fields(cols.size());
  for (const Record& rec : r.results)
    for (size_t c = 0; c < cols.size(); ++c) {
      auto it = std::find_if(rec.begin(), rec.end(), [&](const Field& f) { return f.key == cols[c]; });
      fields[c].push_back(it == rec.end() ? nullptr : &*it);
    }
  std::vector<ColumnFormat> formats;
  std::vector<std::string> header;
  for (size_t c = 0; c < cols.size(); ++c) {
    std::vector<const Field*> present;
    for (const Field* f : fields[c])
      if (f) present.push_back(f);
    formats.push_back(column_format(cols[c], present));
    header.push_back(formats.back().header);
  }
  std::vector<std::vector<std::string>> cells;
  std::vector<size_t> width(cols.size());
  for (size_t c = 0; c < cols.size(); ++c) width[c] = header[c].size();
  for (size_t row_index = 0; row_index < r.results.size(); ++row_index) {
    std::vector<std::string> row;
    for (size_t c = 0; c < cols.size(); ++c) {
      const Field* f = fields[c][row_index];
      row.push_back(f ? formats[c].cell(*f) : "-");
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
  line(header);
  size_t total = 0;
  for (size_t w : width) total += w + 2;
  out << std::string(total - 2, '-') << "\n";
  for (const auto& row : cells) line(row);
  for (const std::string& n : r.notes) out << n << "\n";
}

void write_csv(std::ostream& out, const Report& r) {
  if (r.results.empty()) return;
  out << csv_line(r.results[0], true);
  for (const Record& rec : r.results) out << csv_line(rec, false);
}

// A record as a JSON object: dotted keys nest.
nlohmann::ordered_json record_json(const Record& rec) {
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
  return obj;
}

void write_json(std::ostream& out, const Report& r) {
  nlohmann::ordered_json doc;
  doc["scenario"] = {{"name", r.scenario_name}, {"file", r.scenario_file}};
  doc["results"] = nlohmann::ordered_json::array();
  for (const Record& rec : r.results) doc["results"].push_back(record_json(rec));
  if (!r.notes.empty()) doc["notes"] = r.notes;
  // (Inputs are UTF-8; a file name may not be: replaced rather than refused.)
  out << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
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

RowStream::RowStream(std::string path, const Record& columns, bool resume)
    : path_(std::move(path)), jsonl_(path_.ends_with(".jsonl")) {
  const std::string header = csv_line(columns, true);
  std::error_code ec;
  std::string kept_text;
  if (resume && std::filesystem::exists(path_, ec)) {
    std::string text = read_input_file(path_);
    size_t end = text.rfind('\n');
    kept_text = end == std::string::npos ? "" : text.substr(0, end + 1);  // without a torn last line
    if (jsonl_) {
      int line = 0;
      for (size_t at = 0; at < kept_text.size();) {
        size_t nl = kept_text.find('\n', at);
        std::string one = kept_text.substr(at, nl - at);
        at = nl + 1;
        ++line;
        nlohmann::json row = nlohmann::json::parse(one, nullptr, false);
        if (row.is_discarded() || !row.is_object() || !row.contains("strategy") || !row.contains("nodes") ||
            !row["strategy"].is_string() || !row["nodes"].is_number_integer())
          throw InputError({path_, line, 1}, "",
                           "not a row of a streamed run (a JSON object with \"strategy\" and \"nodes\")");
        kept_.insert({row["strategy"].get<std::string>(), row["nodes"].get<int64_t>()});
      }
    } else if (!kept_text.empty()) {
      if (kept_text.compare(0, header.size(), header) != 0)
        throw InputError({path_, 1, 1}, "",
                         "its columns are not this run's (another scenario, strategy set or --stats): resume "
                         "into a new file");
      CsvTable t = parse_csv(kept_text, path_);
      size_t strategy = t.column("strategy"), nodes = t.column("nodes");
      for (size_t i = 0; i < t.rows.size(); ++i) {
        char* end_ptr = nullptr;
        long long n = std::strtoll(t.rows[i][nodes].c_str(), &end_ptr, 10);
        if (t.rows[i][nodes].empty() || *end_ptr != '\0')
          throw InputError({path_, t.lines[i], 1}, "nodes", "not a whole number");
        kept_.insert({t.rows[i][strategy], n});
      }
    }
    if (kept_text.size() != text.size()) write_output_file(path_, kept_text);  // (atomically)
  }
  // Appended to what is kept; a new stream starts the file anew.
  file_ = std::fopen(path_.c_str(), resume ? "a" : "w");
  if (!file_) throw OutputError(fmt::format("cannot write {}: {}", path_, std::strerror(errno)));
  if (!jsonl_ && kept_text.empty()) append(header);
}

void RowStream::append(const std::string& text) {
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() || std::fflush(file_) != 0)
    throw OutputError(fmt::format("cannot write {}: {}", path_, std::strerror(errno)));
}

RowStream::~RowStream() {
  if (file_) std::fclose(file_);
}

void RowStream::write(const Record& row) {
  append(jsonl_ ? record_json(row).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"
                : csv_line(row, false));
}

}  // namespace ddlsim
