#include "sim/core/interrupt.hpp"

#include <atomic>
#include <csignal>

namespace ddlsim {

namespace {

std::atomic<int> g_signal{0};

extern "C" void on_interrupt(int sig) {
  int expected = 0;
  if (!g_signal.compare_exchange_strong(expected, sig)) {  // the second one: the default action, now
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}

}  // namespace

void catch_interrupts() {
  static bool installed = false;
  if (installed) return;
  installed = true;
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
}

int interrupt_signal() {
  return g_signal.load();
}

}  // namespace ddlsim
