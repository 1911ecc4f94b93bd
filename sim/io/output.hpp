#pragma once
// Results as records of named fields, written as an aligned table (people), CSV or JSON (scripts). Dotted
// keys ("shares.compute") become nested objects in JSON.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <utility>
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

// Rows written as they finish, so that an interrupted or killed run keeps them: CSV (header first), or JSON
// Lines when the name ends in .jsonl (one record per line, details included). Every row is appended whole and
// flushed; a write error is an OutputError naming the path. With `resume`, the rows already in the file stay
// (a torn last line, from a kill in the middle of a write, is dropped) and their points (strategy, nodes) are
// listed, so that a sweep run again skips them; a CSV header other than this run's is an InputError.
class RowStream {
 public:
  // `columns`: a record of this run (its keys are the CSV header; its values are not used).
  RowStream(std::string path, const Record& columns, bool resume);
  ~RowStream();
  RowStream(const RowStream&) = delete;
  RowStream& operator=(const RowStream&) = delete;
  bool has(const std::string& strategy, int64_t nodes) const { return kept_.count({strategy, nodes}) > 0; }
  size_t kept() const { return kept_.size(); }
  const std::string& path() const { return path_; }
  void write(const Record& row);

 private:
  void append(const std::string& text);
  std::string path_;
  bool jsonl_;
  std::FILE* file_ = nullptr;
  std::set<std::pair<std::string, int64_t>> kept_;
};

}  // namespace ddlsim
