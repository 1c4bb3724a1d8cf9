// WordPiece (BERT uncased) encoding. Normalization follows BERT's basic tokenizer: drop NUL,
// U+FFFD and control characters, split on whitespace, NFD-decompose (utf8proc) and strip
// combining marks, lowercase, and make every punctuation mark, ASCII symbol and CJK ideograph
// a word of its own. Each word then gets the ▁ prefix the GGUF vocabulary uses for
// word-initial pieces and is covered greedily by the longest matching tokens.
#include <utf8proc.h>

#include "tokenizer/encoders.h"
#include "tokenizer/utf8_codec.h"

namespace hearth::detail {

namespace {

bool is_whitespace(uint32_t cp) {
  switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0x85: case 0xA0:
    case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

bool is_cjk_ideograph(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) ||
         (cp >= 0x2B920 && cp <= 0x2CEAF) || (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

bool is_punctuation(utf8proc_category_t cat) {
  return cat == UTF8PROC_CATEGORY_PC || cat == UTF8PROC_CATEGORY_PD || cat == UTF8PROC_CATEGORY_PS ||
         cat == UTF8PROC_CATEGORY_PE || cat == UTF8PROC_CATEGORY_PI || cat == UTF8PROC_CATEGORY_PF ||
         cat == UTF8PROC_CATEGORY_PO;
}

bool is_symbol(utf8proc_category_t cat) {
  return cat == UTF8PROC_CATEGORY_SM || cat == UTF8PROC_CATEGORY_SC || cat == UTF8PROC_CATEGORY_SK ||
         cat == UTF8PROC_CATEGORY_SO;
}

// Splits normalized text into words (punctuation and CJK characters as one-character words).
std::vector<std::string> wpm_words(std::string_view text) {
  std::vector<std::string> words(1);
  auto finish_word = [&] {
    if (!words.back().empty()) words.emplace_back();
  };
  utf8proc_int32_t decomposed[8];
  for (uint32_t cp : utf8::decode_all(text)) {
    if (is_whitespace(cp)) {
      finish_word();
      continue;
    }
    int last_boundclass = 0;
    utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), decomposed, 8,
                                                 UTF8PROC_DECOMPOSE, &last_boundclass);
    if (n < 1 || n > 8) {
      decomposed[0] = static_cast<utf8proc_int32_t>(cp);
      n = 1;
    }
    for (utf8proc_ssize_t k = 0; k < n; ++k) {
      const auto c = static_cast<uint32_t>(decomposed[k]);
      const utf8proc_category_t cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
      if (c == 0 || c == utf8::kReplacementChar || cat == UTF8PROC_CATEGORY_CC || cat == UTF8PROC_CATEGORY_CF ||
          cat == UTF8PROC_CATEGORY_MN) {
        continue;  // control characters and (stripped) accents
      }
      std::string s;
      utf8::append(s, static_cast<uint32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
      if (is_punctuation(cat) || (c < 0x7F && is_symbol(cat)) || is_cjk_ideograph(c)) {
        finish_word();
        words.back() = s;
        words.emplace_back();
      } else {
        words.back() += s;
      }
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

}  // namespace

void wpm_encode(const Vocabulary& vocab, std::string_view text, std::vector<int32_t>& out) {
  static constexpr std::string_view kWordPrefix = "\xE2\x96\x81";  // ▁
  std::string word;
  for (const std::string& w : wpm_words(text)) {
    word.assign(kWordPrefix);
    word += w;
    const size_t before = out.size();
    const size_t n = word.size();
    size_t i = 0;
    bool covered = true;
    while (i < n) {
      size_t j = std::min(n, i + vocab.max_token_bytes);
      int32_t id = kNoToken;
      for (; j > i; --j) {
        id = vocab.find(std::string_view(word).substr(i, j - i));
        if (id != kNoToken) break;
      }
      if (id == kNoToken) {
        covered = false;
        break;
      }
      out.push_back(id);
      i = j;
    }
    if (!covered) out.resize(before);
    if (out.size() == before && vocab.unk_id != kNoToken) out.push_back(vocab.unk_id);
  }
}

}  // namespace hearth::detail
