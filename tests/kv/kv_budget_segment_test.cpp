// Tests for the KV budget segment layout: a round trip through init/write/read, and readers
// that answer garbage, truncation, other versions and random bytes with an error, never a crash.
#include "kv/kv_budget_segment.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace hearth::kv {
namespace {

BudgetSegmentLayout filled_segment() {
  BudgetSegmentLayout seg;
  init_budget_segment(seg, 4242, 987654, "llama-1b", 8ull << 30, 1000);
  write_budget_usage(seg, 8ull << 30, 300ull << 20, 200ull << 20, BudgetState::kServing);
  write_budget_heartbeat(seg, 5000);
  write_budget_limit(seg, 1ull << 30);
  write_budget_requested_limit(seg, 2ull << 30);
  return seg;
}

TEST(KvBudgetSegment, RoundTrip) {
  const BudgetSegmentLayout seg = filled_segment();
  auto snap = read_budget_segment(&seg, sizeof(seg));
  ASSERT_TRUE(snap.ok()) << snap.error().to_string();
  EXPECT_EQ(snap->pid, 4242);
  EXPECT_EQ(snap->start_ticks, 987654u);
  EXPECT_EQ(snap->label, "llama-1b");
  EXPECT_EQ(snap->reserved_bytes, 8ull << 30);
  EXPECT_EQ(snap->committed_bytes, 300ull << 20);
  EXPECT_EQ(snap->used_bytes, 200ull << 20);
  EXPECT_EQ(snap->heartbeat_ns, 5000u);
  EXPECT_EQ(snap->limit_bytes, 1ull << 30);
  EXPECT_EQ(snap->requested_limit_bytes, 2ull << 30);
  EXPECT_EQ(snap->state, BudgetState::kServing);
  EXPECT_EQ(read_budget_requested_limit(seg), 2ull << 30);
  // Each write is one seqlock round: the counter is even again afterwards.
  EXPECT_EQ(seg.seq % 2, 0u);
  EXPECT_EQ(seg.seq, 2u);
}

TEST(KvBudgetSegment, LabelIsCutAndMadePrintable) {
  BudgetSegmentLayout seg;
  init_budget_segment(seg, 1, 1, std::string(100, 'x'), 0, 0);
  EXPECT_EQ(read_budget_segment(&seg, sizeof(seg))->label, std::string(64, 'x'));
  init_budget_segment(seg, 1, 1, "a\x1b[2Jb\n", 0, 0);
  EXPECT_EQ(read_budget_segment(&seg, sizeof(seg))->label, "a?[2Jb?");
}

TEST(KvBudgetSegment, GarbageIsAnError) {
  BudgetSegmentLayout seg = filled_segment();
  EXPECT_EQ(read_budget_segment(&seg, 10).error().kind, ErrorKind::kCorrupt);
  EXPECT_EQ(read_budget_segment(&seg, 100).error().kind, ErrorKind::kCorrupt);  // truncated
  seg.magic[0] = 'X';
  EXPECT_NE(read_budget_segment(&seg, sizeof(seg)).error().message.find("wrong magic"), std::string::npos);
  seg = filled_segment();
  seg.used_bytes = uint64_t{1} << 62;
  EXPECT_NE(read_budget_segment(&seg, sizeof(seg)).error().message.find("absurd"), std::string::npos);
  seg = filled_segment();
  seg.state = 77;
  EXPECT_EQ(read_budget_segment(&seg, sizeof(seg)).error().kind, ErrorKind::kCorrupt);
  seg = filled_segment();
  seg.label_length = 65;
  EXPECT_EQ(read_budget_segment(&seg, sizeof(seg)).error().kind, ErrorKind::kCorrupt);
  seg = filled_segment();
  seg.pid = -5;
  EXPECT_EQ(read_budget_segment(&seg, sizeof(seg)).error().kind, ErrorKind::kCorrupt);
  seg = filled_segment();
  seg.segment_bytes = 128;
  EXPECT_EQ(read_budget_segment(&seg, sizeof(seg)).error().kind, ErrorKind::kCorrupt);
}

TEST(KvBudgetSegment, OtherVersionsAreNamed) {
  BudgetSegmentLayout seg = filled_segment();
  seg.layout_version = 0;
  auto older = read_budget_segment(&seg, sizeof(seg));
  ASSERT_FALSE(older.ok());
  EXPECT_EQ(older.error().kind, ErrorKind::kUnsupported);
  EXPECT_NE(older.error().message.find("an older Hearth"), std::string::npos) << older.error().message;
  seg.layout_version = 2;
  EXPECT_NE(read_budget_segment(&seg, sizeof(seg)).error().message.find("a newer Hearth"), std::string::npos);
  // The owner header still reads, so a dead owner's old segment can be collected.
  auto owner = read_budget_segment_owner(&seg, sizeof(seg));
  ASSERT_TRUE(owner.ok());
  EXPECT_EQ(owner->pid, 4242);
}

TEST(KvBudgetSegment, WriteInProgressStillReads) {
  BudgetSegmentLayout seg = filled_segment();
  seg.seq = 7;  // the owner died between the two seqlock stores
  auto snap = read_budget_segment(&seg, sizeof(seg));
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->used_bytes, 200ull << 20);
}

// The reader meets bytes nobody checked: random buffers and random corruptions of a valid
// segment must give a checked snapshot or an error (ASan/UBSan watch the rest).
TEST(KvBudgetSegment, RandomBytesNeverCrash) {
  std::mt19937_64 rng(17);
  alignas(64) uint8_t buf[512];
  int accepted = 0;
  for (int round = 0; round < 20000; ++round) {
    const size_t size = rng() % sizeof(buf);
    if (round % 2 == 0) {
      for (auto& b : buf) b = static_cast<uint8_t>(rng());
    } else {
      const BudgetSegmentLayout seg = filled_segment();
      std::memcpy(buf, &seg, sizeof(seg));
      for (int flips = 1 + static_cast<int>(rng() % 4); flips > 0; --flips) buf[rng() % sizeof(seg)] = static_cast<uint8_t>(rng());
    }
    auto snap = read_budget_segment(buf, size);
    if (!snap.ok()) continue;
    ++accepted;
    EXPECT_LE(snap->label.size(), kBudgetLabelBytes);
    EXPECT_LE(snap->reserved_bytes, kBudgetAbsurdBytes);
    EXPECT_GT(snap->pid, 0);
  }
  EXPECT_GT(accepted, 100);  // corruptions of harmless bytes still read
}

}  // namespace
}  // namespace hearth::kv
