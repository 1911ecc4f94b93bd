#pragma once
// A one-line progress bar with percentage and ETA on stderr for the simulations of a command, drawn only
// when stderr is a terminal and the environment variable CI is unset (silent in pipes, logs and CI), and
// cleared when the bar goes out of scope.
#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

namespace ddlsim::cli {

class ProgressBar {
 public:
  explicit ProgressBar(std::string label);
  ~ProgressBar();  // clears the line
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // For TrainingOptions::progress; empty when the bar is not drawn.
  std::function<void(double done, size_t total)> callback();
  // `done`: simulations finished, with the share done of those running; redrawn at most every 0.2 s until
  // the last one ends.
  void update(double done, size_t total);

 private:
  std::string label_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, drawn_at_;
};

}  // namespace ddlsim::cli
