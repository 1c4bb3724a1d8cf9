// A persistent pool of worker threads for data-parallel loops. Workers are created once and
// reused for every call, so a forward pass does not pay thread start-up per layer. The calling
// thread takes part in the work (it is worker 0). Between jobs, workers spin for a short while
// before they sleep, so the many small jobs of one decode step (one per matmul) start without
// a kernel wake-up; jobs are passed by reference, so dispatching one never allocates.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace hearth {

// A non-owning reference to a callable (the callable must outlive the call that receives it).
template <typename Signature>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>>>
  FunctionRef(F&& f)  // NOLINT: implicit by design, like std::function
      : obj_(const_cast<void*>(static_cast<const void*>(&f))), call_([](void* o, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(o))(std::forward<Args>(args)...);
        }) {}
  R operator()(Args... args) const { return call_(obj_, std::forward<Args>(args)...); }

 private:
  void* obj_;
  R (*call_)(void*, Args...);
};

class ThreadPool {
 public:
  // n_threads counts the caller; 0 means physical_core_count().
  explicit ThreadPool(int n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Calls fn(thread_index) once on each of the size() threads and waits for all.
  void run_on_all(FunctionRef<void(int thread_index)> fn);

  // Splits [0, n) into contiguous chunks, one per thread, and calls fn(begin, end, thread_index).
  void parallel_for(size_t n, FunctionRef<void(size_t begin, size_t end, int thread_index)> fn);

  // Like parallel_for, but threads take chunks of `grain` indices from a shared counter until
  // none are left, so a thread slowed down by another process does not hold up the others.
  // Chunks are contiguous and ascending per call of fn.
  void parallel_for_dynamic(size_t n, size_t grain, FunctionRef<void(size_t begin, size_t end, int thread_index)> fn);

 private:
  void worker_loop(int index);

  int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_start_;
  const FunctionRef<void(int)>* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};  // bumped (under mu_) for every job
  std::atomic<int> pending_{0};          // workers still running the current job
  int sleepers_ = 0;                     // workers blocked on cv_start_ (under mu_)
  bool stop_ = false;                    // under mu_
};

// Number of physical cores (hyper-threads of one core counted once); at least 1.
int physical_core_count();

}  // namespace hearth
