// Tests for the persistent thread pool: every index visited exactly once, repeated calls work.
#include "util/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
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

// Workers that went to sleep between jobs (longer than their spin) still wake for the next one.
TEST(ThreadPool, WakesWorkersThatSleptBetweenJobs) {
  ThreadPool pool(2);
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::atomic<int> mask{0};
    pool.run_on_all([&](int t) { mask |= 1 << t; });
    ASSERT_EQ(mask.load(), 0x3);
  }
}

// Jobs are passed by reference: a lambda with many captures runs without being copied.
TEST(ThreadPool, RunsLargeCallablesInPlace) {
  ThreadPool pool(2);
  std::vector<int> a(100, 1), b(100, 2), c(100, 0);
  int scale = 3, offset = 4;
  double unused0 = 0, unused1 = 0;
  pool.parallel_for(a.size(), [&, scale, offset, unused0, unused1](size_t begin, size_t end, int) {
    for (size_t i = begin; i < end; ++i) c[i] = a[i] * scale + b[i] + offset + static_cast<int>(unused0 + unused1);
  });
  for (int x : c) EXPECT_EQ(x, 9);
}

TEST(ThreadPool, DynamicParallelForCoversEveryIndexOnce) {
  ThreadPool pool(3);
  for (size_t n : {0u, 1u, 5u, 64u, 1001u}) {
    for (size_t grain : {0u, 1u, 7u, 2000u}) {
      std::vector<std::atomic<int>> hits(n);
      pool.parallel_for_dynamic(n, grain, [&](size_t b, size_t e, int t) {
        EXPECT_LT(b, e);
        EXPECT_GE(t, 0);
        EXPECT_LT(t, 3);
        for (size_t i = b; i < e; ++i) hits[i]++;
      });
      for (size_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << "n=" << n << " grain=" << grain << " i=" << i;
    }
  }
}

TEST(ThreadPool, DefaultUsesPhysicalCores) {
  ThreadPool pool;
  EXPECT_EQ(pool.size(), physical_core_count());
  EXPECT_GE(physical_core_count(), 1);
}

}  // namespace
}  // namespace hearth
