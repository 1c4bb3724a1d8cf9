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
    const FunctionRef<void(int)>* job = nullptr;
    bool shared = false;
    {
      // generation_, job_ and job_shared_ change together under mu_: read them together, so a
      // worker that woke late acts on the newest job only.
      std::unique_lock<std::mutex> lock(mu_);
      if (generation_.load(std::memory_order_relaxed) == seen && !stop_) {
        ++sleepers_;
        cv_start_.wait(lock, [&] { return generation_.load(std::memory_order_relaxed) != seen; });
        --sleepers_;
      }
      if (stop_) return;
      seen = generation_.load(std::memory_order_relaxed);
      job = job_;
      shared = job_shared_;
    }
    if (!shared) {
      (*job)(index);
      pending_.fetch_sub(1, std::memory_order_release);
      continue;
    }
    // Join the shared job only while it is open; once the caller has closed it, it may have
    // returned and *job may be gone.
    uint64_t t = ticket_.load(std::memory_order_acquire);
    bool joined = false;
    while ((t >> kTicketGenShift) == seen && (t & kTicketClosed) == 0) {
      if (ticket_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
        joined = true;
        break;
      }
    }
    if (!joined) continue;
    (*job)(index);
    ticket_.fetch_sub(1, std::memory_order_release);
  }
}

void ThreadPool::publish(const FunctionRef<void(int)>* fn, bool shared) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = fn;
    job_shared_ = shared;
    const uint64_t gen = generation_.load(std::memory_order_relaxed) + 1;
    if (shared) {
      ticket_.store(gen << kTicketGenShift, std::memory_order_release);
    } else {
      pending_.store(n_threads_ - 1, std::memory_order_relaxed);
    }
    generation_.store(gen, std::memory_order_release);
    wake = sleepers_ > 0;
  }
  if (wake) cv_start_.notify_all();
}

void ThreadPool::run_on_all(FunctionRef<void(int)> fn) {
  if (n_threads_ == 1) {
    fn(0);
    return;
  }
  publish(&fn, /*shared=*/false);
  fn(0);
  for (int i = 0; pending_.load(std::memory_order_acquire) != 0; ++i) {
    cpu_relax();
    if ((i & 255) == 255) std::this_thread::yield();
  }
}

void ThreadPool::run_shared(FunctionRef<void(int)> fn) {
  publish(&fn, /*shared=*/true);
  fn(0);
  // Close the job: workers that have not joined yet will skip it; wait for those that did.
  uint64_t t = ticket_.fetch_or(kTicketClosed, std::memory_order_acq_rel) | kTicketClosed;
  for (int i = 0; (t & kTicketActive) != 0; ++i) {
    cpu_relax();
    if ((i & 255) == 255) std::this_thread::yield();
    t = ticket_.load(std::memory_order_acquire);
  }
}

void ThreadPool::parallel_for(size_t n, FunctionRef<void(size_t, size_t, int)> fn) {
  if (n == 0) return;
  const size_t threads = static_cast<size_t>(n_threads_) < n ? static_cast<size_t>(n_threads_) : n;
  if (threads <= 1) {
    fn(0, n, 0);
    return;
  }
  std::atomic<size_t> next_chunk{0};
  auto body = [&](int) {
    for (;;) {
      const size_t c = next_chunk.fetch_add(1, std::memory_order_relaxed);
      if (c >= threads) return;
      const size_t begin = n * c / threads;
      const size_t end = n * (c + 1) / threads;
      if (begin < end) fn(begin, end, static_cast<int>(c));
    }
  };
  run_shared(body);
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
  run_shared(body);
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
  return n > 0 ? n : hardware_thread_count();
}

int hardware_thread_count() {
  const int n = static_cast<int>(std::thread::hardware_concurrency());
  return n > 0 ? n : 1;
}

}  // namespace hearth
