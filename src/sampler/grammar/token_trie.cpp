// Builds the vocabulary trie (see token_trie.h) from the pieces sorted bytewise: consecutive
// pieces share their common prefix, so nodes are opened and closed like a depth-first walk.
#include "sampler/grammar/token_trie.h"

#include <algorithm>
#include <numeric>

namespace hearth::sampler {

std::string_view TokenTrie::piece(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= n_vocab()) return {};
  const auto i = static_cast<size_t>(id);
  return std::string_view(bytes_).substr(piece_offsets_[i], piece_offsets_[i + 1] - piece_offsets_[i]);
}

std::shared_ptr<const TokenTrie> TokenTrie::build(const std::vector<std::string>& pieces,
                                                  const std::vector<uint8_t>& eog) {
  auto t = std::make_shared<TokenTrie>();
  const size_t n = pieces.size();
  t->piece_offsets_.reserve(n + 1);
  t->eog_.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    t->piece_offsets_.push_back(static_cast<uint32_t>(t->bytes_.size()));
    t->bytes_ += pieces[i];
    if (i < eog.size() && eog[i] != 0) {
      t->eog_[i] = 1;
      t->eog_ids_.push_back(static_cast<int32_t>(i));
    }
  }
  t->piece_offsets_.push_back(static_cast<uint32_t>(t->bytes_.size()));

  std::vector<int32_t> ids;
  for (size_t i = 0; i < n; ++i) {
    if (!t->eog_[i] && !pieces[i].empty() && pieces[i].size() <= UINT16_MAX) ids.push_back(static_cast<int32_t>(i));
  }
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    const std::string& pa = pieces[static_cast<size_t>(a)];
    const std::string& pb = pieces[static_cast<size_t>(b)];
    return pa < pb || (pa == pb && a < b);  // std::string compares bytes as unsigned char
  });

  auto& nodes = t->nodes_;
  nodes.push_back({0, 0, 0, 0, 0});
  std::vector<uint32_t> open = {0};  // open[d]: the node at depth d on the current path
  std::string_view prev;
  for (size_t k = 0; k < ids.size(); ++k) {
    const std::string& p = pieces[static_cast<size_t>(ids[k])];
    size_t common = 0;
    while (common < prev.size() && common < p.size() && prev[common] == p[common]) ++common;
    while (open.size() > common + 1) {
      nodes[open.back()].subtree_end = static_cast<uint32_t>(nodes.size());
      open.pop_back();
    }
    for (size_t d = common; d < p.size(); ++d) {
      const auto at = static_cast<uint32_t>(k);
      nodes.push_back({0, at, at, static_cast<uint16_t>(d + 1), static_cast<uint8_t>(p[d])});
      open.push_back(static_cast<uint32_t>(nodes.size() - 1));
    }
    // Identical pieces are adjacent, so a node's tokens form one run of the sorted ids.
    Node& end = nodes[open.back()];
    if (end.tokens_begin == end.tokens_end) end.tokens_begin = static_cast<uint32_t>(k);
    end.tokens_end = static_cast<uint32_t>(k + 1);
    t->max_depth_ = std::max(t->max_depth_, p.size());
    prev = p;
  }
  while (!open.empty()) {
    nodes[open.back()].subtree_end = static_cast<uint32_t>(nodes.size());
    open.pop_back();
  }
  t->sorted_ids_ = std::move(ids);
  return t;
}

}  // namespace hearth::sampler
