// The KV block pool: chunk bookkeeping, lowest-chunk-first allocation, the background
// committer and chunk release (see kv_block_pool.h).
#include "kv/kv_block_pool.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <deque>
#include <utility>

namespace hearth::kv {

enum class ChunkState : uint8_t { kReleased, kCommitting, kCommitted };

// What the committer thread shares with the pool. The engine thread changes chunk states from
// kReleased to kCommitting (queueing the chunk) and from kCommitted back to kReleased; the
// committer only turns kCommitting into kCommitted. All state changes hold mu.
struct KvBlockPool::Shared {
  std::unique_ptr<KvMemory> memory;
  size_t chunk_stride = 0;
  mutable std::mutex mu;
  std::condition_variable cv;
  std::vector<ChunkState> state;
  std::deque<int32_t> queue;
  bool stop = false;
  std::thread committer;

  std::atomic<size_t> limit{0};
  std::atomic<int32_t> used_blocks{0};
  std::atomic<int64_t> committed_chunks{0};
  std::atomic<uint64_t> chunks_committed_total{0};
  std::atomic<uint64_t> chunks_released_total{0};
  std::atomic<uint64_t> commits_on_demand_total{0};
  std::atomic<int64_t> mirror_blocks{0};  // blocks of the chunks the mirror holds
  std::atomic<size_t> mirror_chunk_bytes{0};
  std::atomic<uint64_t> mirror_chunks_released_total{0};

  ~Shared() {
    {
      std::lock_guard lock(mu);
      stop = true;
    }
    cv.notify_all();
    if (committer.joinable()) committer.join();
  }

