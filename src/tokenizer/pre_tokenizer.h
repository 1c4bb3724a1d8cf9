// Byte-level BPE pre-tokenization: splits text into words with the regex sequence that
// tokenizer.ggml.pre selects. Each regex runs (PCRE2, UTF + UCP) over every piece the previous
// one produced; matches and the gaps between them both become pieces.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace hearth {

class PreTokenizer {
 public:
  // The regex list for a pre-tokenizer name ("gpt-2", "llama-bpe", "qwen2", ...). Unknown names
  // are an error naming the value; "" and "default" give the default split.
  static Result<PreTokenizer> for_name(std::string_view pre);
  // The regex sources of a known name, or an empty list.
  static std::vector<std::string> regexes_for(std::string_view pre);
  // For tests: a pre-tokenizer from explicit regexes.
  static Result<PreTokenizer> from_regexes(const std::vector<std::string>& regexes);

  // Splits valid UTF-8 `text` into (offset, length) pieces covering it exactly, in order.
  std::vector<std::pair<size_t, size_t>> split(std::string_view text) const;

  // The llama-bpe split also skips merges for words that are already whole tokens.
  bool ignore_merges() const { return ignore_merges_; }

 private:
  struct Compiled;
  std::vector<std::shared_ptr<const Compiled>> regexes_;
  bool ignore_merges_ = false;
};

}  // namespace hearth
