// The shared-memory record one serving process publishes about its KV memory (the kvcached
// MemInfo idea): a fixed-layout struct with no pointers, mapped from a small file, written by
// its owner and read by anyone of the same user (`hearth kv ls`, other serving processes that
// split a machine-wide limit). Fields the owner changes together (sizes, state) sit under a
// seqlock; the heartbeat and the effective limit are single atomic words; the requested limit
// is the one word a controller (`hearth kv limit`) writes. The first 32 bytes (magic, version,
// size, pid, start time) keep their place in every layout version, so any Hearth can tell
// whose segment it is and whether its owner still lives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "util/result.h"

namespace hearth::kv {

inline constexpr char kBudgetSegmentMagic[8] = {'H', 'R', 'T', 'H', 'K', 'V', 'S', 'G'};
inline constexpr uint32_t kBudgetSegmentVersion = 1;
inline constexpr size_t kBudgetLabelBytes = 64;
// "No limit" in every limit field.
inline constexpr uint64_t kNoBudgetLimit = UINT64_MAX;
// Larger than any machine's memory (1 EiB): a size beyond it in a segment is garbage.
inline constexpr uint64_t kBudgetAbsurdBytes = uint64_t{1} << 60;

enum class BudgetState : uint32_t {
  kStarting = 1,   // registered, the model is still loading
  kServing = 2,    // within its limit
  kOverLimit = 3,  // holds more than its limit: admits nothing new, evicts, waits for sequences
  kExiting = 4,    // shutting down; the segment goes away with it
};
const char* budget_state_name(BudgetState state);

// Version 1 of the layout, 256 bytes. Words are accessed through std::atomic_ref only.
struct alignas(64) BudgetSegmentLayout {
  char magic[8];
  uint32_t layout_version;
  uint32_t segment_bytes;           // sizeof(BudgetSegmentLayout) of the writer
  int64_t pid;
  uint64_t start_ticks;             // field 22 of /proc/<pid>/stat: tells a reused pid apart
  uint64_t seq;                     // seqlock: odd while the owner writes the fields below
  uint64_t heartbeat_ns;            // CLOCK_MONOTONIC (machine-wide on Linux)
  uint64_t reserved_bytes;          // address space reserved for KV (the most it could commit)
  uint64_t committed_bytes;         // memory committed (what it costs the machine)
  uint64_t used_bytes;              // bytes in blocks that hold tokens (live or cached)
  uint64_t limit_bytes;             // the effective limit the owner applies now
  uint64_t requested_limit_bytes;   // written by `hearth kv limit PID|LABEL`
  uint32_t state;                   // BudgetState
  uint32_t label_length;
  char label[kBudgetLabelBytes];
  uint8_t spare[256 - 160];
};
static_assert(sizeof(BudgetSegmentLayout) == 256);
static_assert(offsetof(BudgetSegmentLayout, seq) == 32);
static_assert(offsetof(BudgetSegmentLayout, label) == 96);

// A consistent copy of one segment, checked.
struct BudgetSnapshot {
  int64_t pid = 0;
  uint64_t start_ticks = 0;
  uint64_t heartbeat_ns = 0;
  uint64_t reserved_bytes = 0;
  uint64_t committed_bytes = 0;
  uint64_t used_bytes = 0;
  uint64_t limit_bytes = kNoBudgetLimit;
  uint64_t requested_limit_bytes = kNoBudgetLimit;
  BudgetState state = BudgetState::kStarting;
  std::string label;
};

// Reads and checks a segment of `size` bytes at `memory` (8-byte aligned, as a mapping is).
// kCorrupt for a short buffer, a wrong magic, a size or state out of range or a label that is
// not printable; kUnsupported for another layout version (the message names both versions).
// Retries a write in progress a few times and then takes the words as they are: the owner may
// have died mid-write, and each word is still whole.
Result<BudgetSnapshot> read_budget_segment(const void* memory, size_t size);

// The pid and start time a segment of any version names, from its fixed header, without
// checking the rest; kCorrupt when even the header (magic, a plausible pid) is not there.
struct BudgetSegmentOwner {
  int64_t pid = 0;
  uint64_t start_ticks = 0;
};
Result<BudgetSegmentOwner> read_budget_segment_owner(const void* memory, size_t size);

// Owner-side writes into a mapped segment (the owner serialises them).
void init_budget_segment(BudgetSegmentLayout& seg, int64_t pid, uint64_t start_ticks, std::string_view label,
                         uint64_t reserved_bytes, uint64_t heartbeat_ns);
void write_budget_usage(BudgetSegmentLayout& seg, uint64_t reserved, uint64_t committed, uint64_t used, BudgetState state);
void write_budget_heartbeat(BudgetSegmentLayout& seg, uint64_t heartbeat_ns);
void write_budget_limit(BudgetSegmentLayout& seg, uint64_t limit_bytes);
// The controller's one word.
void write_budget_requested_limit(BudgetSegmentLayout& seg, uint64_t requested_bytes);
uint64_t read_budget_requested_limit(const BudgetSegmentLayout& seg);

// CLOCK_MONOTONIC in nanoseconds, the heartbeat clock.
uint64_t budget_clock_ns();

}  // namespace hearth::kv
