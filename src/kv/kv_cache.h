// The paged KV cache: sequences own block tables over a shared KvBlockPool. A sequence grows
// by appending tokens (blocks are taken from the pool as needed), can be truncated (blocks
// past the end go back), and can be forked: the fork shares every block of its source, and
// the first write into a shared block copies it (copy-on-write). The forward pass looks K/V
// rows up through the block table, so several sequences live in one batch at their own
// positions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/kv_block_pool.h"
#include "util/result.h"

namespace hearth::kv {

class KvCache {
 public:
  static Result<KvCache> create(const KvLayout& layout, int32_t n_blocks);

  // A new empty sequence.
  int32_t seq_create();
  // A new sequence sharing all of src's tokens (no copy until one of them writes).
  Result<int32_t> seq_fork(int32_t src);
  void seq_free(int32_t seq);
  // Keeps the first n_tokens (n_tokens <= length).
  Status seq_truncate(int32_t seq, int32_t n_tokens);
  // Grows the sequence by n_tokens; the caller then writes their K/V rows at positions
  // [old length, old length + n_tokens). Fails without changing anything if the pool cannot
  // supply the blocks.
  Status seq_append(int32_t seq, int32_t n_tokens);

  bool seq_valid(int32_t seq) const;
  int32_t seq_length(int32_t seq) const { return seqs_[static_cast<size_t>(seq)].length; }
  std::span<const int32_t> block_table(int32_t seq) const { return seqs_[static_cast<size_t>(seq)].blocks; }
  int32_t n_sequences() const;

  // Row of one token (pos < length) in one layer.
  uint8_t* k_row(int32_t layer, int32_t seq, int32_t pos);
  uint8_t* v_row(int32_t layer, int32_t seq, int32_t pos);

  KvBlockPool& pool() { return pool_; }
  const KvBlockPool& pool() const { return pool_; }
  int32_t block_tokens() const { return pool_.layout().block_tokens; }

 private:
  explicit KvCache(KvBlockPool pool) : pool_(std::move(pool)) {}
  struct Sequence {
    bool live = false;
    int32_t length = 0;
    std::vector<int32_t> blocks;
  };
  Sequence& seq(int32_t id) { return seqs_[static_cast<size_t>(id)]; }

  KvBlockPool pool_;
  std::vector<Sequence> seqs_;
};

}  // namespace hearth::kv
