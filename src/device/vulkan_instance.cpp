// Loads libvulkan.so.1 with dlopen, creates the process's Vulkan instance and lists its
// devices with the facts discovery needs (see device.h). Without the Vulkan headers at build
// time (HEARTH_VULKAN=0) every entry point reports that the backend was not built.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "device/device.h"

#if HEARTH_VULKAN
#include <dlfcn.h>

#include "device/vulkan_api.h"
#endif

namespace hearth::device {

#if HEARTH_VULKAN

bool vulkan_built() { return true; }

Error vk_error(const char* what, VkResult r) {
  const char* name = "unknown VkResult";
  switch (r) {
    case VK_ERROR_OUT_OF_HOST_MEMORY: name = "VK_ERROR_OUT_OF_HOST_MEMORY"; break;
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: name = "VK_ERROR_OUT_OF_DEVICE_MEMORY"; break;
    case VK_ERROR_INITIALIZATION_FAILED: name = "VK_ERROR_INITIALIZATION_FAILED"; break;
    case VK_ERROR_DEVICE_LOST: name = "VK_ERROR_DEVICE_LOST"; break;
    case VK_ERROR_INCOMPATIBLE_DRIVER: name = "VK_ERROR_INCOMPATIBLE_DRIVER"; break;
    case VK_ERROR_EXTENSION_NOT_PRESENT: name = "VK_ERROR_EXTENSION_NOT_PRESENT"; break;
    case VK_ERROR_FEATURE_NOT_PRESENT: name = "VK_ERROR_FEATURE_NOT_PRESENT"; break;
    case VK_ERROR_TOO_MANY_OBJECTS: name = "VK_ERROR_TOO_MANY_OBJECTS"; break;
    case VK_TIMEOUT: name = "VK_TIMEOUT"; break;
    default: break;
  }
  const ErrorKind kind = (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
                             ? ErrorKind::kUnavailable
                             : ErrorKind::kInternal;
  return make_error(kind, std::string(what) + " failed: " + name + " (" + std::to_string(static_cast<int>(r)) + ")");
}

namespace {

Result<VulkanInstance*> create_instance() {
  // RTLD_LOCAL: the driver's symbols stay out of Hearth's namespace. The handle is never
  // closed; drivers register atexit work that must find their code mapped.
  void* lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    return make_error(ErrorKind::kUnavailable,
                      std::string("no Vulkan loader (libvulkan.so.1): ") + (why ? why : "dlopen failed") +
                          "; install libvulkan1 and a driver (mesa-vulkan-drivers, or the GPU vendor's)");
  }
  auto inst = std::make_unique<VulkanInstance>();
  VulkanApi& api = inst->api;
  api.vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
  if (api.vkGetInstanceProcAddr == nullptr) {
    return make_error(ErrorKind::kUnavailable, "libvulkan.so.1 has no vkGetInstanceProcAddr: a broken Vulkan loader");
  }
  api.vkCreateInstance =
      reinterpret_cast<PFN_vkCreateInstance>(api.vkGetInstanceProcAddr(VK_NULL_HANDLE, "vkCreateInstance"));
  api.vkEnumerateInstanceVersion = reinterpret_cast<PFN_vkEnumerateInstanceVersion>(
      api.vkGetInstanceProcAddr(VK_NULL_HANDLE, "vkEnumerateInstanceVersion"));
  if (api.vkCreateInstance == nullptr) {
    return make_error(ErrorKind::kUnavailable, "the Vulkan loader has no vkCreateInstance");
  }
  uint32_t loader_version = VK_API_VERSION_1_0;
  if (api.vkEnumerateInstanceVersion != nullptr) api.vkEnumerateInstanceVersion(&loader_version);
  if (loader_version < VK_API_VERSION_1_2) {
    return make_error(ErrorKind::kUnavailable, "the Vulkan loader is older than 1.2; Hearth needs Vulkan 1.2");
  }
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "hearth";
  app.pEngineName = "hearth";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  ci.pApplicationInfo = &app;
  VkResult r = api.vkCreateInstance(&ci, nullptr, &inst->instance);
  if (r != VK_SUCCESS) {
    Error e = vk_error("vkCreateInstance", r);
    e.kind = ErrorKind::kUnavailable;
    e.message += " (no usable Vulkan driver; VK_ICD_FILENAMES / VK_DRIVER_FILES pick one)";
    return e;
  }
  inst->api_version = VK_API_VERSION_1_2;
#define HEARTH_VK_LOAD(name)                                                                      \
  api.name = reinterpret_cast<PFN_##name>(api.vkGetInstanceProcAddr(inst->instance, #name));      \
  if (api.name == nullptr) return make_error(ErrorKind::kUnavailable, "the Vulkan driver lacks " #name);
  HEARTH_VK_INSTANCE_FNS(HEARTH_VK_LOAD)
#undef HEARTH_VK_LOAD
  return inst.release();
}

std::string vendor_name(uint32_t id) {
  switch (id) {
    case 0x10DE: return "NVIDIA";
    case 0x1002: case 0x1022: return "AMD";
    case 0x8086: return "Intel";
    case 0x10005: return "Mesa";
    case 0x13B5: return "ARM";
    case 0x5143: return "Qualcomm";
    case 0x106B: return "Apple";
    default: {
      char buf[16];
      std::snprintf(buf, sizeof buf, "0x%04x", id);
      return buf;
    }
  }
}

DeviceKind kind_of(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return DeviceKind::kDiscrete;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return DeviceKind::kIntegrated;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return DeviceKind::kVirtual;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return DeviceKind::kCpu;
    default: return DeviceKind::kOther;
  }
}

DeviceInfo describe_physical(const VulkanApi& api, VkPhysicalDevice pd, int index) {
  DeviceInfo d;
  d.physical_index = index;
  VkPhysicalDeviceDriverProperties driver{};
  driver.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
  VkPhysicalDeviceSubgroupProperties subgroup{};
  subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
  subgroup.pNext = &driver;
  VkPhysicalDeviceProperties2 props{};
  props.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  props.pNext = &subgroup;
  api.vkGetPhysicalDeviceProperties2(pd, &props);
  d.name = props.properties.deviceName;
  d.vendor = vendor_name(props.properties.vendorID);
  d.driver = driver.driverName;
  if (driver.driverInfo[0] != '\0') d.driver += std::string(" ") + driver.driverInfo;
  d.kind = kind_of(props.properties.deviceType);
  d.subgroup_size = subgroup.subgroupSize;
  d.subgroup_arithmetic = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0 &&
                          (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) != 0;

  const bool budget = has_extension(api, pd, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  VkPhysicalDeviceMemoryBudgetPropertiesEXT mb{};
  mb.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT;
  VkPhysicalDeviceMemoryProperties2 mem{};
  mem.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2;
  if (budget) mem.pNext = &mb;
  api.vkGetPhysicalDeviceMemoryProperties2(pd, &mem);
  for (uint32_t h = 0; h < mem.memoryProperties.memoryHeapCount; ++h) {
    if ((mem.memoryProperties.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) == 0) continue;
    const uint64_t size = mem.memoryProperties.memoryHeaps[h].size;
    d.total_bytes += size;
    if (budget) {
      const uint64_t b = std::min<uint64_t>(mb.heapBudget[h], size);
      d.free_bytes += b > mb.heapUsage[h] ? b - mb.heapUsage[h] : 0;
    } else {
      d.free_bytes += size;
    }
  }
  d.budget_known = budget;
  return d;
}

int kind_rank(DeviceKind k) {
  switch (k) {
    case DeviceKind::kDiscrete: return 0;
    case DeviceKind::kIntegrated: return 1;
    case DeviceKind::kVirtual: return 2;
    case DeviceKind::kOther: return 3;
    case DeviceKind::kCpu: return 4;
  }
  return 5;
}

}  // namespace

Result<VulkanInstance*> vulkan_instance() {
  static std::once_flag once;
  static VulkanInstance* instance = nullptr;
  static Error failure;
  std::call_once(once, [] {
    auto r = create_instance();
    if (r.ok()) {
      instance = *r;
    } else {
      failure = r.error();
    }
  });
  if (instance == nullptr) return failure;
  return instance;
}

bool has_extension(const VulkanApi& api, VkPhysicalDevice pd, const char* name) {
  uint32_t n = 0;
  if (api.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkExtensionProperties> exts(n);
  if (api.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, exts.data()) != VK_SUCCESS) return false;
  for (const auto& e : exts) {
    if (std::strcmp(e.extensionName, name) == 0) return true;
  }
  return false;
}

Status load_device_functions(VulkanApi& api, VkDevice device) {
#define HEARTH_VK_LOAD(name)                                                             \
  api.name = reinterpret_cast<PFN_##name>(api.vkGetDeviceProcAddr(device, #name));       \
  if (api.name == nullptr) return make_error(ErrorKind::kUnavailable, "the Vulkan driver lacks " #name);
  HEARTH_VK_DEVICE_FNS(HEARTH_VK_LOAD)
#undef HEARTH_VK_LOAD
  return ok_status();
}

Result<std::vector<DeviceInfo>> list_devices() {
  auto inst = vulkan_instance();
  if (!inst.ok()) return inst.error();
  const VulkanApi& api = (*inst)->api;
  uint32_t n = 0;
  VkResult r = api.vkEnumeratePhysicalDevices((*inst)->instance, &n, nullptr);
  if (r != VK_SUCCESS) return vk_error("vkEnumeratePhysicalDevices", r);
  std::vector<VkPhysicalDevice> pds(n);
  r = api.vkEnumeratePhysicalDevices((*inst)->instance, &n, pds.data());
  if (r != VK_SUCCESS && r != VK_INCOMPLETE) return vk_error("vkEnumeratePhysicalDevices", r);
  std::vector<DeviceInfo> out;
  for (uint32_t i = 0; i < n; ++i) {
    VkPhysicalDeviceProperties p{};
    api.vkGetPhysicalDeviceProperties(pds[i], &p);
    if (p.apiVersion < VK_API_VERSION_1_2) continue;  // too old for the shaders' needs
    out.push_back(describe_physical(api, pds[i], static_cast<int>(i)));
  }
  std::stable_sort(out.begin(), out.end(), [](const DeviceInfo& a, const DeviceInfo& b) {
    if (kind_rank(a.kind) != kind_rank(b.kind)) return kind_rank(a.kind) < kind_rank(b.kind);
    return a.free_bytes > b.free_bytes;
  });
  return out;
}

#else  // !HEARTH_VULKAN

bool vulkan_built() { return false; }

Result<std::vector<DeviceInfo>> list_devices() {
  return make_error(ErrorKind::kUnavailable,
                    "this hearth was built without the Vulkan backend (no Vulkan headers or glslc at build time)");
}

#endif

}  // namespace hearth::device
