#pragma once
// Output files that survive interrupts and full disks: written to a temporary file next to the target,
// flushed, then renamed over it, so a reader sees the old file or the whole new one, never a part. A target
// that is not a regular file (a terminal, a pipe, /dev/null) is written in place. Any failure is an
// OutputError naming the path (exit 1), and leaves no temporary file behind.
#include <stdexcept>
#include <string>

namespace ddlsim {

class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws OutputError when `path` cannot be written (its folder is missing or not writable): called before a
// long run, so that a typo does not cost the run.
void check_output_path(const std::string& path);

void write_output_file(const std::string& path, const std::string& content);

}  // namespace ddlsim
