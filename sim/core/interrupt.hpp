#pragma once
// SIGINT and SIGTERM during a long run: the first one stops the run (no new simulations start, and those in
// flight are abandoned at the engine's next check, every few thousand events, or the graph builder's next
// step), so that the command can print every finished row with a note and exit 128 + the signal; a second
// one ends the process at once, as the default action would.
#include <stdexcept>

namespace ddlsim {

// Thrown where a simulation in flight notices the signal; run_parallel counts the simulation as not run.
class Interrupted : public std::runtime_error {
 public:
  Interrupted() : std::runtime_error("interrupted") {}
};

// Installs the handlers (once; later calls do nothing).
void catch_interrupts();
// The signal that asked the run to stop (SIGINT or SIGTERM), 0 when none did.
int interrupt_signal();
inline bool interrupted() {
  return interrupt_signal() != 0;
}
inline void throw_if_interrupted() {
  if (interrupted()) throw Interrupted();
}

}  // namespace ddlsim
