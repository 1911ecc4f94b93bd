#pragma once
// A small CSV reader (RFC 4180: quoted fields may hold commas, doubled quotes and line breaks). Rows keep
// their line number for error messages; the first row is the header.
#include <string>
#include <vector>

namespace ddlsim {

struct CsvTable {
  std::string file;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<int> lines;  // 1-based line on which each row starts

  // Column index of `name`; throws InputError naming the file when the header lacks it.
  size_t column(const std::string& name) const;
};

// Throws InputError (file, line) for a missing file, an unterminated quote or a row with the wrong field
// count.
CsvTable read_csv(const std::string& path);
CsvTable parse_csv(const std::string& text, const std::string& name);

}  // namespace ddlsim
