// Encodes and decodes the per-process KV budget segment; see kv_budget_segment.h.
#include "kv/kv_budget_segment.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <ctime>

namespace hearth::kv {
namespace {

// Segment words are shared with other processes, so every access is atomic. A reader's mapping
// is read-only: an atomic load of an aligned word does not write, so the const_cast is safe.
uint64_t load_word(const uint64_t& word, std::memory_order order = std::memory_order_acquire) {
  return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(word)).load(order);
}
uint32_t load_word32(const uint32_t& word) {
  return std::atomic_ref<uint32_t>(const_cast<uint32_t&>(word)).load(std::memory_order_acquire);
}
void store_word(uint64_t& word, uint64_t value, std::memory_order order = std::memory_order_release) {
  std::atomic_ref<uint64_t>(word).store(value, order);
}

constexpr int kReadAttempts = 64;

std::string printable_label(const char* bytes, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    out += (c >= 0x20 && c < 0x7f) || c >= 0x80 ? static_cast<char>(c) : '?';
  }
  return out;
}

}  // namespace

const char* budget_state_name(BudgetState state) {
  switch (state) {
    case BudgetState::kStarting: return "starting";
    case BudgetState::kServing: return "serving";
    case BudgetState::kOverLimit: return "over-limit";
    case BudgetState::kExiting: return "exiting";
  }
  return "unknown";
}

uint64_t budget_clock_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

Result<BudgetSegmentOwner> read_budget_segment_owner(const void* memory, size_t size) {
  const auto* seg = static_cast<const BudgetSegmentLayout*>(memory);
  if (size < offsetof(BudgetSegmentLayout, seq)) {
    return make_error(ErrorKind::kCorrupt, "segment is " + std::to_string(size) + " bytes, too short for its header");
  }
  if (std::memcmp(seg->magic, kBudgetSegmentMagic, sizeof(kBudgetSegmentMagic)) != 0) {
    return make_error(ErrorKind::kCorrupt, "not a Hearth KV budget segment (wrong magic)");
  }
  BudgetSegmentOwner owner;
  owner.pid = static_cast<int64_t>(load_word(reinterpret_cast<const uint64_t&>(seg->pid)));
  owner.start_ticks = load_word(seg->start_ticks);
  if (owner.pid <= 0 || owner.pid > INT32_MAX) {
    return make_error(ErrorKind::kCorrupt, "segment names pid " + std::to_string(owner.pid));
  }
  return owner;
}

