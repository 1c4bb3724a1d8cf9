// Sequences over the KV block pool (see kv_cache.h).
#include "kv/kv_cache.h"

#include <cassert>

namespace hearth::kv {

Result<KvCache> KvCache::create(const KvLayout& layout, int32_t n_blocks) {
  HEARTH_ASSIGN(KvBlockPool pool, KvBlockPool::create(layout, n_blocks));
  return KvCache(std::move(pool));
}

int32_t KvCache::seq_create() {
  for (size_t i = 0; i < seqs_.size(); ++i) {
    if (!seqs_[i].live) {
      seqs_[i] = Sequence{true, 0, {}};
      return static_cast<int32_t>(i);
    }
  }
  seqs_.push_back(Sequence{true, 0, {}});
  return static_cast<int32_t>(seqs_.size() - 1);
}

bool KvCache::seq_valid(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < seqs_.size() && seqs_[static_cast<size_t>(id)].live;
}

int32_t KvCache::n_sequences() const {
  int32_t n = 0;
  for (const auto& s : seqs_) n += s.live ? 1 : 0;
  return n;
}

Result<int32_t> KvCache::seq_fork(int32_t src) {
  if (!seq_valid(src)) return make_error(ErrorKind::kNotFound, "no KV sequence " + std::to_string(src));
  int32_t id = seq_create();
  Sequence& from = seq(src);  // after seq_create: the vector may have grown
  Sequence& to = seq(id);
  to.length = from.length;
  to.blocks = from.blocks;
  for (int32_t b : to.blocks) pool_.kv_block_ref(b);
  return id;
}

void KvCache::seq_free(int32_t id) {
  if (!seq_valid(id)) return;
  Sequence& s = seq(id);
  for (int32_t b : s.blocks) pool_.kv_block_unref(b);
  s = Sequence{};
}

Status KvCache::seq_truncate(int32_t id, int32_t n_tokens) {
  if (!seq_valid(id)) return make_error(ErrorKind::kNotFound, "no KV sequence " + std::to_string(id));
  Sequence& s = seq(id);
  if (n_tokens < 0 || n_tokens > s.length) {
    return make_error(ErrorKind::kOutOfRange, "cannot truncate a sequence of " + std::to_string(s.length) +
                                                  " tokens to " + std::to_string(n_tokens));
  }
  const int32_t bt = block_tokens();
  const size_t keep_blocks = static_cast<size_t>((n_tokens + bt - 1) / bt);
  while (s.blocks.size() > keep_blocks) {
    pool_.kv_block_unref(s.blocks.back());
    s.blocks.pop_back();
  }
  s.length = n_tokens;
  return ok_status();
}

Status KvCache::seq_append(int32_t id, int32_t n_tokens) {
  if (!seq_valid(id)) return make_error(ErrorKind::kNotFound, "no KV sequence " + std::to_string(id));
  if (n_tokens < 0) return make_error(ErrorKind::kInvalidArgument, "cannot append a negative token count");
  if (n_tokens == 0) return ok_status();
  Sequence& s = seq(id);
  const int32_t bt = block_tokens();
  const int32_t new_length = s.length + n_tokens;
  const size_t need_blocks = static_cast<size_t>((new_length + bt - 1) / bt);
  // The block holding the first new token is written into: if it is shared, copy it first.
  const bool cow = (s.length % bt) != 0 && pool_.kv_block_refcount(s.blocks.back()) > 1;
  const size_t extra = need_blocks - s.blocks.size() + (cow ? 1 : 0);
  if (static_cast<size_t>(pool_.n_free()) < extra) {
    return make_error(ErrorKind::kOutOfRange, "KV cache is full: " + std::to_string(extra) + " more blocks needed, " +
                                                  std::to_string(pool_.n_free()) + " free");
  }
  if (cow) {
    int32_t copy = pool_.kv_block_alloc().value();
    pool_.kv_block_copy(s.blocks.back(), copy);
    pool_.kv_block_unref(s.blocks.back());
    s.blocks.back() = copy;
  }
  while (s.blocks.size() < need_blocks) s.blocks.push_back(pool_.kv_block_alloc().value());
  s.length = new_length;
  return ok_status();
}

uint8_t* KvCache::k_row(int32_t layer, int32_t id, int32_t pos) {
  const Sequence& s = seq(id);
  assert(pos >= 0 && pos < s.length);
  const int32_t bt = block_tokens();
  return pool_.k_block(layer, s.blocks[static_cast<size_t>(pos / bt)]) + static_cast<size_t>(pos % bt) * pool_.k_row_bytes();
}

uint8_t* KvCache::v_row(int32_t layer, int32_t id, int32_t pos) {
  const Sequence& s = seq(id);
  assert(pos >= 0 && pos < s.length);
  const int32_t bt = block_tokens();
  return pool_.v_block(layer, s.blocks[static_cast<size_t>(pos / bt)]) + static_cast<size_t>(pos % bt) * pool_.v_row_bytes();
}

}  // namespace hearth::kv
