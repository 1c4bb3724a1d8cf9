// A `hearth runner` child process: started with one end of a Unix-domain socket pair as fd 3,
// a parent-death signal (SIGKILL) so it never outlives the router, and no other descriptor of
// the router (listening sockets, other runners' sockets). The fork happens on one long-lived
// thread, because Linux sends the parent-death signal when the *thread* that forked exits.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "protocol/runner_wire.h"
#include "util/result.h"

namespace hearth::router {

class RunnerProcess {
 public:
  // Starts `argv` (argv[0] is the executable path) with the socket as fd 3. Errors: kIo when
  // the socket or the process cannot be made.
  static Result<std::unique_ptr<RunnerProcess>> spawn(const std::vector<std::string>& argv);
  ~RunnerProcess();  // kills (SIGKILL) and reaps a process still running

  pid_t pid() const { return pid_; }
  protocol::RunnerChannel& channel() { return *channel_; }

  void kill_now();  // SIGKILL
  // Waits up to `timeout` for the process to exit; true when it has (it is then reaped).
  bool wait_exit(std::chrono::milliseconds timeout);
  // How it ended, for error messages: "exited with status 1", "killed by signal 9 (Killed)";
  // "running" before it did.
  std::string exit_description() const;

 private:
  RunnerProcess() = default;
  pid_t pid_ = -1;
  bool reaped_ = false;
  int wait_status_ = 0;
  std::unique_ptr<protocol::RunnerChannel> channel_;
};

}  // namespace hearth::router
