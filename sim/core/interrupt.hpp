#pragma once
// SIGINT and SIGTERM during a long run: the first one asks the run to stop taking new simulations (those in
// flight finish), so that the command can print every finished row with a note and exit 128 + the signal;
// a second one ends the process at once, as the default action would.
namespace ddlsim {

// Installs the handlers (once; later calls do nothing).
void catch_interrupts();
// The signal that asked the run to stop (SIGINT or SIGTERM), 0 when none did.
int interrupt_signal();
inline bool interrupted() {
  return interrupt_signal() != 0;
}

}  // namespace ddlsim
