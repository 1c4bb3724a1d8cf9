// Helpers for the cross-process KV budget tests: a private budget directory per test, and
// forked child processes that play serving processes and talk to the test over pipes.
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "common/test_paths.h"

namespace hearth::kv::test {

// A fresh 0700 directory, removed with everything in it at the end of the test.
class TempBudgetDir {
 public:
  TempBudgetDir() : root_(hearth::test::make_temp_dir()), path_(root_ + "/kv") {}
  ~TempBudgetDir() { std::filesystem::remove_all(root_); }
  const std::string& path() const { return path_; }

 private:
  std::string root_;
  std::string path_;
};

// A forked child. `body` gets the read end of the test's pipe (commands) and the write end of
// the child's (reports); the child _exits with body's return value and never returns to gtest.
class ChildProcess {
 public:
  explicit ChildProcess(const std::function<int(int commands, int reports)>& body) {
    int down[2], up[2];
    if (::pipe(down) != 0 || ::pipe(up) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      // Keep only this child's two pipe ends: an inherited write end of a sibling's command
      // pipe would keep that sibling from ever seeing end of file.
      for (int fd = 3; fd < 1024; ++fd) {
        if (fd != down[0] && fd != up[1]) ::close(fd);
      }
      ::_exit(body(down[0], up[1]));
    }
    ::close(down[0]);
    ::close(up[1]);
    commands_ = down[1];
    reports_ = up[0];
  }
  ~ChildProcess() {
    if (commands_ >= 0) ::close(commands_);
    if (reports_ >= 0) ::close(reports_);
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  // Closing the command pipe is the usual "finish now" signal.
  void close_commands() {
    ::close(commands_);
    commands_ = -1;
  }
  void send(uint64_t value) { (void)!::write(commands_, &value, sizeof value); }
  // The next 8-byte report, or nullopt after `timeout_ms` or at end of file.
  std::optional<uint64_t> receive(int timeout_ms) {
    pollfd p{reports_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) != 1) return std::nullopt;
    uint64_t v = 0;
    if (::read(reports_, &v, sizeof v) != static_cast<ssize_t>(sizeof v)) return std::nullopt;
    return v;
  }
  // Exit status after SIGKILL (signal) or a normal end.
  int kill_and_reap() {
    ::kill(pid_, SIGKILL);
    return reap();
  }
  int reap() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    reaped_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  pid_t pid_ = -1;
  int commands_ = -1;
  int reports_ = -1;
  bool reaped_ = false;
};

// In a child: the next command, or nullopt when the test closed the pipe.
inline std::optional<uint64_t> child_receive(int commands) {
  uint64_t v = 0;
  if (::read(commands, &v, sizeof v) != static_cast<ssize_t>(sizeof v)) return std::nullopt;
  return v;
}
inline void child_report(int reports, uint64_t value) { (void)!::write(reports, &value, sizeof value); }

}  // namespace hearth::kv::test
