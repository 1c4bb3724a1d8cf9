// Holding back incomplete UTF-8 tails between streamed tokens.
#include "tokenizer/streaming_detokenizer.h"

#include "tokenizer/utf8_codec.h"

namespace hearth {

std::string StreamingDetokenizer::push(int32_t id) {
  std::string piece = tokenizer_->token_to_piece(id, special_);
  if (piece.empty()) return {};
  if (at_start_ && piece[0] == ' ') piece.erase(0, 1);
  at_start_ = false;
  pending_ += piece;
  const size_t hold = utf8::incomplete_tail_length(pending_);
  std::string ready = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return ready;
}

std::string StreamingDetokenizer::flush() {
  std::string rest;
  rest.swap(pending_);
  return rest;
}

void StreamingDetokenizer::reset() {
  pending_.clear();
  at_start_ = tokenizer_->strips_leading_space();
}

}  // namespace hearth
