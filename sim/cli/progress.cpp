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

ProgressBar::ProgressBar(std::string label, std::string unit)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      enabled_(isatty(STDERR_FILENO) == 1 && std::getenv("CI") == nullptr),
      start_(std::chrono::steady_clock::now()) {}

ProgressBar::~ProgressBar() {
  if (drawn_) {
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
  }
}

std::function<void(double, size_t, size_t)> ProgressBar::callback() {
  if (!enabled_) return {};
  return [this](double fraction, size_t done, size_t total) { update(fraction, done, total); };
}

void ProgressBar::update(double fraction, size_t done, size_t total) {
  if (!enabled_ || total == 0) return;
  const auto now = std::chrono::steady_clock::now();
  const bool last = done >= total;
  if (drawn_ && !last && now - drawn_at_ < std::chrono::milliseconds(200)) return;
  drawn_at_ = now;
  fraction = std::clamp(fraction, 0.0, 1.0);
  double elapsed = std::chrono::duration<double>(now - start_).count();
  // The rate: over the last 10 s once there are 10 s of samples, since the start before.
  recent_.emplace_back(now, fraction);
  while (recent_.size() > 1 && now - recent_[1].first >= std::chrono::seconds(10)) recent_.pop_front();
  double rate = elapsed > 0 ? fraction / elapsed : 0;
  if (now - recent_.front().first >= std::chrono::seconds(10))
    rate = (fraction - recent_.front().second) /
           std::chrono::duration<double>(now - recent_.front().first).count();
  auto filled = static_cast<size_t>(fraction * kBarWidth);
  std::string eta = rate > 0 && !last ? "ETA " + clock_text((1 - fraction) / rate) : clock_text(elapsed);
  std::string bar = std::string(filled, '#') + std::string(kBarWidth - filled, '.');
  fmt::print(stderr, "\r\033[K{} [{}] {:3.0f}% {}/{} {}, {}", label_, bar, fraction * 100, done, total, unit_,
             eta);
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace ddlsim::cli
