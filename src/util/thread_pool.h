// A persistent pool of worker threads for data-parallel loops. Workers are created once and
// reused for every call, so a forward pass does not pay thread start-up per layer. The calling
// thread takes part in the work (it is worker 0). Between jobs, workers spin for a short while
// before they sleep, so the many small jobs of one decode step (one per matmul) start without
// a kernel wake-up; jobs are passed by reference, so dispatching one never allocates.
// The loops never wait for a worker that has not started: work is claimed, and a worker that
// another process kept off its core finds the job already done (or closed) and skips it, so a
// busy machine slows a step down instead of stalling it once per layer.
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

  // Splits [0, n) into min(n, size()) contiguous chunks (the same split every time) and calls
  // fn(begin, end, chunk) for each. Threads claim chunks, so one thread may run several; the
  // chunk index (< size()) is never in use by two threads at once, so it can pick scratch.
  void parallel_for(size_t n, FunctionRef<void(size_t begin, size_t end, int chunk)> fn);

  // Like parallel_for, but threads take chunks of `grain` indices from a shared counter until
  // none are left, so a thread slowed down by another process does not hold up the others.
  // Chunks are contiguous and ascending per call of fn; thread_index (< size()) is never in use
  // by two threads at once. A one-thread pool (or n <= grain) calls fn once for all of [0, n):
  // callers keep per-call state across items (attention's block tables), so a caller whose
  // chunk size bounds a buffer splits the range itself (weight interleaving does).
  void parallel_for_dynamic(size_t n, size_t grain, FunctionRef<void(size_t begin, size_t end, int thread_index)> fn);

 private:
  void worker_loop(int index);
  // Publishes fn for the workers that join while it is open, runs fn(0) on the caller, closes
  // it and waits only for the workers that joined.
  void run_shared(FunctionRef<void(int)> fn);
  void publish(const FunctionRef<void(int)>* fn, bool shared);

  // ticket_ of a shared job: its generation in the high bits, a closed flag, and the number of
  // workers running it in the low bits.
  static constexpr int kTicketGenShift = 20;
  static constexpr uint64_t kTicketClosed = uint64_t{1} << 19;
  static constexpr uint64_t kTicketActive = kTicketClosed - 1;

  int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_start_;
  const FunctionRef<void(int)>* job_ = nullptr;  // under mu_, with job_shared_
  bool job_shared_ = false;                      // run_shared job (join if open) or run_on_all job
  std::atomic<uint64_t> generation_{0};  // bumped (under mu_) for every job
  std::atomic<int> pending_{0};          // workers still running the current run_on_all job
  std::atomic<uint64_t> ticket_{0};      // the current shared job's generation, closed flag, joined count
  int sleepers_ = 0;                     // workers blocked on cv_start_ (under mu_)
  bool stop_ = false;                    // under mu_
};

// Number of physical cores (hyper-threads of one core counted once); at least 1.
int physical_core_count();
// Number of hardware threads (std::thread::hardware_concurrency()); at least 1.
int hardware_thread_count();

}  // namespace hearth
