// Tests for the persistent thread pool: every index visited exactly once, repeated calls work.
#include "util/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace hearth {
namespace {

TEST(ThreadPool, ParallelForCoversEveryIndexOnce) {
  ThreadPool pool(3);
  EXPECT_EQ(pool.size(), 3);
  for (size_t n : {0u, 1u, 2u, 7u, 1000u}) {
    std::vector<std::atomic<int>> hits(n);
    pool.parallel_for(n, [&](size_t b, size_t e, int) {
      for (size_t i = b; i < e; ++i) hits[i]++;
    });
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
  }
}

TEST(ThreadPool, RunOnAllUsesEveryThreadAndIsReusable) {
  ThreadPool pool(4);
  for (int round = 0; round < 200; ++round) {
    std::atomic<int> mask{0};
    pool.run_on_all([&](int t) { mask |= 1 << t; });
    ASSERT_EQ(mask.load(), 0xF);
  }
}

TEST(ThreadPool, DefaultUsesPhysicalCores) {
  ThreadPool pool;
  EXPECT_EQ(pool.size(), physical_core_count());
  EXPECT_GE(physical_core_count(), 1);
}

}  // namespace
}  // namespace hearth
