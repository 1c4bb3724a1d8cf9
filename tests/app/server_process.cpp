// `hearth serve` child process for tests (see server_process.h).
#include "app/server_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include <httplib.h>

#include "common/test_paths.h"

extern char** environ;

namespace hearth::test {

ServerProcess::~ServerProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int st = 0;
    ::waitpid(pid_, &st, 0);
  }
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
}

bool ServerProcess::start(const std::vector<std::string>& args, int timeout_seconds) {
  int pipefd[2];
  if (::pipe(pipefd) != 0) {
    error_ = "pipe failed";
    return false;
  }
  std::vector<std::string> argv_s = {HEARTH_EXE, "serve"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  argv_s.push_back("--port");
  argv_s.push_back("0");
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipefd[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipefd[0]);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  // The server's own log lines would drown the test output; warnings still show.
  std::vector<std::string> env_s;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string(*e).rfind("HEARTH_LOG_LEVEL=", 0) != 0) env_s.emplace_back(*e);
  }
  env_s.emplace_back("HEARTH_LOG_LEVEL=warn");
  // A test server joins a private KV budget, never the user's: a machine-wide limit set there
  // would hold its requests back. A test that sets HEARTH_KV_DIR itself keeps its own.
  if (std::getenv("HEARTH_KV_DIR") == nullptr) env_s.emplace_back("HEARTH_KV_DIR=" + make_temp_dir() + "/kv");
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  int rc = posix_spawn(&pid_, HEARTH_EXE, &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipefd[1]);
  stdout_fd_ = pipefd[0];
  if (rc != 0) {
    pid_ = -1;
    error_ = "cannot start " + std::string(HEARTH_EXE);
    return false;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  std::string out;
  while (out.find('\n') == std::string::npos) {
    pollfd p{stdout_fd_, POLLIN, 0};
    if (std::chrono::steady_clock::now() > deadline) {
      error_ = "no address line within the timeout; got: " + out;
      return false;
    }
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[256];
    ssize_t n = ::read(stdout_fd_, buf, sizeof buf);
    if (n <= 0) {
      error_ = "the server exited before printing its address; got: " + out;
      return false;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  first_line_ = out.substr(0, out.find('\n'));
  const std::string marker = "hearth: listening on http://127.0.0.1:";
  if (first_line_.rfind(marker, 0) != 0) {
    error_ = "unexpected first line: " + first_line_;
    return false;
  }
  port_ = std::atoi(first_line_.c_str() + marker.size());
  httplib::Client cli("127.0.0.1", port_);
  while (std::chrono::steady_clock::now() < deadline) {
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      pid_ = -1;
      error_ = "the server exited while loading (status " + std::to_string(WIFEXITED(st) ? WEXITSTATUS(st) : -1) + ")";
      return false;
    }
    auto r = cli.Get("/health");
    if (r && r->status == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  error_ = "/health did not become 200 in time";
  return false;
}

int ServerProcess::stop() {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGTERM);
  int st = 0;
  ::waitpid(pid_, &st, 0);
  pid_ = -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

}  // namespace hearth::test
