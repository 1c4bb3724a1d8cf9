// Starting and stopping docker-registry for tests (see docker_registry.h).
#include "common/docker_registry.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/loopback_socket.h"

extern char** environ;

namespace hearth::test {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// True when something on the port answers GET /v2/ with an HTTP status line.
bool answers_v2(int port) {
  int fd = connect_loopback(port);
  if (fd < 0) return false;
  const char request[] = "GET /v2/ HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  bool ok = ::send(fd, request, sizeof(request) - 1, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof(request) - 1);
  char buf[16] = {0};
  ok = ok && ::recv(fd, buf, 12, MSG_WAITALL) == 12 && std::string(buf, 5) == "HTTP/";
  ::close(fd);
  return ok;
}

}  // namespace

int pick_free_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

std::string DockerRegistry::executable() {
  const char* env = std::getenv("HEARTH_DOCKER_REGISTRY");
  return env != nullptr && *env != '\0' ? env : "/usr/bin/docker-registry";
}

std::string DockerRegistry::address() const { return "127.0.0.1:" + std::to_string(port_); }
std::string DockerRegistry::url() const { return "http://" + address(); }

std::string DockerRegistry::blob_data_path(const std::string& digest) const {
  std::string hex = digest.substr(digest.find(':') + 1);
  return storage_ + "/docker/registry/v2/blobs/sha256/" + hex.substr(0, 2) + "/" + hex + "/data";
}

std::unique_ptr<DockerRegistry> DockerRegistry::start(std::string* error, const std::string& extra_config) {
  std::unique_ptr<DockerRegistry> r(new DockerRegistry());
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/hearth-registry-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    *error = "cannot create a temporary folder: " + std::string(std::strerror(errno));
    return nullptr;
  }
  r->dir_ = pattern;
  r->storage_ = r->dir_ + "/storage";
  std::filesystem::create_directories(r->storage_);
  const std::string log = r->dir_ + "/registry.log";
  // A few tries: the free port may be taken between picking it and the registry binding it.
  for (int attempt = 0; attempt < 3; ++attempt) {
    r->port_ = pick_free_loopback_port();
    const std::string config = r->dir_ + "/config.yml";
    std::ofstream(config) << "version: 0.1\n"
                          << "log:\n  level: warn\n  accesslog:\n    disabled: true\n"
                          << "storage:\n  filesystem:\n    rootdirectory: " << r->storage_ << "\n"
                          << "  delete:\n    enabled: true\n"
                          << "  maintenance:\n    uploadpurging:\n      enabled: false\n"
                          << "http:\n  addr: 127.0.0.1:" << r->port_ << "\n"
                          << extra_config;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    std::string exe = executable();
    std::string serve = "serve";
    char* argv[] = {exe.data(), serve.data(), const_cast<char*>(config.c_str()), nullptr};
    int rc = posix_spawn(&r->pid_, exe.c_str(), &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      *error = "cannot start " + exe + ": " + std::strerror(rc);
      r->pid_ = -1;
      return nullptr;
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(r->pid_, &status, WNOHANG) == r->pid_) {
        r->pid_ = -1;
        break;  // exited (port taken?): try another port
      }
      if (answers_v2(r->port_)) return r;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (r->pid_ > 0) break;  // running but not answering: give up
  }
  *error = "docker-registry did not answer GET /v2/; its log:\n" + read_all(log);
  return nullptr;
}

DockerRegistry::~DockerRegistry() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

}  // namespace hearth::test
