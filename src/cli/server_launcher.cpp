// Starting `hearth serve` in the background (see server_launcher.h).
#include "cli/server_launcher.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "util/file_io.h"
#include "util/settings.h"

namespace hearth::cli {
namespace {

std::string home_dir() {
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0') return home;
  const passwd* pw = getpwuid(getuid());
  return pw != nullptr && pw->pw_dir != nullptr ? pw->pw_dir : "/tmp";
}

Status make_private_dirs(const std::string& path) {
  for (size_t at = 1; at != std::string::npos;) {
    at = path.find('/', at + 1);
    const std::string part = path.substr(0, at);
    if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) {
      return make_error(ErrorKind::kIo, "cannot create '" + part + "': " + std::strerror(errno));
    }
  }
  return ok_status();
}

std::string log_tail(const std::string& path) {
  auto text = read_file(path);
  if (!text.ok()) return "";
  std::string t = *text;
  if (t.size() > 1500) t = "..." + t.substr(t.size() - 1500);
  return t;
}

}  // namespace

std::string server_log_dir() {
  auto dir = env_setting("HEARTH_LOG_DIR");
  if (dir && !dir->empty()) return *dir;
  return home_dir() + "/.hearth/logs";
}

Result<LaunchedServer> start_background_server(OllamaClient& client, int timeout_seconds) {
  LaunchedServer s;
  const std::string dir = server_log_dir();
  HEARTH_TRY(make_private_dirs(dir));
  s.log_path = dir + "/server.log";
  int log_fd = ::open(s.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (log_fd < 0) return make_error(ErrorKind::kIo, "cannot open the server log '" + s.log_path + "': " + std::strerror(errno));
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    if (null_fd >= 0) ::close(null_fd);
    return make_error(ErrorKind::kIo, std::string("cannot start the server: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::setsid();
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::execl("/proc/self/exe", "hearth", "serve", static_cast<char*>(nullptr));
    const char* msg = "hearth: cannot run /proc/self/exe serve\n";
    (void)!::write(STDERR_FILENO, msg, std::strlen(msg));
    ::_exit(127);
  }
  ::close(log_fd);
  if (null_fd >= 0) ::close(null_fd);
  s.pid = pid;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      return make_error(ErrorKind::kUnavailable, "the server started in the background exited at once; its log (" + s.log_path +
                                                     ") ends with:\n" + log_tail(s.log_path));
    }
    int health = 0;
    (void)client.call("GET", "/health", nullptr, &health);
    if (health != 0 && health != 503) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return make_error(ErrorKind::kUnavailable, "the server started in the background (pid " + std::to_string(pid) +
                                                 ") did not get ready within " + std::to_string(timeout_seconds) +
                                                 " s; see its log " + s.log_path);
}

}  // namespace hearth::cli