  void run() {
    std::unique_lock lock(mu);
    for (;;) {
      cv.wait(lock, [&] { return stop || !queue.empty(); });
      if (stop) return;
      const int32_t c = queue.front();
      queue.pop_front();
      lock.unlock();
      const Status st = memory->commit(static_cast<size_t>(c) * chunk_stride, chunk_stride);
      lock.lock();
      // A failed prefault leaves the chunk released; the allocating thread retries (and reports).
      state[static_cast<size_t>(c)] = st.ok() ? ChunkState::kCommitted : ChunkState::kReleased;
      if (st.ok()) {
        committed_chunks.fetch_add(1);
        chunks_committed_total.fetch_add(1);
      }
      cv.notify_all();
    }
  }
};

namespace {
// A pool's geometry: bytes of one block (its CPU layers' rows), blocks per chunk and the
// stride between chunks (whole memory chunks; 0 when no layer keeps rows here).
struct Geometry {
  size_t block_bytes = 0;
  int32_t blocks_per_chunk = 1;
  size_t chunk_stride = 0;
};
Geometry geometry(const KvLayout& layout, size_t k_row, size_t v_row) {
  const size_t layer_rows = static_cast<size_t>(layout.block_tokens) * (k_row + v_row);
  Geometry g;
  g.block_bytes = static_cast<size_t>(layout.cpu_layers()) * layer_rows;
  const size_t shaping = static_cast<size_t>(std::max(1, layout.cpu_layers())) * layer_rows;
  g.blocks_per_chunk = std::max<int32_t>(1, static_cast<int32_t>(std::min<size_t>(kKvChunkBytes / shaping, INT32_MAX)));
  g.chunk_stride = (static_cast<size_t>(g.blocks_per_chunk) * g.block_bytes + kKvChunkBytes - 1) / kKvChunkBytes *
                   kKvChunkBytes;
  return g;
}
bool layout_valid(const KvLayout& layout, int32_t n_blocks) {
  return layout.n_layers > 0 && layout.k_row_elems > 0 && layout.v_row_elems > 0 && layout.block_tokens > 0 &&
         n_blocks > 0 && layout.offloaded_layers >= 0 && layout.offloaded_layers <= layout.n_layers;
}
}  // namespace

Result<size_t> KvBlockPool::bytes_needed(const KvLayout& layout, int32_t n_blocks) {
  HEARTH_ASSIGN(uint64_t k_row, dtype_row_bytes(layout.type, static_cast<uint64_t>(layout.k_row_elems)));
  HEARTH_ASSIGN(uint64_t v_row, dtype_row_bytes(layout.type, static_cast<uint64_t>(layout.v_row_elems)));
  const Geometry g = geometry(layout, k_row, v_row);
  const size_t chunks = (static_cast<size_t>(n_blocks) + static_cast<size_t>(g.blocks_per_chunk) - 1) /
                        static_cast<size_t>(g.blocks_per_chunk);
  return chunks * g.chunk_stride;
}

Result<KvBlockPool> KvBlockPool::create(const KvLayout& layout, int32_t n_blocks, const KvPoolOptions& options) {
  if (!layout_valid(layout, n_blocks)) {
    return make_error(ErrorKind::kInvalidArgument, "KV layout needs positive layers, row sizes, block size and count");
  }
  HEARTH_ASSIGN(size_t bytes, bytes_needed(layout, n_blocks));
  // Every layer offloaded: no rows, but a reservation still gives the pool a base address.
  HEARTH_ASSIGN(std::unique_ptr<CpuKvMemory> memory, CpuKvMemory::reserve(std::max(bytes, kKvChunkBytes)));
  return create(layout, n_blocks, options, std::move(memory));
}

Result<KvBlockPool> KvBlockPool::create(const KvLayout& layout, int32_t n_blocks, const KvPoolOptions& options,
                                        std::unique_ptr<KvMemory> memory) {
  if (!layout_valid(layout, n_blocks)) {
    return make_error(ErrorKind::kInvalidArgument, "KV layout needs positive layers, row sizes, block size and count");
  }
  if (layout.type != DType::kF16 && layout.type != DType::kF32 && layout.type != DType::kQ8_0 &&
      layout.type != DType::kQ4_0 && layout.type != DType::kBF16) {
    return make_error(ErrorKind::kUnsupported, "KV cache type " + std::string(dtype_name(layout.type)) +
                                                   " is not supported (use f16, bf16, f32, q8_0 or q4_0)");
  }
  if (layout.type == DType::kBF16 && (layout.block_tokens % 2 != 0 || layout.k_row_elems % 2 != 0)) {
    return make_error(ErrorKind::kInvalidArgument, "a BF16 KV cache stores token and element pairs: it needs an even "
                                                   "block size and row length");
  }
  if (layout.by_head && layout.type != DType::kF16) {
    return make_error(ErrorKind::kInvalidArgument, "a by-head block layout needs an F16 cache");
  }
  if (options.reserve_chunks < 0) return make_error(ErrorKind::kInvalidArgument, "reserve_chunks must not be negative");
  HEARTH_ASSIGN(size_t need, bytes_needed(layout, n_blocks));
  if (memory == nullptr || memory->reserved_bytes() < need || memory->chunk_bytes() != kKvChunkBytes) {
    return make_error(ErrorKind::kInvalidArgument, "the KV memory is smaller than the pool needs");
  }
  KvBlockPool pool;
  pool.layout_ = layout;
  pool.n_blocks_ = n_blocks;
  pool.k_row_bytes_ = dtype_row_bytes(layout.type, static_cast<uint64_t>(layout.k_row_elems)).value();
  pool.v_row_bytes_ = dtype_row_bytes(layout.type, static_cast<uint64_t>(layout.v_row_elems)).value();
  const Geometry g = geometry(layout, pool.k_row_bytes_, pool.v_row_bytes_);
  pool.block_bytes_ = g.block_bytes;
  pool.blocks_per_chunk_ = g.blocks_per_chunk;
  pool.chunk_stride_ = g.chunk_stride;
  pool.n_chunks_ = (static_cast<size_t>(n_blocks) + static_cast<size_t>(pool.blocks_per_chunk_) - 1) /
                   static_cast<size_t>(pool.blocks_per_chunk_);
  pool.reserve_chunks_ = options.reserve_chunks;
  pool.base_ = memory->base();
  pool.refcount_.assign(static_cast<size_t>(n_blocks), 0);
  pool.chunk_used_.assign(pool.n_chunks_, 0);
  pool.shared_ = std::make_unique<Shared>();
  Shared& sh = *pool.shared_;
  sh.memory = std::move(memory);
  sh.chunk_stride = pool.chunk_stride_;
  sh.state.assign(pool.n_chunks_, ChunkState::kReleased);
  if (options.background_commit) sh.committer = std::thread([s = pool.shared_.get()] { s->run(); });
  pool.commit_ahead();  // the pre-committed reserve
  return pool;
}

KvBlockPool::~KvBlockPool() = default;
KvBlockPool::KvBlockPool(KvBlockPool&& o) noexcept = default;
KvBlockPool& KvBlockPool::operator=(KvBlockPool&& o) noexcept = default;

bool KvBlockPool::chunk_committed(int32_t chunk) const {
  std::lock_guard lock(shared_->mu);
  return shared_->state[static_cast<size_t>(chunk)] == ChunkState::kCommitted;
}

// The chunk the next block comes from: the lowest committed one with a free block, else the
// lowest one being prefaulted (waiting for it), else the lowest released one, committed now.
int32_t KvBlockPool::pick_chunk() {
  Shared& sh = *shared_;
  std::unique_lock lock(sh.mu);
  int32_t committing = -1, released = -1;
  for (size_t c = 0; c < n_chunks_; ++c) {
    const int32_t cap = blocks_in_chunk(static_cast<int32_t>(c));
    if (chunk_used_[c] >= cap) continue;
    if (sh.state[c] == ChunkState::kCommitted) return static_cast<int32_t>(c);
    if (sh.state[c] == ChunkState::kCommitting && committing < 0) committing = static_cast<int32_t>(c);
    if (sh.state[c] == ChunkState::kReleased && released < 0) released = static_cast<int32_t>(c);
  }
  if (committing >= 0) {
    sh.cv.wait(lock, [&] { return sh.state[static_cast<size_t>(committing)] != ChunkState::kCommitting; });
    if (sh.state[static_cast<size_t>(committing)] == ChunkState::kCommitted) return committing;
    if (released < 0 || committing < released) released = committing;
  }
  if (released < 0) return -1;
  sh.state[static_cast<size_t>(released)] = ChunkState::kCommitting;  // keeps the committer off it
  lock.unlock();
  const Status st = sh.memory->commit(static_cast<size_t>(released) * chunk_stride_, chunk_stride_);
  lock.lock();
  // On failure the chunk is used anyway: its pages fault in on first write, as before pools
  // were elastic, so a refused prefault never fails a sequence by itself.
  (void)st;
  sh.state[static_cast<size_t>(released)] = ChunkState::kCommitted;
  sh.committed_chunks.fetch_add(1);
  sh.chunks_committed_total.fetch_add(1);
  sh.commits_on_demand_total.fetch_add(1);
  return released;
}

// Keeps at least reserve_chunks chunks' worth of free blocks committed (or being committed)
// ahead of allocation, within the limit, by queueing the lowest released chunks.
void KvBlockPool::commit_ahead() {
  if (reserve_chunks_ == 0 || !shared_->committer.joinable()) return;
  Shared& sh = *shared_;
  std::lock_guard lock(sh.mu);
  int64_t headroom = 0;
  int64_t resident = 0;
  for (size_t c = 0; c < n_chunks_; ++c) {
    if (sh.state[c] == ChunkState::kReleased) continue;
    const int32_t cap = blocks_in_chunk(static_cast<int32_t>(c));
    headroom += cap - chunk_used_[c];
    ++resident;
  }
  const size_t limit = sh.limit.load();
  const int64_t want = static_cast<int64_t>(reserve_chunks_) * blocks_per_chunk_;
  bool queued = false;
  for (size_t c = 0; c < n_chunks_ && headroom < want; ++c) {
    if (sh.state[c] != ChunkState::kReleased) continue;
    if (limit != 0 && static_cast<size_t>(resident + 1) * chunk_stride_ > limit) break;
    sh.state[c] = ChunkState::kCommitting;
    sh.queue.push_back(static_cast<int32_t>(c));
    headroom += blocks_in_chunk(static_cast<int32_t>(c));
    ++resident;
    queued = true;
  }
  if (queued) sh.cv.notify_all();
}

Result<int32_t> KvBlockPool::kv_block_alloc() {
  const int32_t c = n_used_ < n_blocks_ ? pick_chunk() : -1;
  if (c < 0) {
    return make_error(ErrorKind::kOutOfRange, "KV cache is full (" + std::to_string(n_blocks_) + " blocks of " +
                                                  std::to_string(layout_.block_tokens) + " tokens in use)");
  }
  if (mirror_ != nullptr && mirror_committed_[static_cast<size_t>(c)] == 0) {
    if (Status st = mirror_->commit_chunk(c); !st.ok()) {
      return make_error(ErrorKind::kOutOfRange, "KV cache is full on the device: " + st.error().message);
    }
    mirror_committed_[static_cast<size_t>(c)] = 1;
    shared_->mirror_blocks.fetch_add(blocks_in_chunk(c));
  }
  const int32_t first = c * blocks_per_chunk_;
  const int32_t last = std::min(first + blocks_per_chunk_, n_blocks_);
  int32_t b = first;
  while (b < last && refcount_[static_cast<size_t>(b)] != 0) ++b;
  assert(b < last);
  refcount_[static_cast<size_t>(b)] = 1;
  ++chunk_used_[static_cast<size_t>(c)];
  ++n_used_;
  shared_->used_blocks.store(n_used_);
  commit_ahead();
  return b;
}

void KvBlockPool::kv_block_ref(int32_t block) {
  assert(refcount_[static_cast<size_t>(block)] > 0);
  refcount_[static_cast<size_t>(block)]++;
}

void KvBlockPool::kv_block_unref(int32_t block) {
  int32_t& rc = refcount_[static_cast<size_t>(block)];
  assert(rc > 0);
  if (--rc != 0) return;
  const int32_t c = chunk_of(block);
  --n_used_;
  shared_->used_blocks.store(n_used_);
  if (--chunk_used_[static_cast<size_t>(c)] == 0) release_empty_chunks(reserve_chunks_);
}

void KvBlockPool::release_chunk(int32_t chunk) {
  Shared& sh = *shared_;
  {
    std::lock_guard lock(sh.mu);
    sh.state[static_cast<size_t>(chunk)] = ChunkState::kReleased;
  }
  sh.memory->release(static_cast<size_t>(chunk) * chunk_stride_, chunk_stride_);
  sh.committed_chunks.fetch_sub(1);
  if (mirror_ != nullptr && mirror_committed_[static_cast<size_t>(chunk)] != 0) {
    mirror_->release_chunk(chunk);
    mirror_committed_[static_cast<size_t>(chunk)] = 0;
    sh.mirror_blocks.fetch_sub(blocks_in_chunk(chunk));
    sh.mirror_chunks_released_total.fetch_add(1);
  }
  sh.chunks_released_total.fetch_add(1);
}

int32_t KvBlockPool::release_empty_chunks(int32_t keep_empty_chunks) {
  std::vector<int32_t> empty;  // committed chunks without a used block, ascending
  // Chunks the committer is still prefaulting are empty too and will stay committed: they
  // count among the kept ones (else a commit ahead landing after this leaves one too many).
  int32_t in_flight = 0;
  {
    std::lock_guard lock(shared_->mu);
    for (size_t c = 0; c < n_chunks_; ++c) {
      if (shared_->state[c] == ChunkState::kCommitted && chunk_used_[c] == 0) empty.push_back(static_cast<int32_t>(c));
      if (shared_->state[c] == ChunkState::kCommitting) ++in_flight;
    }
  }
  int32_t released = 0;
  while (!empty.empty() && static_cast<int32_t>(empty.size()) + in_flight > std::max(0, keep_empty_chunks)) {
    release_chunk(empty.back());  // the highest first: allocation prefers low chunks
    empty.pop_back();
    ++released;
  }
  return released;
}

void KvBlockPool::wait_for_commits() const {
  Shared& sh = *shared_;
  std::unique_lock lock(sh.mu);
  sh.cv.wait(lock, [&] {
    return std::none_of(sh.state.begin(), sh.state.end(), [](ChunkState st) { return st == ChunkState::kCommitting; });
  });
}

void KvBlockPool::set_limit(size_t bytes) { shared_->limit.store(bytes); }

size_t KvBlockPool::limit() const {
  const size_t l = shared_->limit.load();
  return l == 0 || l > bytes_reserved() ? bytes_reserved() : l;
}

bool KvBlockPool::limit_admits_blocks(int32_t n) const {
  if (limit() >= bytes_reserved()) return true;
  return static_cast<size_t>(n_used_ + n) * block_bytes_ <= limit();
}

bool KvBlockPool::admits_blocks(int32_t n) const {
  if (n_used_ + n > n_blocks_) return false;
  return static_cast<size_t>(n_used_ + n) * block_bytes_ <= limit();
}

KvPoolStats KvBlockPool::stats() const {
  const Shared& sh = *shared_;
  KvPoolStats s;
  s.reserved_bytes = bytes_reserved();
  s.committed_bytes = static_cast<size_t>(std::max<int64_t>(0, sh.committed_chunks.load())) * chunk_stride_;
  s.block_bytes = block_bytes_;
  s.blocks_total = n_blocks_;
  s.blocks_used = sh.used_blocks.load();
  s.used_bytes = static_cast<size_t>(s.blocks_used) * block_bytes_;
  s.limit_bytes = limit();
  s.chunks_committed_total = sh.chunks_committed_total.load();
  s.chunks_released_total = sh.chunks_released_total.load();
  s.commits_on_demand_total = sh.commits_on_demand_total.load();
  // The mirror's memory by blocks: its last chunk holds only the blocks that exist.
  s.mirror_block_bytes = sh.mirror_chunk_bytes.load() / static_cast<size_t>(chunk_slots());
  s.mirror_reserved_bytes = static_cast<size_t>(n_blocks_) * s.mirror_block_bytes;
  s.mirror_committed_bytes = static_cast<size_t>(std::max<int64_t>(0, sh.mirror_blocks.load())) * s.mirror_block_bytes;
  s.mirror_chunks_released_total = sh.mirror_chunks_released_total.load();
  return s;
}

uint8_t* KvBlockPool::layer_region(int32_t layer, int32_t block) {
  assert(layer >= layout_.offloaded_layers && layer < layout_.n_layers);
  return base_ + static_cast<size_t>(block / blocks_per_chunk_) * chunk_stride_ +
         static_cast<size_t>(layer - layout_.offloaded_layers) * chunk_layer_bytes();
}

uint8_t* KvBlockPool::k_block(int32_t layer, int32_t block) {
  return layer_region(layer, block) + static_cast<size_t>(block % blocks_per_chunk_) * k_block_bytes();
}

uint8_t* KvBlockPool::v_block(int32_t layer, int32_t block) {
  return layer_region(layer, block) + static_cast<size_t>(blocks_per_chunk_) * k_block_bytes() +
         static_cast<size_t>(block % blocks_per_chunk_) * v_block_bytes();
}

Status KvBlockPool::kv_block_copy(int32_t src, int32_t dst) {
  // A block's rows are two runs per layer (its K rows, its V rows) in its chunk's layer regions.
  for (int32_t layer = layout_.offloaded_layers; layer < layout_.n_layers; ++layer) {
    std::memcpy(k_block(layer, dst), k_block(layer, src), k_block_bytes());
    std::memcpy(v_block(layer, dst), v_block(layer, src), v_block_bytes());
  }
  return mirror_ != nullptr ? mirror_->copy_block(src, dst) : ok_status();
}

Status KvBlockPool::attach_mirror(KvChunkMirror* mirror) {
  if (mirror != nullptr && n_used_ != 0) {
    return make_error(ErrorKind::kInvalidArgument, "a KV mirror can only be attached while no block is in use");
  }
  mirror_ = mirror;
  mirror_committed_.assign(n_chunks_, 0);
  shared_->mirror_blocks.store(0);
  shared_->mirror_chunk_bytes.store(mirror != nullptr ? mirror->chunk_bytes() : 0);
  return ok_status();
}

}  // namespace hearth::kv
