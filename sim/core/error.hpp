#pragma once
// One exception type for every user error (bad file, bad key, bad value). The CLI prints what() and exits 2.
#include <stdexcept>
#include <string>
#include <vector>

namespace ddlsim {

struct SourceLocation {
  std::string file;  // empty when the value came from the command line
  int line = 0;      // 1-based; 0 when unknown
  int column = 0;
};

// A parsed value's origin (file:line:col and key path), kept in the typed configuration so that a check made
// after parsing (against a node count, say) still names where the value came from.
struct Where {
  SourceLocation location;
  std::string path;
  [[noreturn]] void fail(const std::string& message) const;
};

// A value given on the command line (`--nodes`): errors name the flag.
Where command_line(const std::string& flag);

class InputError : public std::runtime_error {
 public:
  InputError(const SourceLocation& where, const std::string& key_path, const std::string& message);
  const SourceLocation& where() const { return where_; }
  const std::string& key_path() const { return key_path_; }
  const std::string& message() const { return message_; }

 private:
  SourceLocation where_;
  std::string key_path_;
  std::string message_;
};

// A value that failed to parse, before the caller knows where it came from (rethrown as InputError with
// location).
class ValueError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Closest candidate by edit distance, or empty when nothing is close (for "did you mean" hints).
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace ddlsim
