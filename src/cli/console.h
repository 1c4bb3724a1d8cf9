// Where the CLI writes and what it knows about the terminal: the streams, whether each is a
// terminal (colours, redrawn progress, word wrap) and the width. Commands take a Console so
// tests can hand them string streams.
#pragma once

#include <iosfwd>

namespace hearth::cli {

struct Console {
  std::ostream& out;
  std::ostream& err;
  bool out_terminal = false;
  bool err_terminal = false;
  int width = 80;  // columns of the terminal (80 when unknown)
};

// std::cout / std::cerr with isatty() and the window size of stdout (else stderr).
Console system_console();
// Reads the terminal's width again (the window may have been resized since).
void refresh_console_width(Console& console);
// Seconds since an arbitrary fixed point (steady clock), for progress rates.
double monotonic_seconds();

}  // namespace hearth::cli
