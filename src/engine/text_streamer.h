// Turns the byte pieces of generated tokens into text that is safe to emit while streaming:
// never half a UTF-8 character, never the start of a stop string that may still complete.
// A completed stop string ends the stream and the text stops before it. Used by both the
// single-request generate() loop and the serving engine's slots, so the rule lives once.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hearth::engine {

class TextStreamer {
 public:
  // Empty stop strings are ignored.
  explicit TextStreamer(std::vector<std::string> stops = {});

  // Adds the bytes of one token and returns the text that became safe to emit (maybe "").
  // When a stop string completes, stopped() turns true, the returned text is everything
  // before the earliest match, and later pushes return "".
  std::string push(std::string_view piece);
  // The end of generation (not by a stop string): returns whatever is still held back.
  std::string flush();

  bool stopped() const { return stopped_; }
  // The stop string that matched ("" until stopped()).
  const std::string& stop_word() const { return stop_word_; }
  // Bytes produced but not yet emitted.
  size_t held_bytes() const { return pending_.size(); }

 private:
  size_t held_for_stop() const;

  std::vector<std::string> stops_;
  std::string pending_;
  bool stopped_ = false;
  std::string stop_word_;
};

// Length of the longest prefix of `text` that ends on a UTF-8 character boundary.
size_t utf8_complete_prefix(std::string_view text);

}  // namespace hearth::engine
