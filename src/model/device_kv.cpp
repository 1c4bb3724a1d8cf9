// Device KV chunks (see device_kv.h): allocation and release per chunk, the address table
// the kernels read, and the device-side block copy of copy-on-write.
#include "model/device_kv.h"

#include <string>
#include <vector>

namespace hearth::model {

Result<std::unique_ptr<DeviceKvPool>> DeviceKvPool::create(device::Context& ctx, const kv::KvBlockPool& pool,
                                                           int32_t n_layers) {
  const kv::KvLayout& l = pool.layout();
  if (l.type != DType::kF16) return make_error(ErrorKind::kUnsupported, "the device KV holds F16 rows only");
  if (!ctx.buffer_addresses()) {
    return make_error(ErrorKind::kUnsupported, ctx.info().name + " has no buffer device addresses for the paged KV");
  }
  if (n_layers <= 0 || l.k_row_elems % 2 != 0 || l.v_row_elems % 2 != 0) {
    return make_error(ErrorKind::kInvalidArgument, "device KV needs layers and even rows");
  }
  std::unique_ptr<DeviceKvPool> p(new DeviceKvPool(ctx));
  p->n_layers_ = n_layers;
  p->block_tokens_ = l.block_tokens;
  p->blocks_per_chunk_ = pool.blocks_per_chunk();
  p->k_row_bytes_ = static_cast<size_t>(l.k_row_elems) * 2;
  p->v_row_bytes_ = static_cast<size_t>(l.v_row_elems) * 2;
  // A pool smaller than one chunk (a CPU pool shaped by few CPU layers has many blocks a
  // chunk) needs room for its own blocks only: they all live in chunk 0.
  p->chunk_slots_ = pool.chunk_slots();
  p->layer_bytes_ = static_cast<size_t>(l.block_tokens) * (p->k_row_bytes_ + p->v_row_bytes_);
  p->slot_bytes_ = p->layer_bytes_ * static_cast<size_t>(n_layers);
  if (p->chunk_bytes() / 4 > UINT32_MAX) return make_error(ErrorKind::kUnsupported, "device KV chunks too large");
  const size_t n_chunks =
      (static_cast<size_t>(pool.n_blocks()) + static_cast<size_t>(p->blocks_per_chunk_) - 1) / p->blocks_per_chunk_;
  p->chunks_.resize(n_chunks);
  for (size_t c = 0; c < n_chunks; ++c) p->chunk_blocks_.push_back(pool.blocks_in_chunk(static_cast<int32_t>(c)));
  HEARTH_ASSIGN(p->addresses_, ctx.alloc(n_chunks * 8));
  HEARTH_TRY(ctx.fill_zero(p->addresses_));
  return p;
}

Status DeviceKvPool::commit_chunk(int32_t chunk) {
  device::Buffer& b = chunks_[static_cast<size_t>(chunk)];
  if (b.valid()) return ok_status();
  HEARTH_ASSIGN(device::Buffer nb, ctx_.alloc(chunk_bytes(chunk)));
  HEARTH_ASSIGN(uint64_t addr, ctx_.address(nb));
  HEARTH_TRY(ctx_.upload(addresses_, static_cast<size_t>(chunk) * 8, &addr, 8));
  b = std::move(nb);
  ++committed_;
  return ok_status();
}

void DeviceKvPool::release_chunk(int32_t chunk) {
  device::Buffer& b = chunks_[static_cast<size_t>(chunk)];
  if (!b.valid()) return;
  // The address goes first, so no kernel can reach freed memory through a stale entry; a
  // failed write leaves the entry (the pool never hands out a block of a released chunk).
  const uint64_t zero = 0;
  (void)ctx_.upload(addresses_, static_cast<size_t>(chunk) * 8, &zero, 8);
  b = device::Buffer();
  --committed_;
}

Status DeviceKvPool::copy_block(int32_t src, int32_t dst) {
  const device::Buffer& from = chunks_[static_cast<size_t>(src / blocks_per_chunk_)];
  const device::Buffer& to = chunks_[static_cast<size_t>(dst / blocks_per_chunk_)];
  if (!from.valid() || !to.valid()) {
    return make_error(ErrorKind::kInternal, "device KV copy of block " + std::to_string(src) + " to " +
                                                std::to_string(dst) + ": a chunk is not committed");
  }
  // Every layer's K and V rows of the block are its slot: one region, one submission.
  const device::Recorder::CopyRegion region{slot_offset(src), slot_offset(dst), slot_bytes_};
  device::Recorder rec(ctx_);
  HEARTH_TRY(rec.copy(from, to, std::span<const device::Recorder::CopyRegion>(&region, 1)));
  return rec.run();
}

Status DeviceKvPool::read_block(int32_t layer, int32_t block, std::vector<uint16_t>* k, std::vector<uint16_t>* v) const {
  const device::Buffer& c = chunks_[static_cast<size_t>(block / blocks_per_chunk_)];
  if (!c.valid()) return make_error(ErrorKind::kOutOfRange, "block " + std::to_string(block) + " is not on the device");
  const size_t rows_k = static_cast<size_t>(block_tokens_) * k_row_bytes_;
  const size_t base = slot_offset(block) + layer_offset(layer);
  k->resize(rows_k / 2);
  v->resize(static_cast<size_t>(block_tokens_) * v_row_bytes_ / 2);
  HEARTH_TRY(ctx_.download(c, base, k->data(), k->size() * 2));
  return ctx_.download(c, base + rows_k, v->data(), v->size() * 2);
}

kernels::vulkan::DeviceKv DeviceKvPool::view(int32_t layer, const device::Buffer& table, uint32_t table_offset) const {
  const size_t rows_k = static_cast<size_t>(block_tokens_) * k_row_bytes_;
  const size_t base = layer_offset(layer);
  kernels::vulkan::DeviceKv kv;
  kv.chunks = &addresses_;
  kv.table = &table;
  kv.block_tokens = static_cast<uint32_t>(block_tokens_);
  kv.table_offset = table_offset;
  kv.blocks_per_chunk = static_cast<uint32_t>(blocks_per_chunk_);
  kv.k_word = static_cast<uint32_t>(base / 4);
  kv.v_word = static_cast<uint32_t>((base + rows_k) / 4);
  kv.slot_words = static_cast<uint32_t>(slot_bytes_ / 4);
  return kv;
}

}  // namespace hearth::model
