#include "sim/cli/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace ddlsim::cli {

namespace {
constexpr size_t kBarWidth = 30;

std::string clock_text(double seconds) {
  auto s = static_cast<long long>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}
}  // namespace

ProgressBar::ProgressBar(std::string label)
    : label_(std::move(label)),
      enabled_(isatty(STDERR_FILENO) == 1 && std::getenv("CI") == nullptr),
      start_(std::chrono::steady_clock::now()) {}

ProgressBar::~ProgressBar() {
  if (drawn_) {
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
  }
}

std::function<void(double, size_t)> ProgressBar::callback() {
  if (!enabled_) return {};
  return [this](double done, size_t total) { update(done, total); };
}

void ProgressBar::update(double done, size_t total) {
  if (!enabled_ || total == 0) return;
  const auto now = std::chrono::steady_clock::now();
  const bool last = done >= static_cast<double>(total);
  if (drawn_ && !last && now - drawn_at_ < std::chrono::milliseconds(200)) return;
  drawn_at_ = now;
  double fraction = std::min(1.0, done / static_cast<double>(total));
  double elapsed = std::chrono::duration<double>(now - start_).count();
  auto filled = static_cast<size_t>(fraction * kBarWidth);
  std::string eta =
      fraction > 0 && !last ? "ETA " + clock_text(elapsed * (1 - fraction) / fraction) : clock_text(elapsed);
  std::string bar = std::string(filled, '#') + std::string(kBarWidth - filled, '.');
  fmt::print(stderr, "\r\033[K{} [{}] {:3.0f}% {}/{} simulations, {}", label_, bar, fraction * 100,
             static_cast<size_t>(done), total, eta);
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace ddlsim::cli
