// Where a Vulkan device's time goes, for HEARTH_VK_PROFILE=1: every command list gets a GPU
// timestamp after each command, and the time between one timestamp and the next is charged to
// the command (by pipeline name, or "upload" / "download" / "copy"); the host's time to record
// a list and to wait for it is counted beside. The table goes to stderr when the Context
// closes. A timestamp is written once every earlier command of the list has finished, so a
// command that overlapped the one before it (no barrier between them) is charged only for the
// part that did not overlap: the sum is the list's GPU time, the split between overlapping
// kernels is approximate. HEARTH_VK_PROFILE=groups charges dispatches by pipeline, workgroup
// count and the size of their first buffer (a matrix's weights: one line per matrix shape).
// Only built with the Vulkan backend.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace hearth::device {

struct KernelProfile {
  bool on = false;
  bool by_groups = false;  // HEARTH_VK_PROFILE=groups
  double ns_per_tick = 1.0;       // VkPhysicalDeviceLimits::timestampPeriod
  uint64_t tick_mask = ~uint64_t{0};  // the queue's timestampValidBits as a mask
  struct Line {
    uint64_t count = 0;
    double ns = 0;
  };
  std::map<std::string, Line> lines;
  uint64_t lists = 0;
  double gpu_ns = 0, record_ns = 0, wait_ns = 0;

  // One finished list: ticks[0] at its start, ticks[i] after the command named names[i - 1].
  void add_list(const std::vector<uint64_t>& ticks, const std::vector<std::string>& names, double record,
                double wait) {
    ++lists;
    record_ns += record;
    wait_ns += wait;
    for (size_t i = 1; i < ticks.size() && i - 1 < names.size(); ++i) {
      const uint64_t dt = (ticks[i] - ticks[i - 1]) & tick_mask;
      Line& l = lines[names[i - 1]];
      ++l.count;
      l.ns += static_cast<double>(dt) * ns_per_tick;
      gpu_ns += static_cast<double>(dt) * ns_per_tick;
    }
  }

  std::string report(const std::string& device) const {
    std::string out = "vulkan profile (" + device + "): " + std::to_string(lists) + " command lists\n";
    char line[256];
    std::snprintf(line, sizeof line, "  GPU %.1f ms, host recording %.1f ms, host submit-to-done %.1f ms\n",
                  gpu_ns / 1e6, record_ns / 1e6, wait_ns / 1e6);
    out += line;
    std::vector<std::pair<std::string, Line>> sorted(lines.begin(), lines.end());
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
    std::snprintf(line, sizeof line, "  %-40s %10s %12s %10s %6s\n", "command", "count", "total ms", "mean us",
                  "GPU %");
    out += line;
    for (const auto& [name, l] : sorted) {
      std::snprintf(line, sizeof line, "  %-40s %10llu %12.2f %10.2f %6.1f\n", name.c_str(),
                    static_cast<unsigned long long>(l.count), l.ns / 1e6, l.ns / 1e3 / static_cast<double>(l.count),
                    gpu_ns > 0 ? 100.0 * l.ns / gpu_ns : 0.0);
      out += line;
    }
    return out;
  }
};

}  // namespace hearth::device
