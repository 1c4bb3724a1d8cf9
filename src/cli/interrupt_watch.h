// Ctrl-C while a reply streams: the REPL must stop the generation and stay, not die. While
// run_interruptible() runs its work, SIGINT only sets a flag; a watcher thread sees it and
// calls on_interrupt (which cancels the HTTP stream, so the server stops generating too).
// The previous SIGINT disposition is restored afterwards.
#pragma once

#include <functional>

namespace hearth::cli {

// Runs `work` on this thread; from the first Ctrl-C on, calls `on_interrupt` (which must be
// idempotent) from another thread every 20 ms until `work` returns.
// Returns true when Ctrl-C was pressed.
bool run_interruptible(const std::function<void()>& work, const std::function<void()>& on_interrupt);

}  // namespace hearth::cli
