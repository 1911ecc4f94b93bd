// Every shipped scenario runs from the command line (as the README says) and reports a result per strategy
// and node count; --format json is valid enough to hold one "results" entry per row.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

namespace {

std::pair<int, std::string> run(const std::string& args) {
  std::string cmd = std::string("'") + DDLSIM_BINARY + "' " + args + " 2>&1";
  std::string out;
  FILE* pipe = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf;
  for (size_t n; pipe && (n = fread(buf.data(), 1, buf.size(), pipe)) > 0;) out.append(buf.data(), n);
  int status = pipe ? pclose(pipe) : -1;
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST(ShippedScenarios, EveryScenarioRuns) {
  namespace fs = std::filesystem;
  int checked = 0;
  for (const char* dir : {"scenarios", "scenarios/aach2023"}) {
    for (const auto& e : fs::directory_iterator(fs::path(DDLSIM_SOURCE_DIR) / dir)) {
      if (e.path().extension() != ".yaml") continue;
      SCOPED_TRACE(e.path().string());
      auto [status, out] = run("run '" + e.path().string() + "' --format csv");
      EXPECT_EQ(status, 0) << out;
      EXPECT_GE(count(out, "\n"), 2u) << out;  // header + at least one result
      ++checked;
    }
  }
  EXPECT_GE(checked, 11);
}
