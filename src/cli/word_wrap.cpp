// Streaming, UTF-8 aware word wrap (see word_wrap.h).
#include "cli/word_wrap.h"

#include <utf8proc.h>

namespace hearth::cli {
namespace {

// Length of the UTF-8 sequence a lead byte starts (1 for a stray continuation or bad byte).
size_t sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

// Bytes of the code point at text[i]: its sequence length when every continuation byte is
// there and well formed, 1 for a bad byte (which then cannot swallow a space or a newline),
// 0 when the text ends inside a sequence that may still be completed.
size_t code_point_length(std::string_view text, size_t i) {
  const size_t n = sequence_length(static_cast<unsigned char>(text[i]));
  for (size_t k = 1; k < n; ++k) {
    if (i + k >= text.size()) return 0;
    if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return 1;
  }
  return n;
}

int code_point_width(std::string_view bytes) {
  utf8proc_int32_t cp = 0;
  auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(bytes.data()), static_cast<utf8proc_ssize_t>(bytes.size()), &cp);
  if (n <= 0) return 1;  // an invalid byte prints as one replacement character
  if (cp < 0x20 || cp == 0x7F) return 0;
  return utf8proc_charwidth(cp);
}

}  // namespace

int display_width(std::string_view text) {
  int cols = 0;
  for (size_t i = 0; i < text.size();) {
    size_t n = code_point_length(text, i);
    if (n == 0) n = text.size() - i;  // a truncated sequence at the end counts as one character
    cols += code_point_width(text.substr(i, n));
    i += n;
  }
  return cols;
}

void WordWrapper::place_word(std::string& out) {
  if (word_.empty()) return;
  if (column_ + space_cols_ + word_cols_ > width_) {
    if (column_ > 0) out += '\n';  // the spaces before a wrapped word are dropped
    column_ = 0;
  } else {
    out += spaces_;
    column_ += space_cols_;
  }
  spaces_.clear();
  space_cols_ = 0;
  out += word_;
  column_ += word_cols_;
  word_.clear();
  word_cols_ = 0;
}

void WordWrapper::add_code_point(std::string_view bytes, int cols, std::string& out) {
  const char c = bytes[0];
  if (c == '\n') {
    place_word(out);
    spaces_.clear();  // trailing spaces are invisible; drop them
    space_cols_ = 0;
    out += '\n';
    column_ = 0;
    return;
  }
  if (c == ' ' || c == '\t') {
    place_word(out);
    spaces_ += c;
    space_cols_ += c == '\t' ? 4 : 1;
    return;
  }
  if (word_cols_ + cols > width_ && !word_.empty()) {
    // A word wider than a whole line: print what fits and break it.
    place_word(out);
    out += '\n';
    column_ = 0;
  }
  word_.append(bytes);
  word_cols_ += cols;
}

std::string WordWrapper::feed(std::string_view piece) {
  if (width_ <= 0) return std::string(piece);
  std::string out;
  std::string text = partial_;
  text.append(piece);
  partial_.clear();
  for (size_t i = 0; i < text.size();) {
    const size_t n = code_point_length(text, i);
    if (n == 0) {
      partial_ = text.substr(i);  // completed by the next piece
      break;
    }
    std::string_view cp(text.data() + i, n);
    add_code_point(cp, code_point_width(cp), out);
    i += n;
  }
  return out;
}

std::string WordWrapper::flush() {
  if (width_ <= 0) return std::string();
  std::string out;
  if (!partial_.empty()) {
    const std::string rest = std::move(partial_);  // an unfinished sequence at the very end: one character
    partial_.clear();
    add_code_point(rest, 1, out);
  }
  place_word(out);
  if (column_ + space_cols_ <= width_) {
    out += spaces_;
    column_ += space_cols_;
  }
  spaces_.clear();
  space_cols_ = 0;
  return out;
}

void WordWrapper::reset() {
  column_ = 0;
  word_.clear();
  word_cols_ = 0;
  spaces_.clear();
  space_cols_ = 0;
  partial_.clear();
}

}  // namespace hearth::cli
