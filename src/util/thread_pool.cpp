// Implementation of the persistent thread pool (see thread_pool.h).
#include "util/thread_pool.h"

#include <chrono>
#include <fstream>
#include <set>
#include <string>
#include <utility>

namespace hearth {

namespace {

// How long an idle worker (or the caller waiting for workers) spins before it blocks / yields.
constexpr auto kSpin = std::chrono::microseconds(2000);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads > 0 ? n_threads : physical_core_count()) {
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    generation_.fetch_add(1, std::memory_order_release);
  }
  cv_start_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    // Spin first: the next job of a forward pass usually follows within microseconds.
    auto spin_start = std::chrono::steady_clock::now();
    uint64_t gen = generation_.load(std::memory_order_acquire);
    for (int i = 0; gen == seen; ++i) {
      cpu_relax();
      if ((i & 255) == 255) {  // every ~10 us: give way to other runnable threads, stop spinning after kSpin
        if (std::chrono::steady_clock::now() - spin_start > kSpin) break;
        std::this_thread::yield();
      }
      gen = generation_.load(std::memory_order_acquire);
    }
    if (gen == seen) {
      std::unique_lock<std::mutex> lock(mu_);
      ++sleepers_;
      cv_start_.wait(lock, [&] { return generation_.load(std::memory_order_relaxed) != seen; });
      --sleepers_;
      gen = generation_.load(std::memory_order_relaxed);
    }
    seen = gen;
    const FunctionRef<void(int)>* job = nullptr;
    {
      // stop_ and job_ are written under mu_ before the generation bump that published them.
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      job = job_;
    }
    (*job)(index);
    pending_.fetch_sub(1, std::memory_order_release);
  }
}

void ThreadPool::run_on_all(FunctionRef<void(int)> fn) {
  if (n_threads_ == 1) {
    fn(0);
    return;
  }
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    pending_.store(n_threads_ - 1, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
    wake = sleepers_ > 0;
  }
  if (wake) cv_start_.notify_all();
  fn(0);
  for (int i = 0; pending_.load(std::memory_order_acquire) != 0; ++i) {
    cpu_relax();
    if ((i & 255) == 255) std::this_thread::yield();
  }
}

void ThreadPool::parallel_for(size_t n, FunctionRef<void(size_t, size_t, int)> fn) {
  if (n == 0) return;
  const size_t threads = static_cast<size_t>(n_threads_) < n ? static_cast<size_t>(n_threads_) : n;
  if (threads <= 1) {
    fn(0, n, 0);
    return;
  }
  auto body = [&](int t) {
    size_t ti = static_cast<size_t>(t);
    if (ti >= threads) return;
    size_t begin = n * ti / threads;
    size_t end = n * (ti + 1) / threads;
    if (begin < end) fn(begin, end, t);
  };
  run_on_all(body);
}

void ThreadPool::parallel_for_dynamic(size_t n, size_t grain, FunctionRef<void(size_t, size_t, int)> fn) {
  if (n == 0) return;
  grain = grain > 0 ? grain : 1;
  if (n_threads_ == 1 || n <= grain) {
    fn(0, n, 0);
    return;
  }
  std::atomic<size_t> next{0};
  auto body = [&](int t) {
    for (;;) {
      const size_t begin = next.fetch_add(grain, std::memory_order_relaxed);
      if (begin >= n) return;
      fn(begin, begin + grain < n ? begin + grain : n, t);
    }
  };
  run_on_all(body);
}

int physical_core_count() {
  std::ifstream in("/proc/cpuinfo");
  std::set<std::pair<int, int>> cores;
  std::string line;
  int physical = 0;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    int value = std::atoi(line.c_str() + colon + 1);
    if (key == "physical id") physical = value;
    if (key == "core id") cores.insert({physical, value});
  }
  int n = static_cast<int>(cores.size());
  if (n <= 0) n = static_cast<int>(std::thread::hardware_concurrency());
  return n > 0 ? n : 1;
}

}  // namespace hearth
