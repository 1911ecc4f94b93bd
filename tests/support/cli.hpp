#pragma once
// Runs the built `ddlsim` binary from a test, as a user would, and captures one of its output streams.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <future>
#include <string>
#include <vector>

namespace ddlsim_test {

enum class Capture { Stdout, Stderr, Both };

struct CliOutcome {
  int status = -1;  // exit status; -1 when it did not exit normally
  std::string out;  // the captured stream(s)
};

inline CliOutcome run_ddlsim(const std::string& args, Capture capture = Capture::Stdout) {
  const char* redirect = capture == Capture::Stdout   ? " 2>/dev/null"
                         : capture == Capture::Stderr ? " 2>&1 1>/dev/null"
                                                      : " 2>&1";
  std::string cmd = std::string("'") + DDLSIM_BINARY + "' " + args + redirect;
  CliOutcome o;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return o;
  std::array<char, 4096> buf;
  for (size_t n; (n = fread(buf.data(), 1, buf.size(), pipe)) > 0;) o.out.append(buf.data(), n);
  int raw = pclose(pipe);
  o.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return o;
}

// Runs `ddlsim` once per argument string, two at a time (each run is one short process); the outcomes in the
// order of the arguments.
inline std::vector<CliOutcome> run_ddlsim_each(const std::vector<std::string>& args,
                                               Capture capture = Capture::Stdout) {
  std::vector<CliOutcome> out(args.size());
  for (size_t i = 0; i < args.size(); i += 2) {
    auto second = i + 1 < args.size() ? std::async(std::launch::async, run_ddlsim, args[i + 1], capture)
                                      : std::future<CliOutcome>();
    out[i] = run_ddlsim(args[i], capture);
    if (second.valid()) out[i + 1] = second.get();
  }
  return out;
}

}  // namespace ddlsim_test
