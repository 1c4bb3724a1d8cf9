// `"""` multi-line input for the REPL, as ollama reads it: a line starting with `"""` (or a
// command such as `/set system """`) opens a block, following lines join it with newlines,
// and a line ending with `"""` closes it (`"""one line"""` opens and closes at once). The
// result is the command prefix followed by the block's text.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace hearth::cli {

class MultilineAssembler {
 public:
  // Prefixes after which `"""` opens a block besides the start of a line ("/set system ").
  explicit MultilineAssembler(std::vector<std::string> block_prefixes = {"/set system "})
      : prefixes_(std::move(block_prefixes)) {}

  // Feeds one input line (without its newline): the complete input when this line finishes
  // one, nullopt while a block is open.
  std::optional<std::string> feed(const std::string& line);
  bool open() const { return open_; }
  // Drops an open block (Ctrl-C).
  void reset();

 private:
  std::vector<std::string> prefixes_;
  bool open_ = false;
  std::string text_;
};

}  // namespace hearth::cli
