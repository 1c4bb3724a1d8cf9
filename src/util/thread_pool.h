// A persistent pool of worker threads for data-parallel loops. Workers are created once and
// reused for every call, so a forward pass does not pay thread start-up per layer. The calling
// thread takes part in the work (it is worker 0).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hearth {

class ThreadPool {
 public:
  // n_threads counts the caller; 0 means physical_core_count().
  explicit ThreadPool(int n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Calls fn(thread_index) once on each of the size() threads and waits for all.
  void run_on_all(const std::function<void(int thread_index)>& fn);

  // Splits [0, n) into contiguous chunks, one per thread, and calls fn(begin, end, thread_index).
  void parallel_for(size_t n, const std::function<void(size_t begin, size_t end, int thread_index)>& fn);

 private:
  void worker_loop(int index);

  int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_start_;
  std::condition_variable cv_done_;
  const std::function<void(int)>* job_ = nullptr;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

// Number of physical cores (hyper-threads of one core counted once); at least 1.
int physical_core_count();

}  // namespace hearth
