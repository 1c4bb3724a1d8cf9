// Picking a device from the ordered list (HEARTH_GPU) and describing devices for logs and
// `hearth serve`'s start-up lines; independent of the backend, so it is always built.
#include <cctype>
#include <charconv>
#include <cstdio>
#include <string>

#include "device/device.h"

namespace hearth::device {

const char* device_kind_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kDiscrete: return "discrete";
    case DeviceKind::kIntegrated: return "integrated";
    case DeviceKind::kVirtual: return "virtual";
    case DeviceKind::kCpu: return "cpu";
    case DeviceKind::kOther: return "other";
  }
  return "other";
}

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

std::string device_list_text(const std::vector<DeviceInfo>& devices) {
  if (devices.empty()) return "no Vulkan device was found";
  std::string s = "devices:";
  for (size_t i = 0; i < devices.size(); ++i) s += " " + std::to_string(i) + "=\"" + devices[i].name + "\"";
  return s;
}

}  // namespace

std::string describe_device(const DeviceInfo& d) {
  return d.name + " (" + d.vendor + ", " + device_kind_name(d.kind) + ", " + d.driver + ") total " + gib(d.total_bytes) +
         " free " + gib(d.free_bytes) + (d.budget_known ? "" : " (no memory budget: free is total)");
}

std::string describe_device(size_t position, const DeviceInfo& d) { return std::to_string(position) + ": " + describe_device(d); }

bool gpu_disabled(std::string_view hearth_gpu) {
  const std::string want = lower(hearth_gpu);
  return want == "none" || want == "cpu";
}

Result<std::optional<size_t>> choose_device(const std::vector<DeviceInfo>& devices, std::string_view hearth_gpu) {
  const std::string want = lower(hearth_gpu);
  if (gpu_disabled(want)) return std::optional<size_t>();
  if (want.empty()) {
    for (size_t i = 0; i < devices.size(); ++i) {
      if (devices[i].kind != DeviceKind::kCpu) return std::optional<size_t>(i);
    }
    return std::optional<size_t>();
  }
  size_t index = 0;
  const char* end = want.data() + want.size();
  auto [p, ec] = std::from_chars(want.data(), end, index);
  if (ec == std::errc() && p == end) {
    if (index < devices.size()) return std::optional<size_t>(index);
    return make_error(ErrorKind::kInvalidArgument, "HEARTH_GPU=" + std::string(hearth_gpu) +
                                                       ": there is no device with that index (" +
                                                       device_list_text(devices) + "; none for the CPU)");
  }
  for (size_t i = 0; i < devices.size(); ++i) {
    if (lower(devices[i].name).find(want) != std::string::npos) return std::optional<size_t>(i);
  }
  return make_error(ErrorKind::kInvalidArgument, "HEARTH_GPU=" + std::string(hearth_gpu) +
                                                     ": no device name contains it (" + device_list_text(devices) +
                                                     "; none for the CPU)");
}

}  // namespace hearth::device
