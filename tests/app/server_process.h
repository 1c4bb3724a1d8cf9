// Runs `hearth serve` as a child process for tests: starts it with the given arguments (and
// --port 0), reads the "listening on" line to learn the port, waits for /health, and stops it
// with SIGTERM (reporting the exit status) when the test is done.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace hearth::test {

class ServerProcess {
 public:
  ServerProcess() = default;
  ~ServerProcess();  // SIGKILL if still running
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // Starts `hearth serve ARGS --port 0`; false (with error()) when it did not print its address
  // or /health did not become 200 within `timeout_seconds`.
  bool start(const std::vector<std::string>& args, int timeout_seconds = 60);
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& error() const { return error_; }
  // Everything the server printed on stdout so far (after the address line).
  const std::string& first_line() const { return first_line_; }
  // SIGTERM, then waits; the exit status (or -1 when it did not exit normally).
  int stop();

 private:
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  int port_ = 0;
  std::string first_line_;
  std::string error_;
};

}  // namespace hearth::test
