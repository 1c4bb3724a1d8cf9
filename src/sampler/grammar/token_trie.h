// A model's vocabulary as a byte trie, built once per tokenizer and shared by every request
// that samples under a grammar. Tokens that share a prefix share its nodes, so computing which
// tokens a grammar allows checks each common prefix once: the walk skips a whole subtree as
// soon as its prefix is rejected. Nodes are stored in preorder with the end of their subtree,
// which makes the walk a forward scan with jumps.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::sampler {

class TokenTrie {
 public:
  struct Node {
    uint32_t subtree_end;   // index of the first node after this node's subtree
    uint32_t tokens_begin;  // tokens whose bytes end exactly here: token_ids()[tokens_begin, tokens_end)
    uint32_t tokens_end;
    uint16_t depth;         // bytes from the root (the root has depth 0)
    uint8_t byte;           // the byte on the edge into this node
  };

  // pieces[id]: the bytes token `id` stands for ("" for control tokens without text);
  // eog[id] != 0: the token ends generation. Empty-piece tokens that are not end-of-generation
  // are never allowed under a grammar. Pieces longer than 65535 bytes are not allowed either.
  static std::shared_ptr<const TokenTrie> build(const std::vector<std::string>& pieces, const std::vector<uint8_t>& eog);

  size_t n_vocab() const { return piece_offsets_.size() - 1; }
  std::string_view piece(int32_t id) const;
  bool is_eog(int32_t id) const { return eog_[static_cast<size_t>(id)] != 0; }
  std::span<const int32_t> eog_tokens() const { return eog_ids_; }

  std::span<const Node> nodes() const { return nodes_; }
  std::span<const int32_t> token_ids() const { return sorted_ids_; }
  size_t max_depth() const { return max_depth_; }

 private:
  std::string bytes_;
  std::vector<uint32_t> piece_offsets_;
  std::vector<uint8_t> eog_;
  std::vector<int32_t> eog_ids_;
  std::vector<Node> nodes_;
  std::vector<int32_t> sorted_ids_;
  size_t max_depth_ = 0;
};

}  // namespace hearth::sampler