Result<BudgetSnapshot> read_budget_segment(const void* memory, size_t size) {
  auto owner = read_budget_segment_owner(memory, size);
  if (!owner.ok()) return owner.error();
  const auto* seg = static_cast<const BudgetSegmentLayout*>(memory);
  const uint32_t version = load_word32(seg->layout_version);
  if (version != kBudgetSegmentVersion) {
    return make_error(ErrorKind::kUnsupported,
                      "segment layout version " + std::to_string(version) + " (this Hearth reads version " +
                          std::to_string(kBudgetSegmentVersion) + "; it was written by " +
                          (version < kBudgetSegmentVersion ? "an older" : "a newer") + " Hearth)");
  }
  const uint32_t declared = load_word32(seg->segment_bytes);
  if (size < sizeof(BudgetSegmentLayout) || declared != sizeof(BudgetSegmentLayout)) {
    return make_error(ErrorKind::kCorrupt, "segment is " + std::to_string(size) + " bytes and declares " +
                                               std::to_string(declared) + ", version 1 needs " +
                                               std::to_string(sizeof(BudgetSegmentLayout)));
  }
  BudgetSnapshot snap;
  uint32_t label_length = 0;
  char label[kBudgetLabelBytes];
  for (int attempt = 0; attempt < kReadAttempts; ++attempt) {
    const uint64_t before = load_word(seg->seq);
    snap.reserved_bytes = load_word(seg->reserved_bytes);
    snap.committed_bytes = load_word(seg->committed_bytes);
    snap.used_bytes = load_word(seg->used_bytes);
    snap.state = static_cast<BudgetState>(load_word32(seg->state));
    label_length = load_word32(seg->label_length);
    for (size_t i = 0; i < kBudgetLabelBytes; ++i) {
      label[i] = static_cast<char>(std::atomic_ref<char>(const_cast<char&>(seg->label[i])).load(std::memory_order_relaxed));
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (before % 2 == 0 && load_word(seg->seq, std::memory_order_relaxed) == before) break;
  }
  snap.pid = owner->pid;
  snap.start_ticks = owner->start_ticks;
  snap.heartbeat_ns = load_word(seg->heartbeat_ns);
  snap.limit_bytes = load_word(seg->limit_bytes);
  snap.requested_limit_bytes = load_word(seg->requested_limit_bytes);
  const auto absurd = [](uint64_t v) { return v != kNoBudgetLimit && v > kBudgetAbsurdBytes; };
  if (snap.reserved_bytes > kBudgetAbsurdBytes || snap.committed_bytes > kBudgetAbsurdBytes ||
      snap.used_bytes > kBudgetAbsurdBytes || absurd(snap.limit_bytes) || absurd(snap.requested_limit_bytes)) {
    return make_error(ErrorKind::kCorrupt, "segment of pid " + std::to_string(snap.pid) + " holds an absurd size");
  }
  const auto state = static_cast<uint32_t>(snap.state);
  if (state < static_cast<uint32_t>(BudgetState::kStarting) || state > static_cast<uint32_t>(BudgetState::kExiting)) {
    return make_error(ErrorKind::kCorrupt, "segment of pid " + std::to_string(snap.pid) + " has unknown state " +
                                               std::to_string(state));
  }
  if (label_length > kBudgetLabelBytes) {
    return make_error(ErrorKind::kCorrupt, "segment of pid " + std::to_string(snap.pid) + " has a label of " +
                                               std::to_string(label_length) + " bytes (at most 64)");
  }
  snap.label = printable_label(label, label_length);
  return snap;
}

void init_budget_segment(BudgetSegmentLayout& seg, int64_t pid, uint64_t start_ticks, std::string_view label,
                         uint64_t reserved_bytes, uint64_t heartbeat_ns) {
  // The segment is not yet visible to anyone (it is renamed into place afterwards).
  std::memset(&seg, 0, sizeof(seg));
  std::memcpy(seg.magic, kBudgetSegmentMagic, sizeof(seg.magic));
  seg.layout_version = kBudgetSegmentVersion;
  seg.segment_bytes = sizeof(BudgetSegmentLayout);
  seg.pid = pid;
  seg.start_ticks = start_ticks;
  seg.heartbeat_ns = heartbeat_ns;
  seg.reserved_bytes = reserved_bytes;
  seg.limit_bytes = kNoBudgetLimit;
  seg.requested_limit_bytes = kNoBudgetLimit;
  seg.state = static_cast<uint32_t>(BudgetState::kStarting);
  const size_t n = std::min(label.size(), kBudgetLabelBytes);
  std::memcpy(seg.label, label.data(), n);
  seg.label_length = static_cast<uint32_t>(n);
  std::atomic_thread_fence(std::memory_order_release);
}

void write_budget_usage(BudgetSegmentLayout& seg, uint64_t reserved, uint64_t committed, uint64_t used, BudgetState state) {
  const uint64_t seq = load_word(seg.seq, std::memory_order_relaxed);
  store_word(seg.seq, seq + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  store_word(seg.reserved_bytes, reserved, std::memory_order_relaxed);
  store_word(seg.committed_bytes, committed, std::memory_order_relaxed);
  store_word(seg.used_bytes, used, std::memory_order_relaxed);
  std::atomic_ref<uint32_t>(seg.state).store(static_cast<uint32_t>(state), std::memory_order_relaxed);
  store_word(seg.seq, seq + 2, std::memory_order_release);
}

void write_budget_heartbeat(BudgetSegmentLayout& seg, uint64_t heartbeat_ns) { store_word(seg.heartbeat_ns, heartbeat_ns); }
void write_budget_limit(BudgetSegmentLayout& seg, uint64_t limit_bytes) { store_word(seg.limit_bytes, limit_bytes); }
void write_budget_requested_limit(BudgetSegmentLayout& seg, uint64_t requested_bytes) {
  store_word(seg.requested_limit_bytes, requested_bytes);
}
uint64_t read_budget_requested_limit(const BudgetSegmentLayout& seg) { return load_word(seg.requested_limit_bytes); }

}  // namespace hearth::kv
