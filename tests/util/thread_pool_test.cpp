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

// With more runnable threads than cores (busy spinners beside the pool), workers often wake
// after the caller has claimed every chunk: every index must still run exactly once, chunk /
// thread indices must stay below size() and never be in use by two threads at once (they pick
// scratch buffers), and each static chunk must keep its boundaries.
TEST(ThreadPool, LoopsStayCorrectWhenWorkersAreLate) {
  ThreadPool pool(3);
  std::atomic<bool> stop{false};
  std::vector<std::thread> hogs;
  for (int i = 0; i < 4; ++i) {
    hogs.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  }
  std::atomic<int> in_use[3] = {};
  const size_t n = 301;
  for (int round = 0; round < 400; ++round) {
    std::vector<std::atomic<int>> hits(n);
    auto check = [&](size_t b, size_t e, int t) {
      ASSERT_GE(t, 0);
      ASSERT_LT(t, 3);
      ASSERT_EQ(in_use[t].fetch_add(1), 0) << "index " << t << " used by two threads at once";
      for (size_t i = b; i < e; ++i) hits[i]++;
      in_use[t].fetch_sub(1);
    };
    if (round % 2 == 0) {
      pool.parallel_for(n, [&](size_t b, size_t e, int c) {
        EXPECT_EQ(b, n * static_cast<size_t>(c) / 3);
        EXPECT_EQ(e, n * static_cast<size_t>(c + 1) / 3);
        check(b, e, c);
      });
    } else {
      pool.parallel_for_dynamic(n, 16, check);
    }
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "round " << round << " i=" << i;
  }
  stop = true;
  for (auto& h : hogs) h.join();
}

TEST(ThreadPool, DefaultUsesPhysicalCores) {
  ThreadPool pool;
  EXPECT_EQ(pool.size(), physical_core_count());
  EXPECT_GE(physical_core_count(), 1);
}

}  // namespace
}  // namespace hearth
