// A termination signal (SIGTERM/SIGHUP/SIGINT) as a process-wide flag: signal handlers set it
// (async-signal-safe), long waits read it. A launcher that ends a run after one rank died
// sends SIGTERM to the others and kills them a second later; a rank waiting on the dead peer
// must notice at once to write its record in that second.
#pragma once

namespace mb {

void note_termination_signal(int signo) noexcept;   // from a signal handler
int termination_signal() noexcept;                  // the last one noted, 0 if none
void clear_termination_signal() noexcept;           // for tests

}  // namespace mb
