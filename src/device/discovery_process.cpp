// Device discovery in a short-lived child process (see device.h, list_devices_in_child): the
// child loads the Vulkan loader and every installed driver (lavapipe alone maps libLLVM), lists
// the devices, writes them to a pipe and exits, so the caller's address space never holds any
// of it. For processes that report devices but never run a kernel (the router of
// `hearth serve`). Unloading the driver in-process instead is not reliable: drivers register
// exit-time work and libLLVM is commonly linked so that it is never unloaded.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "device/device.h"

namespace hearth::device {
namespace {

// A driver that hangs in discovery must not hang the caller.
constexpr auto kDiscoveryTimeout = std::chrono::seconds(30);

// One field of the wire text: tabs and line breaks (never meaningful in a device's name or
// driver string) become spaces, so fields split on tabs and records on newlines.
std::string field(std::string s) {
  for (char& c : s) {
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

// "ok\n" then one line per device, or "error\t<kind>\t<message>\n".
std::string encode(const Result<std::vector<DeviceInfo>>& r) {
  if (!r.ok()) return "error\t" + std::to_string(static_cast<int>(r.error().kind)) + "\t" + field(r.error().message) + "\n";
  std::string out = "ok\n";
  for (const DeviceInfo& d : *r) {
    out += std::to_string(d.physical_index) + "\t" + field(d.name) + "\t" + field(d.vendor) + "\t" + field(d.driver) + "\t" +
           std::to_string(static_cast<int>(d.kind)) + "\t" + std::to_string(d.total_bytes) + "\t" + std::to_string(d.free_bytes) +
           "\t" + (d.budget_known ? "1" : "0") + "\t" + std::to_string(d.subgroup_size) + "\t" + (d.subgroup_arithmetic ? "1" : "0") +
           "\n";
  }
  return out;
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> parts;
  size_t at = 0;
  for (;;) {
    const size_t end = line.find(sep, at);
    parts.push_back(line.substr(at, end == std::string::npos ? std::string::npos : end - at));
    if (end == std::string::npos) return parts;
    at = end + 1;
  }
}

Result<std::vector<DeviceInfo>> decode(const std::string& text) {
  const Error garbled = make_error(ErrorKind::kInternal, "device discovery's child process sent an unreadable answer");
  std::vector<std::string> lines = split(text, '\n');
  if (lines.empty() || !lines.back().empty()) return garbled;  // every answer ends with a newline
  lines.pop_back();
  if (lines.empty()) return garbled;
  try {
    if (lines[0] != "ok") {
      const auto parts = split(lines[0], '\t');
      if (parts.size() != 3 || parts[0] != "error" || lines.size() != 1) return garbled;
      return make_error(static_cast<ErrorKind>(std::stoi(parts[1])), parts[2]);
    }
    std::vector<DeviceInfo> out;
    for (size_t i = 1; i < lines.size(); ++i) {
      const auto p = split(lines[i], '\t');
      if (p.size() != 10) return garbled;
      DeviceInfo d;
      d.physical_index = std::stoi(p[0]);
      d.name = p[1];
      d.vendor = p[2];
      d.driver = p[3];
      d.kind = static_cast<DeviceKind>(std::stoi(p[4]));
      d.total_bytes = std::stoull(p[5]);
      d.free_bytes = std::stoull(p[6]);
      d.budget_known = p[7] == "1";
      d.subgroup_size = static_cast<uint32_t>(std::stoul(p[8]));
      d.subgroup_arithmetic = p[9] == "1";
      out.push_back(std::move(d));
    }
    return out;
  } catch (const std::exception&) {
    return garbled;
  }
}

}  // namespace

Result<std::vector<DeviceInfo>> list_devices_in_child() {
  if (!vulkan_built()) return list_devices();  // nothing would be loaded
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return make_error(ErrorKind::kIo, std::string("device discovery: cannot make a pipe: ") + std::strerror(errno));
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return make_error(ErrorKind::kIo, std::string("device discovery: cannot fork: ") + std::strerror(err));
  }
  if (pid == 0) {
    ::close(fds[0]);
    const std::string text = encode(list_devices());
    size_t at = 0;
    while (at < text.size()) {
      const ssize_t n = ::write(fds[1], text.data() + at, text.size() - at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) ::_exit(1);
      at += static_cast<size_t>(n);
    }
    ::_exit(0);  // no exit-time work: the driver's belongs to this child alone
  }
  ::close(fds[1]);
  std::string text;
  bool timed_out = false;
  const auto give_up_at = std::chrono::steady_clock::now() + kDiscoveryTimeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(give_up_at - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // the deadline is checked above
    char buf[4096];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return make_error(ErrorKind::kUnavailable, "device discovery did not finish in " + std::to_string(kDiscoveryTimeout.count()) +
                                                   " s (a Vulkan driver hangs; HEARTH_GPU=none skips discovery)");
  }
  if (WIFSIGNALED(status)) {
    return make_error(ErrorKind::kUnavailable, "device discovery crashed (signal " + std::to_string(WTERMSIG(status)) +
                                                   ": a broken Vulkan driver; HEARTH_GPU=none skips discovery)");
  }
  return decode(text);
}

}  // namespace hearth::device
