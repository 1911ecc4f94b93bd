#include "sim/io/csv.hpp"

#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "sim/core/error.hpp"
#include "sim/core/input_file.hpp"

namespace ddlsim {

size_t CsvTable::column(const std::string& name) const {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return i;
  throw InputError({file, 1, 1}, name, fmt::format("the header has no column \"{}\"", name));
}

CsvTable parse_csv(const std::string& text, const std::string& name) {
  CsvTable t;
  t.file = name;
  std::vector<std::string> row;
  std::string cell;
  bool quoted = false, any = false;
  int line = 1, row_line = 1;
  auto end_row = [&] {
    row.push_back(cell);
    cell.clear();
    bool blank = row.size() == 1 && row[0].empty();
    if (!blank) {
      if (t.header.empty()) {
        for (size_t a = 0; a < row.size(); ++a)
          for (size_t b = 0; b < a; ++b)
            if (row[a] == row[b])
              throw InputError({name, row_line, 1}, row[a],
                               fmt::format("the header names column \"{}\" twice (columns {} and {})", row[a],
                                           b + 1, a + 1));
        t.header = std::move(row);
      } else {
        if (row.size() != t.header.size())
          throw InputError(
              {name, row_line, 1}, "",
              fmt::format("expected {} fields as in the header, got {}", t.header.size(), row.size()));
        t.rows.push_back(std::move(row));
        t.lines.push_back(row_line);
      }
    }
    row.clear();
    any = false;
  };
  // A UTF-8 byte-order mark (spreadsheets write one) is not part of the first column's name.
  const size_t first = text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;
  for (size_t i = first; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        cell += c;
      }
      continue;
    }
    if (!any) row_line = line;
    any = true;
    if (c == '"')
      quoted = true;
    else if (c == ',')
      row.push_back(std::move(cell)), cell.clear();
    else if (c == '\n')
      ++line, end_row();
    else if (c != '\r')
      cell += c;
  }
  if (quoted) throw InputError({name, row_line, 1}, "", "unterminated quoted field");
  if (any) end_row();
  if (t.header.empty()) throw InputError({name, 1, 1}, "", "empty CSV file (expected a header line)");
  return t;
}

CsvTable read_csv(const std::string& path) {
  return parse_csv(read_input_file(path), path);
}

}  // namespace ddlsim
