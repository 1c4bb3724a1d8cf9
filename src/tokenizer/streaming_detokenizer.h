// Turns a stream of generated token ids into text without ever emitting half a UTF-8 character:
// bytes of a multi-byte character split across byte tokens are held back until the character
// is complete. What is still held at the end comes out of flush(). The concatenation of all
// push() results and flush() equals Tokenizer::decode of the same ids.
#pragma once

#include <cstdint>
#include <string>

#include "tokenizer/tokenizer.h"

namespace hearth {

class StreamingDetokenizer {
 public:
  // The tokenizer must outlive this object. special: render control tokens' text.
  explicit StreamingDetokenizer(const Tokenizer& tokenizer, bool special = false)
      : tokenizer_(&tokenizer), special_(special), at_start_(tokenizer.strips_leading_space()) {}

  // Adds one token; returns the text that is now complete (possibly "").
  std::string push(int32_t id);
  // Returns whatever is held back (an incomplete sequence at the end of the stream) and resets.
  std::string flush();
  // Starts a new stream.
  void reset();
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer* tokenizer_;
  bool special_;
  bool at_start_;
  std::string pending_;
};

}  // namespace hearth
