// Byte-level BPE (GPT-2 family): pre-tokenize with the model's regexes, map every byte to
// GPT-2's printable alphabet, then merge adjacent symbols lowest merge rank first with a
// priority queue over a linked list (O(n log n) per word, so long words stay fast).
#include <queue>

#include "tokenizer/encoders.h"
#include "tokenizer/utf8_codec.h"

namespace hearth::detail {

namespace {

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

struct BpeSymbol {
  int32_t prev;
  int32_t next;
  uint32_t start;
  uint32_t len;  // bytes of the word; 0 once merged away
  int32_t id;    // token id of the symbol's text, or -1
};

struct BpePair {
  int32_t rank;
  int32_t left;
  int32_t right;
  int32_t left_id;
  int32_t right_id;
  int32_t merged_id;
  bool operator<(const BpePair& o) const {  // max-heap order: lowest rank, then leftmost, on top
    return rank > o.rank || (rank == o.rank && left > o.left);
  }
};

}  // namespace

Result<BpeModel> BpeModel::build(const Vocabulary& vocab) {
  BpeModel m;
  HEARTH_ASSIGN(m.pre_, PreTokenizer::for_name(vocab.pre));
  // GPT-2's byte alphabet: printable Latin-1 bytes stand for themselves, the other 68 bytes
  // take code points 256, 257, ... in byte order.
  uint32_t next_extra = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    const uint32_t cp = printable ? static_cast<uint32_t>(b) : next_extra++;
    std::string s;
    utf8::append(s, cp);
    m.byte_text_[static_cast<size_t>(b)] = s;
    m.byte_token_[static_cast<size_t>(b)] = vocab.find(s);
    m.char_to_byte_[cp] = static_cast<uint8_t>(b);
  }
  m.merges_.reserve(vocab.merges.size());
  for (size_t rank = 0; rank < vocab.merges.size(); ++rank) {
    const std::string& merge = vocab.merges[rank];
    const size_t space = merge.find(' ', 1);
    if (space == std::string::npos) {
      return make_error(ErrorKind::kCorrupt, "tokenizer.ggml.merges[" + std::to_string(rank) + "] '" + merge +
                                                 "' is not two pieces separated by a space");
    }
    const std::string_view left(merge.data(), space);
    const std::string_view right(merge.data() + space + 1, merge.size() - space - 1);
    const int32_t left_id = vocab.find(left);
    const int32_t right_id = vocab.find(right);
    const int32_t merged_id = vocab.find(std::string(left) + std::string(right));
    // A merge whose parts or result are not tokens can never fire on token symbols.
    if (left_id == kNoToken || right_id == kNoToken || merged_id == kNoToken) continue;
    m.merges_.emplace(pair_key(left_id, right_id), MergeResult{static_cast<int32_t>(rank), merged_id});
  }
  return m;
}

void BpeModel::encode(const Vocabulary& vocab, std::string_view text, std::vector<int32_t>& out) const {
  const std::string clean = utf8::sanitize(text);
  // Words repeat a lot in real text: remember where each short word's ids were written.
  constexpr size_t kMaxCachedWordBytes = 48;
  constexpr size_t kMaxCacheEntries = 1 << 16;
  std::unordered_map<std::string_view, std::pair<size_t, size_t>> seen;
  for (const auto& [start, len] : pre_.split(clean)) {
    const std::string_view word = std::string_view(clean).substr(start, len);
    if (len <= kMaxCachedWordBytes) {
      if (auto it = seen.find(word); it != seen.end()) {
        for (size_t i = 0; i < it->second.second; ++i) {
          const int32_t id = out[it->second.first + i];
          out.push_back(id);
        }
        continue;
      }
    }
    const size_t before = out.size();
    encode_word(vocab, word, out);
    if (len <= kMaxCachedWordBytes && seen.size() < kMaxCacheEntries) {
      seen.emplace(word, std::make_pair(before, out.size() - before));
    }
  }
}

void BpeModel::encode_word(const Vocabulary& vocab, std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (pre_.ignore_merges()) {
    std::string mapped;
    for (char c : word) mapped += byte_text_[static_cast<uint8_t>(c)];
    const int32_t whole = vocab.find(mapped);
    if (whole != kNoToken) {
      out.push_back(whole);
      return;
    }
  }
  std::vector<BpeSymbol> symbols(word.size());
  for (size_t i = 0; i < word.size(); ++i) {
    symbols[i] = {static_cast<int32_t>(i) - 1, i + 1 == word.size() ? -1 : static_cast<int32_t>(i + 1),
                  static_cast<uint32_t>(i), 1, byte_token_[static_cast<uint8_t>(word[i])]};
  }
  std::priority_queue<BpePair> queue;
  auto try_pair = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const int32_t lid = symbols[static_cast<size_t>(left)].id;
    const int32_t rid = symbols[static_cast<size_t>(right)].id;
    if (lid < 0 || rid < 0) return;
    auto it = merges_.find(pair_key(lid, rid));
    if (it == merges_.end()) return;
    queue.push({it->second.rank, left, right, lid, rid, it->second.merged_id});
  };
  for (size_t i = 1; i < symbols.size(); ++i) try_pair(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));

  while (!queue.empty()) {
    const BpePair p = queue.top();
    queue.pop();
    BpeSymbol& l = symbols[static_cast<size_t>(p.left)];
    BpeSymbol& r = symbols[static_cast<size_t>(p.right)];
    if (l.len == 0 || r.len == 0 || l.id != p.left_id || r.id != p.right_id || l.next != p.right) continue;
    l.len += r.len;
    l.id = p.merged_id;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[static_cast<size_t>(r.next)].prev = p.left;
    try_pair(l.prev, p.left);
    try_pair(p.left, l.next);
  }

  for (int32_t i = 0; i != -1; i = symbols[static_cast<size_t>(i)].next) {
    const BpeSymbol& s = symbols[static_cast<size_t>(i)];
    if (s.id != kNoToken) {
      out.push_back(s.id);
      continue;
    }
    // Not a token (a byte missing from the vocabulary): try each byte of its alphabet text
    // as a one-byte token, as the reference does; usually nothing matches and it is dropped.
    for (size_t k = 0; k < s.len; ++k) {
      for (char c : byte_text_[static_cast<uint8_t>(word[s.start + k])]) {
        const int32_t id = vocab.find(std::string_view(&c, 1));
        if (id != kNoToken) out.push_back(id);
      }
    }
  }
}

std::string BpeModel::decode_text(std::string_view token_text) const {
  std::string out;
  out.reserve(token_text.size());
  size_t pos = 0;
  while (pos < token_text.size()) {
    size_t n = 1;
    const uint32_t cp = utf8::decode_one(token_text, pos, &n);
    auto it = char_to_byte_.find(cp);
    if (it != char_to_byte_.end() && !(cp == utf8::kReplacementChar && n == 1)) {
      out.push_back(static_cast<char>(it->second));
    } else {
      out.append(token_text.substr(pos, n));  // not in the byte alphabet: keep as written
    }
    pos += n;
  }
  return out;
}

}  // namespace hearth::detail
