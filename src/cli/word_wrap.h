// Word wrap for streamed replies: text arrives in pieces (tokens) and is printed as it comes,
// but a word never straddles the right edge of the terminal. A word is held until it ends
// (a space, a newline, or flush()) so that it can move to the next line whole; a word wider
// than a line is broken. Columns are counted per code point with its display width (CJK and
// emoji take two), and a UTF-8 sequence split between pieces is held until it is complete.
#pragma once

#include <string>
#include <string_view>

namespace hearth::cli {

class WordWrapper {
 public:
  // width <= 0: no wrapping (text passes through unchanged).
  explicit WordWrapper(int width) : width_(width) {}

  // The text to print now for this piece.
  std::string feed(std::string_view piece);
  // The held word and spaces (at the end of a reply); the next feed() continues on this line.
  std::string flush();
  // Forget the line position (the caller printed a newline of its own).
  void reset();
  int column() const { return column_; }

 private:
  void place_word(std::string& out);
  void add_code_point(std::string_view bytes, int cols, std::string& out);

  int width_;
  int column_ = 0;           // columns printed on the current line
  std::string word_;         // the word being read, not yet printed
  int word_cols_ = 0;
  std::string spaces_;       // spaces (and tabs) between the printed text and word_
  int space_cols_ = 0;
  std::string partial_;      // an incomplete UTF-8 sequence from the end of the last piece
};

// Display columns of a UTF-8 string (0 for control characters, 2 for wide ones).
int display_width(std::string_view text);

}  // namespace hearth::cli
