// The bad-input corpus (tests/bad_inputs/corpus): every case is a hostile or malformed input with the command
// that reads it (cases.tsv: name, arguments, exit status, the expected stderr line). Each must end with that
// status and exactly one line on stderr, equal to the golden one: the located message a user gets (never a
// crash, an "internal error", several lines or a silent success). Paths in the line read {dir} (the corpus
// folder), {bin} (the binary's folder) and {src} (the source tree). DDLSIM_UPDATE_GOLDEN=1 rewrites the
// expected lines (on purpose only).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/cli.hpp"

namespace {

struct Case {
  std::string name, args;
  int status = 2;
  std::string expected;
};

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size())
    s.replace(at, from.size(), to);
  return s;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string f; std::getline(in, f, '\t');) out.push_back(f);
  return out;
}

TEST(BadInputCorpus, EveryCaseGetsItsOneLineMessage) {
  const std::string src = DDLSIM_SOURCE_DIR, dir = src + "/tests/bad_inputs/corpus",
                    path = dir + "/cases.tsv";
  std::string bin = DDLSIM_BINARY;
  bin = bin.substr(0, bin.rfind('/'));
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::string header;
  std::getline(in, header);
  std::vector<Case> cases;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    std::vector<std::string> f = split_tabs(line);
    ASSERT_GE(f.size(), 3u) << line;
    cases.push_back({f[0], f[1], std::stoi(f[2]), f.size() > 3 ? f[3] : ""});
  }
  EXPECT_GE(cases.size(), 150u);
  std::vector<std::string> args;
  for (const Case& c : cases) args.push_back(replace_all(replace_all(c.args, "{dir}", dir), "{src}", src));
  const std::vector<ddlsim_test::CliOutcome> outcomes =
      ddlsim_test::run_ddlsim_each(args, ddlsim_test::Capture::Stderr);
  const bool update = std::getenv("DDLSIM_UPDATE_GOLDEN") != nullptr;
  for (size_t i = 0; i < cases.size(); ++i) {
    Case& c = cases[i];
    SCOPED_TRACE(c.name + ": ddlsim " + c.args);
    const ddlsim_test::CliOutcome& o = outcomes[i];
    // The build folder (where ddlsim looks for shipped data next to itself) may be anywhere: {bin}.
    std::string got = replace_all(replace_all(replace_all(o.out, bin, "{bin}"), dir, "{dir}"), src, "{src}");
    EXPECT_EQ(o.status, c.status) << got;
    EXPECT_EQ(std::count(got.begin(), got.end(), '\n'), 1) << got;
    EXPECT_EQ(got.find("internal error"), std::string::npos) << got;
    std::string first = got.substr(0, got.find('\n'));
    if (update)
      c.expected = first;
    else
      EXPECT_EQ(first, c.expected);
  }
  if (update) {
    std::ofstream out(path);
    out << header << "\n";
    for (const Case& c : cases)
      out << c.name << "\t" << c.args << "\t" << c.status << "\t" << c.expected << "\n";
  }
}

}  // namespace
