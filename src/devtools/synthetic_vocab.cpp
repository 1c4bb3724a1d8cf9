// Builds the synthetic BPE vocabulary (see synthetic_vocab.h).
#include "devtools/synthetic_vocab.h"

namespace hearth::devtools {
namespace {

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// GPT-2's byte-to-unicode table: printable Latin-1 bytes map to themselves, the other 68 to
// U+0100 upward in byte order. Returns the 256 strings in the order of that table's listing
// (the printable ones first), which is the order byte-level vocabularies start with.
std::vector<std::string> byte_alphabet() {
  std::vector<int> printable;
  for (int b = '!'; b <= '~'; ++b) printable.push_back(b);
  for (int b = 0xA1; b <= 0xAC; ++b) printable.push_back(b);
  for (int b = 0xAE; b <= 0xFF; ++b) printable.push_back(b);
  std::vector<uint32_t> cp_of(256, 0);
  std::vector<bool> is_printable(256, false);
  for (int b : printable) {
    cp_of[static_cast<size_t>(b)] = static_cast<uint32_t>(b);
    is_printable[static_cast<size_t>(b)] = true;
  }
  uint32_t next = 256;
  std::vector<int> order = printable;
  for (int b = 0; b < 256; ++b) {
    if (!is_printable[static_cast<size_t>(b)]) {
      cp_of[static_cast<size_t>(b)] = next++;
      order.push_back(b);
    }
  }
  std::vector<std::string> out;
  for (int b : order) {
    std::string s;
    append_utf8(s, cp_of[static_cast<size_t>(b)]);
    out.push_back(s);
  }
  return out;
}

}  // namespace

Result<SyntheticVocab> make_synthetic_vocab(const ModelShape& shape) {
  const int64_t n_normal = static_cast<int64_t>(shape.n_vocab) - shape.n_special;
  if (shape.n_special < static_cast<int32_t>(shape.specials.size()) || n_normal < 256) {
    return make_error(ErrorKind::kInvalidArgument, "vocabulary of " + std::to_string(shape.n_vocab) + " tokens with " +
                                                       std::to_string(shape.n_special) +
                                                       " special ones leaves fewer than 256 normal tokens");
  }
  if (n_normal > 256 + 256 * 256 + 256 * 256 * 256) {
    return make_error(ErrorKind::kInvalidArgument, "vocabulary too large for three-byte tokens");
  }
  SyntheticVocab v;
  v.tokens.reserve(static_cast<size_t>(shape.n_vocab));
  const std::vector<std::string> bytes = byte_alphabet();
  v.tokens = bytes;
  // Two-byte tokens a+b, then three-byte tokens (a+b)+c, each with its merge. Every part of a
  // merge exists before the merge, so BPE can build every token.
  for (int64_t i = 0; static_cast<int64_t>(v.tokens.size()) < n_normal; ++i) {
    if (i < 256 * 256) {
      const std::string& a = bytes[static_cast<size_t>(i / 256)];
      const std::string& b = bytes[static_cast<size_t>(i % 256)];
      v.tokens.push_back(a + b);
      v.merges.push_back(a + " " + b);
    } else {
      const int64_t j = i - 256 * 256;
      const std::string& ab = v.tokens[static_cast<size_t>(256 + j / 256)];
      const std::string& c = bytes[static_cast<size_t>(j % 256)];
      v.merges.push_back(ab + " " + c);
      v.tokens.push_back(ab + c);
    }
  }
  v.token_types.assign(v.tokens.size(), 1);
  // Reserved tokens continue the numbering of the ones the shape names explicitly.
  int32_t reserved = 0;
  for (const auto& name : shape.specials) reserved += name.find("reserved_special_token_") != std::string::npos;
  for (int32_t k = 0; k < shape.n_special; ++k) {
    const int32_t id = static_cast<int32_t>(v.tokens.size());
    std::string name;
    if (static_cast<size_t>(k) < shape.specials.size()) {
      name = shape.specials[static_cast<size_t>(k)];
    } else {
      name = "<|reserved_special_token_" + std::to_string(reserved++) + "|>";
    }
    if (name == shape.bos) v.bos = id;
    if (name == shape.eos) v.eos = id;
    if (name == shape.pad) v.pad = id;
    v.tokens.push_back(name);
    v.token_types.push_back(3);
  }
  return v;
}

}  // namespace hearth::devtools
