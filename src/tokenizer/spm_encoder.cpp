// SentencePiece-style encoding: a priority queue of adjacent symbol pairs ordered by the score
// of the merged piece (ties: leftmost first), merged until no pair forms a token. The text is
// first cut where no token could span the cut, so each queue stays small; overall O(n log n).
#include <cstdio>
#include <queue>

#include "tokenizer/encoders.h"
#include "tokenizer/utf8_codec.h"

namespace hearth::detail {

namespace {

struct SpmSymbol {
  int32_t prev;
  int32_t next;
  uint32_t start;
  uint32_t len;  // 0 once merged into its left neighbour
};

struct SpmPair {
  float score;
  int32_t left;
  int32_t right;
  uint32_t len;
  bool operator<(const SpmPair& o) const {  // max-heap: higher score, then lower left first
    return score < o.score || (score == o.score && left > o.left);
  }
};

// A symbol (1..4 bytes) packed into 32 bits. Unique: a symbol longer than one byte starts
// with a lead byte >= 0xC0, so the packed value's width gives back its length.
uint32_t pack_char(std::string_view s) {
  uint32_t v = 0;
  for (char c : s) v = (v << 8) | static_cast<uint8_t>(c);
  return v;
}

uint64_t pair_key(std::string_view a, std::string_view b) {
  return (static_cast<uint64_t>(pack_char(a)) << 32) | pack_char(b);
}

size_t char_len_at(std::string_view text, size_t pos) {
  return std::min(utf8::sequence_length(static_cast<uint8_t>(text[pos])), text.size() - pos);
}

// Merges one independent stretch of symbols (offsets into text) and appends its tokens.
void merge_chunk(const Vocabulary& vocab, std::string_view text, std::vector<SpmSymbol>& symbols,
                 const std::array<int32_t, 256>& byte_token, std::vector<int32_t>& out) {
  if (symbols.empty()) return;
  symbols.back().next = -1;
  std::vector<SpmPair> heap_storage;
  heap_storage.reserve(symbols.size() * 2);
  std::priority_queue<SpmPair> queue(std::less<SpmPair>(), std::move(heap_storage));
  auto try_pair = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const SpmSymbol& l = symbols[static_cast<size_t>(left)];
    const SpmSymbol& r = symbols[static_cast<size_t>(right)];
    const int32_t id = vocab.find(text.substr(l.start, l.len + r.len));
    if (id == kNoToken) return;
    queue.push({vocab.score_of(id), left, right, l.len + r.len});
  };
  for (size_t i = 1; i < symbols.size(); ++i) try_pair(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));

  while (!queue.empty()) {
    const SpmPair pair = queue.top();
    queue.pop();
    SpmSymbol& l = symbols[static_cast<size_t>(pair.left)];
    SpmSymbol& r = symbols[static_cast<size_t>(pair.right)];
    if (l.len == 0 || r.len == 0 || l.len + r.len != pair.len) continue;  // stale entry
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[static_cast<size_t>(r.next)].prev = pair.left;
    try_pair(l.prev, pair.left);
    try_pair(pair.left, l.next);
  }

  for (int32_t i = 0; i != -1; i = symbols[static_cast<size_t>(i)].next) {
    const SpmSymbol& s = symbols[static_cast<size_t>(i)];
    const std::string_view piece = text.substr(s.start, s.len);
    const int32_t id = vocab.find(piece);
    if (id != kNoToken) {
      out.push_back(id);
      continue;
    }
    for (char c : piece) {
      const int32_t b = byte_token[static_cast<uint8_t>(c)];
      if (b != kNoToken) out.push_back(b);
    }
  }
}

}  // namespace

SpmModel SpmModel::build(const Vocabulary& vocab) {
  SpmModel m;
  for (const std::string& token : vocab.tokens) {
    const std::string_view t(token);
    size_t pos = 0;
    std::string_view prev;
    while (pos < t.size()) {
      const size_t n = char_len_at(t, pos);
      const std::string_view cur = t.substr(pos, n);
      if (!prev.empty()) m.joinable_pairs_.insert(pair_key(prev, cur));
      prev = cur;
      pos += n;
    }
  }
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    int32_t id = vocab.find(buf);
    const char raw = static_cast<char>(b);
    if (id == kNoToken) id = vocab.find(std::string_view(&raw, 1));
    m.byte_token_[static_cast<size_t>(b)] = id == kNoToken ? vocab.unk_id : id;
  }
  return m;
}

void SpmModel::encode(const Vocabulary& vocab, std::string_view text, std::vector<int32_t>& out) const {
  // Independent stretches repeat a lot in real text (each word is usually one): remember
  // where the ids of short ones were written and copy them.
  constexpr size_t kMaxCachedBytes = 48;
  constexpr size_t kMaxCacheEntries = 1 << 16;
  std::unordered_map<std::string_view, std::pair<size_t, size_t>> seen;
  std::vector<SpmSymbol> chunk;
  auto flush_chunk = [&] {
    if (chunk.empty()) return;
    const size_t begin = chunk.front().start;
    const size_t bytes = chunk.back().start + chunk.back().len - begin;
    const std::string_view key = text.substr(begin, bytes);
    if (bytes <= kMaxCachedBytes) {
      if (auto it = seen.find(key); it != seen.end()) {
        for (size_t i = 0; i < it->second.second; ++i) {
          const int32_t id = out[it->second.first + i];
          out.push_back(id);
        }
        chunk.clear();
        return;
      }
    }
    const size_t before = out.size();
    merge_chunk(vocab, text, chunk, byte_token_, out);
    if (bytes <= kMaxCachedBytes && seen.size() < kMaxCacheEntries) {
      seen.emplace(key, std::make_pair(before, out.size() - before));
    }
    chunk.clear();
  };
  size_t pos = 0;
  std::string_view prev;
  while (pos < text.size()) {
    const size_t n = char_len_at(text, pos);
    const std::string_view cur = text.substr(pos, n);
    if (!prev.empty() && !joinable_pairs_.count(pair_key(prev, cur))) flush_chunk();
    const auto idx = static_cast<int32_t>(chunk.size());
    chunk.push_back({idx - 1, idx + 1, static_cast<uint32_t>(pos), static_cast<uint32_t>(n)});
    prev = cur;
    pos += n;
  }
  flush_chunk();
}

}  // namespace hearth::detail
