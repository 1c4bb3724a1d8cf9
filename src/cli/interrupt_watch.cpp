// SIGINT as a flag during a streamed reply (see interrupt_watch.h).
#include "cli/interrupt_watch.h"

#include <signal.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace hearth::cli {
namespace {

std::atomic<bool> g_interrupted{false};

void on_sigint(int) { g_interrupted.store(true); }

}  // namespace

bool run_interruptible(const std::function<void()>& work, const std::function<void()>& on_interrupt) {
  g_interrupted = false;
  struct sigaction action {}, previous {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &previous);
  std::atomic<bool> done{false};
  std::thread watcher([&] {
    // After Ctrl-C, on_interrupt is repeated until the work ends: a cancel that came before
    // the work's request started (and was reset by it) is not lost.
    while (!done.load()) {
      if (g_interrupted.load()) on_interrupt();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  work();
  done = true;
  watcher.join();
  sigaction(SIGINT, &previous, nullptr);
  return g_interrupted.load();
}

}  // namespace hearth::cli
