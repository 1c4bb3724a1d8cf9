// Starting, killing and reaping runner processes (see runner_process.h).
#include "router/runner_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

namespace hearth::router {
namespace {

// The one thread that forks runners (see the header for why), started on first use and alive
// for the rest of the process.
class Forker {
 public:
  static Forker& instance() {
    static Forker* f = new Forker();  // never destroyed: its thread must outlive every runner
    return *f;
  }
  pid_t fork_exec(char* const* argv, int child_fd) {
    std::packaged_task<pid_t()> task([argv, child_fd] { return do_fork(argv, child_fd); });
    auto result = task.get_future();
    {
      std::lock_guard lock(mu_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_one();
    return result.get();
  }

 private:
  Forker() {
    std::thread([this] {
      for (;;) {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [this] { return !tasks_.empty(); });
        auto task = std::move(tasks_.front());
        tasks_.pop_front();
        lock.unlock();
        task();
      }
    }).detach();
  }

  static pid_t do_fork(char* const* argv, int child_fd) {
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid != 0) return pid;
    // Child: only async-signal-safe calls until exec.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the router died before the signal was armed
    if (child_fd != 3) {
      if (::dup2(child_fd, 3) < 0) ::_exit(127);
    } else {
      ::fcntl(3, F_SETFD, 0);
    }
    ::syscall(SYS_close_range, 4u, ~0u, 0u);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);  // the router blocks SIGTERM for sigwait
    ::execv(argv[0], argv);
    ::_exit(127);
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<pid_t()>> tasks_;
};

}  // namespace

Result<std::unique_ptr<RunnerProcess>> RunnerProcess::spawn(const std::vector<std::string>& argv) {
  if (argv.empty()) return make_error(ErrorKind::kInvalidArgument, "runner: no command");
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return make_error(ErrorKind::kIo, std::string("runner: socketpair: ") + std::strerror(errno));
  }
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const pid_t pid = Forker::instance().fork_exec(cargv.data(), fds[1]);
  const int fork_errno = errno;
  ::close(fds[1]);
  if (pid < 0) {
    ::close(fds[0]);
    return make_error(ErrorKind::kIo, std::string("runner: fork: ") + std::strerror(fork_errno));
  }
  auto p = std::unique_ptr<RunnerProcess>(new RunnerProcess());
  p->pid_ = pid;
  p->channel_ = std::make_unique<protocol::RunnerChannel>(fds[0]);
  return p;
}

RunnerProcess::~RunnerProcess() {
  if (!reaped_) {
    kill_now();
    wait_exit(std::chrono::seconds(5));
  }
}

void RunnerProcess::kill_now() {
  if (!reaped_ && pid_ > 0) ::kill(pid_, SIGKILL);
}

bool RunnerProcess::wait_exit(std::chrono::milliseconds timeout) {
  if (reaped_) return true;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) {
      reaped_ = true;
      wait_status_ = status;
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::string RunnerProcess::exit_description() const {
  if (!reaped_) return "running";
  if (WIFSIGNALED(wait_status_)) {
    const int sig = WTERMSIG(wait_status_);
    return "killed by signal " + std::to_string(sig) + " (" + ::strsignal(sig) + ")";
  }
  if (WIFEXITED(wait_status_)) return "exited with status " + std::to_string(WEXITSTATUS(wait_status_));
  return "ended";
}

}  // namespace hearth::router
