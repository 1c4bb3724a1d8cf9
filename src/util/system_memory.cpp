// MemAvailable from /proc/meminfo (see system_memory.h).
#include "util/system_memory.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace hearth {

std::optional<uint64_t> parse_meminfo_available(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    unsigned long long kib = 0;
    std::string unit;
    if (!(fields >> kib >> unit) || unit != "kB") return std::nullopt;
    return static_cast<uint64_t>(kib) * 1024u;
  }
  return std::nullopt;
}

std::optional<uint64_t> memory_available_bytes() {
  std::ifstream in("/proc/meminfo");
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return parse_meminfo_available(text.str());
}

std::string format_bytes(uint64_t bytes) {
  char buf[64];
  const double b = static_cast<double>(bytes);
  if (b >= 1024.0 * 1024 * 1024) {
    std::snprintf(buf, sizeof(buf), "%.1f GiB", b / (1024.0 * 1024 * 1024));
  } else if (b >= 1024.0 * 1024) {
    std::snprintf(buf, sizeof(buf), "%.1f MiB", b / (1024.0 * 1024));
  } else {
    std::snprintf(buf, sizeof(buf), "%llu KiB", static_cast<unsigned long long>((bytes + 1023) / 1024));
  }
  return buf;
}

}  // namespace hearth
