// Where the REPL's lines come from: a terminal with line editing and a history file (libedit,
// Debian's libedit-dev, chosen over readline for its BSD licence and its per-key bindings,
// which let Ctrl-C be a key rather than a signal while editing), or any stream (tests,
// scripts). Ctrl-C at the prompt gives kInterrupted, Ctrl-D on an empty line kEof.
#pragma once

#include <iosfwd>
#include <memory>
#include <string>

namespace hearth::cli {

enum class ReadStatus { kLine, kInterrupted, kEof };

struct ReadResult {
  ReadStatus status = ReadStatus::kEof;
  std::string line;  // without the newline; for kInterrupted, what had been typed
};

class LineReader {
 public:
  virtual ~LineReader() = default;
  virtual ReadResult read(const std::string& prompt) = 0;
  // Remembers a line for the up arrow and the history file (when history is on).
  virtual void remember(const std::string& line) = 0;
  virtual void set_history(bool on) = 0;
};

// ~/.hearth/history (the folder is created 0700); "" when there is no home folder.
std::string default_history_path();
// libedit on the terminal; `history_path` empty: no history file.
std::unique_ptr<LineReader> make_terminal_line_reader(const std::string& history_path);
// Lines from a stream; a line holding only "\x03" reads as Ctrl-C (for tests).
std::unique_ptr<LineReader> make_stream_line_reader(std::istream& in, std::ostream& echo_prompt_to);

}  // namespace hearth::cli
