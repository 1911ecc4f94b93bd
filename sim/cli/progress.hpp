#pragma once
// A one-line progress bar with percentage and ETA on stderr for the simulations of a command, drawn only
// when stderr is a terminal and the environment variable CI is unset (silent in pipes, logs and CI), and
// cleared when the bar goes out of scope. The ETA is the work left at the rate of the last 10 s (the
// average rate before that): a sweep's simulations differ in cost per task, and the rate follows the ones
// running.
#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <utility>

namespace ddlsim::cli {

class ProgressBar {
 public:
  // `unit`: what the done/total counts are.
  explicit ProgressBar(std::string label, std::string unit = "simulations");
  ~ProgressBar();  // clears the line
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // For TrainingOptions::progress; empty when the bar is not drawn.
  std::function<void(double fraction, size_t done, size_t total)> callback();
  // `fraction` of the work done (the percentage and the ETA), `done` of `total` simulations finished; redrawn
  // at most every 0.2 s until the last one ends.
  void update(double fraction, size_t done, size_t total);

 private:
  std::string label_, unit_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, drawn_at_;
  std::deque<std::pair<std::chrono::steady_clock::time_point, double>> recent_;  // (when, fraction) drawn
};

}  // namespace ddlsim::cli
