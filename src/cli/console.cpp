// The process's console (see console.h).
#include "cli/console.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <iostream>

namespace hearth::cli {

void refresh_console_width(Console& c) {
  if (!c.out_terminal && !c.err_terminal) return;
  for (int fd : {STDOUT_FILENO, STDERR_FILENO}) {
    struct winsize ws {};
    if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
      c.width = ws.ws_col;
      return;
    }
  }
}

Console system_console() {
  Console c{std::cout, std::cerr};
  c.out_terminal = isatty(STDOUT_FILENO) != 0;
  c.err_terminal = isatty(STDERR_FILENO) != 0;
  refresh_console_width(c);
  return c;
}

double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace hearth::cli
