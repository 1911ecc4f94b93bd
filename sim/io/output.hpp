#pragma once
// Results as records of named fields, written as an aligned table (people), CSV or JSON (scripts). Dotted
// keys ("shares.compute") become nested objects in JSON.
#include <cstdint>
#include <ostream>
#include <string>
#include <variant>
#include <vector>

namespace ddlsim {

enum class Format { Table, Csv, Json };
Format parse_format(const std::string& text);  // throws InputError

struct Field {
  std::string key;
  std::variant<std::string, double, int64_t> value;
  bool detail = false;  // JSON only (breakdowns per server, per link): not a table or CSV column
};
using Record = std::vector<Field>;

struct Report {
  std::string scenario_name;
  std::string scenario_file;
  std::string title;  // table heading
  std::vector<Record> results;
  std::vector<std::string> notes;          // printed under the table; "notes" array in JSON
  std::vector<std::string> table_columns;  // keys shown in the table (all when empty)
};

void write_report(std::ostream& out, Format format, const Report& report);

}  // namespace ddlsim
