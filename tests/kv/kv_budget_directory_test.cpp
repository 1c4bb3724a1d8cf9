// Tests for the KV budget directory without other processes: /proc/<pid>/stat parsing,
// liveness and pid reuse, the directory's safety checks, garbage files, the machine-wide limit
// file, and the fair split.
#include "kv/kv_budget_directory.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <numeric>

#include "kv/budget_test_support.h"
#include "kv/kv_budget_owner.h"
#include "util/file_io.h"

namespace hearth::kv {
namespace {

using test::TempBudgetDir;

TEST(KvBudgetDirectory, ParsesProcStat) {
  EXPECT_EQ(parse_proc_stat_start_ticks("42 (a b) c) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 777 19 20\n"), 777u);
  EXPECT_EQ(parse_proc_stat_start_ticks("42 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 1234\n"), 1234u);
  EXPECT_FALSE(parse_proc_stat_start_ticks("42 (x) S 1 2 3").has_value());
  EXPECT_FALSE(parse_proc_stat_start_ticks("garbage").has_value());
  EXPECT_FALSE(parse_proc_stat_start_ticks("").has_value());
}

TEST(KvBudgetDirectory, LivenessTellsReusedPidsApart) {
  const auto ticks = process_start_ticks(::getpid());
  ASSERT_TRUE(ticks.has_value());
  EXPECT_TRUE(budget_owner_alive(::getpid(), *ticks));
  EXPECT_FALSE(budget_owner_alive(::getpid(), *ticks + 1));  // same pid, another start: reused
  EXPECT_FALSE(budget_owner_alive(0, 0));
  EXPECT_FALSE(budget_owner_alive(int64_t{1} << 40, 0));
}

TEST(KvBudgetDirectory, RefusesAnUnsafeDirectory) {
  TempBudgetDir tmp;
  ASSERT_TRUE(ensure_budget_directory(tmp.path()).ok());
  struct stat st {};
  ASSERT_EQ(::stat(tmp.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::chmod(tmp.path().c_str(), 0777), 0);
  auto open_dir = ensure_budget_directory(tmp.path());
  ASSERT_FALSE(open_dir.ok());
  EXPECT_NE(open_dir.error().message.find("chmod 700"), std::string::npos);
  const std::string link = tmp.path() + "-link";
  ASSERT_EQ(::symlink(tmp.path().c_str(), link.c_str()), 0);
  EXPECT_FALSE(ensure_budget_directory(link).ok());
  ::unlink(link.c_str());
}

TEST(KvBudgetDirectory, GarbageFilesAreReportedAndCollected) {
  TempBudgetDir tmp;
  ASSERT_TRUE(ensure_budget_directory(tmp.path()).ok());
  const auto my_ticks = process_start_ticks(::getpid()).value_or(0);
  // A dead owner's garbage, a dead owner's truncated temporary, a live owner's truncated
  // segment, a dead owner's segment from an older layout, and a file that is not ours.
  ASSERT_TRUE(write_file_atomic(tmp.path() + "/999999999-5.seg", std::string(256, 'z')).ok());
  ASSERT_TRUE(write_file_atomic(tmp.path() + "/.999999998-5.seg.tmp", "abc").ok());
  ASSERT_TRUE(write_file_atomic(tmp.path() + "/" + budget_segment_file_name(::getpid(), my_ticks), "short").ok());
  BudgetSegmentLayout old;
  init_budget_segment(old, 999999997, 5, "old", 0, 0);
  old.layout_version = 0;
  ASSERT_TRUE(write_file_atomic(tmp.path() + "/999999997-5.seg", std::string(reinterpret_cast<char*>(&old), sizeof old)).ok());
  ASSERT_TRUE(write_file_atomic(tmp.path() + "/notes.txt", "keep me").ok());

  auto entries = list_budget_entries(tmp.path());
  ASSERT_EQ(entries.size(), 3u);
  for (const auto& e : entries) {
    EXPECT_FALSE(e.snapshot.has_value()) << e.path;
    EXPECT_FALSE(e.problem.empty());
  }
  EXPECT_NE(entries[0].problem.find("truncated"), std::string::npos) << entries[0].problem;
  EXPECT_TRUE(entries[0].owner_alive);
  EXPECT_EQ(entries[0].state_name(), "unreadable");
  EXPECT_NE(entries[1].problem.find("an older Hearth"), std::string::npos) << entries[1].problem;
  EXPECT_NE(entries[2].problem.find("wrong magic"), std::string::npos) << entries[2].problem;
  EXPECT_EQ(entries[2].state_name(), "dead");

  const auto removed = collect_budget_garbage(tmp.path());
  EXPECT_EQ(removed.size(), 3u);
  entries = list_budget_entries(tmp.path());
  ASSERT_EQ(entries.size(), 1u);  // the live owner's file stays, however broken
  EXPECT_EQ(entries[0].pid, ::getpid());
  EXPECT_TRUE(read_file(tmp.path() + "/notes.txt").ok());
}

TEST(KvBudgetDirectory, MachineLimitFile) {
  TempBudgetDir tmp;
  EXPECT_EQ(*read_machine_limit(tmp.path()), kNoBudgetLimit);  // no directory yet: no limit
  ASSERT_TRUE(write_machine_limit(tmp.path(), 3ull << 30).ok());
  EXPECT_EQ(*read_machine_limit(tmp.path()), 3ull << 30);
  ASSERT_TRUE(write_machine_limit(tmp.path(), kNoBudgetLimit).ok());
  EXPECT_EQ(*read_machine_limit(tmp.path()), kNoBudgetLimit);
  ASSERT_TRUE(write_file_atomic(tmp.path() + "/machine-limit", "limit=lots\n").ok());
  auto bad = read_machine_limit(tmp.path());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("hearth kv limit all"), std::string::npos);
  ASSERT_TRUE(write_file_atomic(tmp.path() + "/machine-limit", "hearth-kv-machine-limit 1\nlimit_bytes 99999999999999999999\n").ok());
  EXPECT_FALSE(read_machine_limit(tmp.path()).ok());
}

TEST(KvBudgetDirectory, FairSplitIsMaxMin) {
  const std::vector<uint64_t> caps = {100, 1000, 1000};
  EXPECT_EQ(split_machine_limit(900, caps), (std::vector<uint64_t>{100, 400, 400}));
  EXPECT_EQ(split_machine_limit(5000, caps), caps);  // more than everyone needs
  EXPECT_EQ(split_machine_limit(0, caps), (std::vector<uint64_t>{0, 0, 0}));
  EXPECT_TRUE(split_machine_limit(10, {}).empty());
  const std::vector<uint64_t> many = {7, 3, 1000, 50, 50, 2, 999};
  for (uint64_t limit : {0ull, 1ull, 10ull, 111ull, 1000ull, 3000ull}) {
    const auto shares = split_machine_limit(limit, many);
    EXPECT_LE(std::accumulate(shares.begin(), shares.end(), uint64_t{0}), limit);
    for (size_t i = 0; i < many.size(); ++i) EXPECT_LE(shares[i], many[i]);
  }
}

TEST(KvBudgetDirectory, OwnLimitAndShareCombine) {
  TempBudgetDir tmp;
  KvBudgetOptions opt;
  opt.directory = tmp.path();
  opt.label = "self";
  opt.reserved_bytes = 4ull << 30;
  auto reg = KvBudgetRegistration::create(opt);
  ASSERT_TRUE(reg.ok()) << reg.error().to_string();
  EXPECT_EQ((*reg)->limit(), kNoBudgetLimit);
  ASSERT_TRUE(write_machine_limit(tmp.path(), 1ull << 30).ok());
  (*reg)->heartbeat();
  EXPECT_EQ((*reg)->limit(), 1ull << 30);  // alone: all of the machine-wide limit
  auto entries = list_budget_entries(tmp.path());
  ASSERT_EQ(entries.size(), 1u);
  ASSERT_TRUE(write_requested_limit(entries[0], 256ull << 20).ok());
  (*reg)->heartbeat();
  EXPECT_EQ((*reg)->limit(), 256ull << 20);  // its own lower limit wins
  ASSERT_TRUE(write_machine_limit(tmp.path(), 0).ok());
  (*reg)->heartbeat();
  EXPECT_EQ((*reg)->limit(), 0u);
  // A second registration in the same process is refused, not a silent replacement.
  auto twice = KvBudgetRegistration::create(opt);
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().message.find("already has"), std::string::npos);
  const std::string path = (*reg)->segment_path();
  reg->reset();
  EXPECT_FALSE(std::filesystem::exists(path));  // an orderly exit removes its segment
}

}  // namespace
}  // namespace hearth::kv
