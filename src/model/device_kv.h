// The KV of offloaded layers in device memory, elastic like the CPU pool: it mirrors the CPU
// KvBlockPool's chunks (kv::KvChunkMirror), so a device chunk is allocated when the pool hands
// out the first block of that chunk and freed when the pool releases the chunk, and a
// copy-on-write copy of a block is made on the device too. Block ids are the CPU pool's, so
// the CPU KvCache stays the one bookkeeper of sequences, prefixes and blocks; the chunks are
// separate allocations reached through a table of device addresses (the block table makes
// physical contiguity unnecessary - the kvcached idea without CUDA's virtual memory API).
// A chunk is its block slots one after another, each holding every offloaded layer's rows of
// that block, so a chunk is as long as the blocks it holds: the pool's last chunk, often
// partly past the pool's end, is allocated for its own blocks only.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "device/device.h"
#include "kernels/vulkan/vulkan_ops.h"
#include "kv/kv_block_pool.h"
#include "util/result.h"

namespace hearth::model {

class DeviceKvPool final : public kv::KvChunkMirror {
 public:
  // F16 K and V rows of `n_layers` layers for every block of `pool` (whose layout gives the
  // row sizes, F16 only). The device must have buffer addresses.
  static Result<std::unique_ptr<DeviceKvPool>> create(device::Context& ctx, const kv::KvBlockPool& pool,
                                                      int32_t n_layers);

  Status commit_chunk(int32_t chunk) override;
  void release_chunk(int32_t chunk) override;
  Status copy_block(int32_t src, int32_t dst) override;
  // A full chunk's bytes (blocks_per_chunk blocks, or every block of a smaller pool); the last
  // chunk's, chunk_bytes(last), may be less.
  size_t chunk_bytes() const override { return slot_bytes_ * static_cast<size_t>(chunk_slots_); }
  size_t chunk_bytes(int32_t chunk) const { return slot_bytes_ * static_cast<size_t>(chunk_blocks_[static_cast<size_t>(chunk)]); }

  // The kernels' view of layer `layer`'s K and V for a sequence whose block table starts at
  // entry table_offset of `table`.
  kernels::vulkan::DeviceKv view(int32_t layer, const device::Buffer& table, uint32_t table_offset) const;
  int32_t chunks_committed() const { return committed_; }
  // Downloads layer `layer`'s K and V rows of pool block `block` (F16 bits; tests and
  // diagnostics); kOutOfRange when its chunk is not committed.
  Status read_block(int32_t layer, int32_t block, std::vector<uint16_t>* k, std::vector<uint16_t>* v) const;

 private:
  DeviceKvPool(device::Context& ctx) : ctx_(ctx) {}
  // Where block `block`'s slot starts in its chunk, and layer `layer`'s K rows in a slot (its
  // V rows follow them).
  size_t slot_offset(int32_t block) const { return static_cast<size_t>(block % blocks_per_chunk_) * slot_bytes_; }
  size_t layer_offset(int32_t layer) const { return static_cast<size_t>(layer) * layer_bytes_; }

  device::Context& ctx_;
  int32_t n_layers_ = 0;
  int32_t block_tokens_ = 0;
  int32_t blocks_per_chunk_ = 1;
  int32_t chunk_slots_ = 1;  // blocks a full chunk holds: min(blocks_per_chunk_, n_blocks_)
  size_t k_row_bytes_ = 0, v_row_bytes_ = 0;
  size_t layer_bytes_ = 0;  // one layer's K and V rows of one block
  size_t slot_bytes_ = 0;   // every layer's rows of one block
  std::vector<device::Buffer> chunks_;
  std::vector<int32_t> chunk_blocks_;  // blocks each chunk holds (the pool's blocks_in_chunk)
  device::Buffer addresses_;  // one uint64 device address per chunk (0: not committed)
  int32_t committed_ = 0;
};

}  // namespace hearth::model
