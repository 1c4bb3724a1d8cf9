// One opened Vulkan device: its queue, device-local buffers (with a host-visible staging
// buffer for the Context's own waited upload, download and copy), and compute pipelines built
// from SPIR-V; command lists and fences are in vulkan_recorder.cpp. Everything is submitted to
// one compute queue; callers serialise use of a Context (the engine thread owns it).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "device/device.h"

#if HEARTH_VULKAN
#include "device/vulkan_context_impl.h"
#endif

namespace hearth::device {

#if HEARTH_VULKAN


// ---- Buffer ----

Buffer::Buffer(Buffer&& o) noexcept : ctx_(o.ctx_), handle_(o.handle_), memory_(o.memory_), bytes_(o.bytes_) {
  o.ctx_ = nullptr;
  o.handle_ = 0;
  o.memory_ = 0;
  o.bytes_ = 0;
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    release();
    ctx_ = o.ctx_;
    handle_ = o.handle_;
    memory_ = o.memory_;
    bytes_ = o.bytes_;
    o.ctx_ = nullptr;
    o.handle_ = 0;
    o.memory_ = 0;
    o.bytes_ = 0;
  }
  return *this;
}

Buffer::~Buffer() { release(); }

void Buffer::release() {
  if (ctx_ == nullptr || handle_ == 0) return;
  Context::Impl& im = ctx_->impl();
  im.api.vkDestroyBuffer(im.device, reinterpret_cast<VkBuffer>(handle_), nullptr);
  im.api.vkFreeMemory(im.device, reinterpret_cast<VkDeviceMemory>(memory_), nullptr);
  im.allocated -= bytes_;
  ctx_ = nullptr;
  handle_ = 0;
  memory_ = 0;
  bytes_ = 0;
}

// ---- Context ----

Context::Context(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Context::~Context() = default;

const DeviceInfo& Context::info() const { return impl_->info; }
uint64_t Context::allocated_bytes() const { return impl_->allocated; }
const DeviceCounters& Context::counters() const { return impl_->counters; }
bool Context::pushes_descriptors() const { return impl_->push_descriptor_set != nullptr; }
std::string Context::profile_report() const {
  return impl_->profile.on ? impl_->profile.report(impl_->info.name) : std::string();
}
void Context::set_allocation_limit(uint64_t bytes) { impl_->limit = bytes; }
uint64_t Context::available_bytes() const {
  const Impl& im = *impl_;
  uint64_t free_bytes = im.info.free_bytes > im.allocated ? im.info.free_bytes - im.allocated : 0;
  if (im.limit != 0) free_bytes = std::min(free_bytes, im.limit > im.allocated ? im.limit - im.allocated : 0);
  return free_bytes;
}

Result<std::unique_ptr<Context>> Context::open(size_t position) {
  auto devices = list_devices();
  if (!devices.ok()) return devices.error();
  if (position >= devices->size()) {
    return make_error(ErrorKind::kInvalidArgument, "there is no Vulkan device " + std::to_string(position));
  }
  auto inst = vulkan_instance();
  if (!inst.ok()) return inst.error();
  auto im = std::make_unique<Impl>();
  im->api = (*inst)->api;
  im->info = (*devices)[position];
  VulkanApi& api = im->api;

  uint32_t n = 0;
  api.vkEnumeratePhysicalDevices((*inst)->instance, &n, nullptr);
  std::vector<VkPhysicalDevice> pds(n);
  api.vkEnumeratePhysicalDevices((*inst)->instance, &n, pds.data());
  if (im->info.physical_index < 0 || static_cast<uint32_t>(im->info.physical_index) >= n) {
    return make_error(ErrorKind::kUnavailable, "the Vulkan device list changed while opening a device");
  }
  im->physical = pds[static_cast<size_t>(im->info.physical_index)];
  api.vkGetPhysicalDeviceMemoryProperties(im->physical, &im->memory);

  uint32_t nq = 0;
  api.vkGetPhysicalDeviceQueueFamilyProperties(im->physical, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> qf(nq);
  api.vkGetPhysicalDeviceQueueFamilyProperties(im->physical, &nq, qf.data());
  bool found = false;
  for (uint32_t i = 0; i < nq && !found; ++i) {
    if ((qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) != 0) {
      im->queue_family = i;
      found = true;
    }
  }
  if (!found) return make_error(ErrorKind::kUnsupported, im->info.name + " has no compute queue");
  // HEARTH_VK_PROFILE=1: GPU time per kernel (vulkan_profile.h), where the queue has timestamps.
  if (const char* env = std::getenv("HEARTH_VK_PROFILE"); env != nullptr && *env != '\0' && *env != '0') {
    const uint32_t bits = qf[im->queue_family].timestampValidBits;
    if (bits == 0) {
      std::fprintf(stderr, "HEARTH_VK_PROFILE: %s has no timestamps on its compute queue\n", im->info.name.c_str());
    } else {
      VkPhysicalDeviceProperties props{};
      api.vkGetPhysicalDeviceProperties(im->physical, &props);
      im->profile.on = true;
      im->profile.by_groups = std::string_view(env) == "groups";
      im->profile.ns_per_tick = props.limits.timestampPeriod;
      im->profile.tick_mask = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    }
  }

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qi{};
  qi.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  qi.queueFamilyIndex = im->queue_family;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  // Buffer device addresses (core in Vulkan 1.2, required of every 1.2 device): the paged KV
  // reaches its chunk allocations through them.
  VkPhysicalDeviceVulkan12Features have12{};
  have12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  VkPhysicalDeviceFeatures2 have{};
  have.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  have.pNext = &have12;
  api.vkGetPhysicalDeviceFeatures2(im->physical, &have);
  VkPhysicalDeviceVulkan12Features want12{};
  want12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  want12.bufferDeviceAddress = have12.bufferDeviceAddress;
  im->addresses = have12.bufferDeviceAddress == VK_TRUE;
  // Push descriptors where offered: a decode step's ~170 dispatches each allocated a
  // descriptor set and wrote it on the host before recording; pushing puts the bindings in the
  // command buffer instead.
  const char* push_env = std::getenv("HEARTH_VULKAN_PUSH_DESCRIPTORS");
  const bool push = (push_env == nullptr || std::string_view(push_env) != "0") &&
                    has_extension(api, im->physical, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  const char* extensions[] = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
  VkDeviceCreateInfo di{};
  di.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  di.pNext = &want12;
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  di.enabledExtensionCount = push ? 1 : 0;
  di.ppEnabledExtensionNames = extensions;
  VkResult r = api.vkCreateDevice(im->physical, &di, nullptr, &im->device);
  if (r != VK_SUCCESS) return vk_error("vkCreateDevice", r);
  Status s = load_device_functions(api, im->device);
  if (!s.ok()) return s.error();
  if (push) {
    im->push_descriptor_set =
        reinterpret_cast<PFN_vkCmdPushDescriptorSetKHR>(api.vkGetDeviceProcAddr(im->device, "vkCmdPushDescriptorSetKHR"));
  }
  api.vkGetDeviceQueue(im->device, im->queue_family, 0, &im->queue);
  VkCommandPoolCreateInfo pi{};
  pi.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pi.queueFamilyIndex = im->queue_family;
  r = api.vkCreateCommandPool(im->device, &pi, nullptr, &im->pool);
  if (r != VK_SUCCESS) return vk_error("vkCreateCommandPool", r);
  return std::unique_ptr<Context>(new Context(std::move(im)));
}

Result<Buffer> Context::alloc(size_t bytes) {
  Impl& im = *impl_;
  const size_t rounded = std::max<size_t>(4, (bytes + 3) & ~size_t{3});
  if (im.limit != 0 && im.allocated + rounded > im.limit) {
    return make_error(ErrorKind::kUnavailable, "device memory limit reached on " + im.info.name + ": " +
                                                   std::to_string(im.allocated) + " bytes in use, " +
                                                   std::to_string(rounded) + " more asked, limit " +
                                                   std::to_string(im.limit));
  }
  VkBuffer buf = VK_NULL_HANDLE;
  VkDeviceMemory mem = VK_NULL_HANDLE;
  VkBufferUsageFlags usage =
      VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  if (im.addresses) usage |= VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;
  Status s = im.make_buffer(rounded, usage, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, &buf, &mem);
  if (!s.ok()) return s.error();
  Buffer b;
  b.ctx_ = this;
  b.handle_ = reinterpret_cast<uint64_t>(buf);
  b.memory_ = reinterpret_cast<uint64_t>(mem);
  b.bytes_ = rounded;
  im.allocated += rounded;
  return b;
}

namespace {
constexpr size_t kStagingChunk = size_t{16} << 20;
}  // namespace

Status Context::upload(const Buffer& dst, size_t offset, const void* src, size_t bytes) {
  if (Status s = check_range(dst, offset, bytes); !s.ok()) return s;
  Impl& im = *impl_;
  const auto* p = static_cast<const uint8_t*>(src);
  while (bytes > 0) {
    const size_t n = std::min(bytes, kStagingChunk);
    if (Status s = im.ensure_staging(std::min(kStagingChunk, std::max<size_t>(n, 1 << 16))); !s.ok()) return s;
    std::memcpy(im.staging_map, p, n);
    VkBufferCopy copy{0, offset, n};
    VkBuffer to = reinterpret_cast<VkBuffer>(dst.handle_);
    if (Status s = im.run_once([&](VkCommandBuffer cb) {
          im.before_transfer(cb);
          im.api.vkCmdCopyBuffer(cb, im.staging, to, 1, &copy);
          im.after_transfer(cb);
        });
        !s.ok()) {
      return s;
    }
    p += n;
    offset += n;
    bytes -= n;
  }
  return ok_status();
}

Status Context::download(const Buffer& src, size_t offset, void* dst, size_t bytes) {
  if (Status s = check_range(src, offset, bytes); !s.ok()) return s;
  Impl& im = *impl_;
  auto* p = static_cast<uint8_t*>(dst);
  while (bytes > 0) {
    const size_t n = std::min(bytes, kStagingChunk);
    if (Status s = im.ensure_staging(std::min(kStagingChunk, std::max<size_t>(n, 1 << 16))); !s.ok()) return s;
    VkBufferCopy copy{offset, 0, n};
    VkBuffer from = reinterpret_cast<VkBuffer>(src.handle_);
    if (Status s = im.run_once([&](VkCommandBuffer cb) {
          im.before_transfer(cb);
          im.api.vkCmdCopyBuffer(cb, from, im.staging, 1, &copy);
          // The copy's writes to the staging buffer made visible to the host's read below.
          VkMemoryBarrier mb{};
          mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
          mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
          mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
          im.api.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0,
                                      nullptr, 0, nullptr);
        });
        !s.ok()) {
      return s;
    }
    std::memcpy(p, im.staging_map, n);
    p += n;
    offset += n;
    bytes -= n;
  }
  return ok_status();
}

bool Context::buffer_addresses() const { return impl_->addresses; }

Result<uint64_t> Context::address(const Buffer& b) const {
  if (!impl_->addresses) {
    return make_error(ErrorKind::kUnsupported, impl_->info.name + " has no buffer device addresses");
  }
  if (!b.valid()) return make_error(ErrorKind::kInvalidArgument, "address of an empty buffer");
  VkBufferDeviceAddressInfo ai{};
  ai.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO;
  ai.buffer = reinterpret_cast<VkBuffer>(b.handle_);
  return static_cast<uint64_t>(impl_->api.vkGetBufferDeviceAddress(impl_->device, &ai));
}

Status Context::copy(const Buffer& src, size_t src_offset, const Buffer& dst, size_t dst_offset, size_t bytes) {
  if (Status s = check_range(src, src_offset, bytes); !s.ok()) return s;
  if (Status s = check_range(dst, dst_offset, bytes); !s.ok()) return s;
  if (bytes == 0) return ok_status();
  Impl& im = *impl_;
  VkBufferCopy region{src_offset, dst_offset, bytes};
  return im.run_once([&](VkCommandBuffer cb) {
    im.before_transfer(cb);
    im.api.vkCmdCopyBuffer(cb, reinterpret_cast<VkBuffer>(src.handle_), reinterpret_cast<VkBuffer>(dst.handle_), 1,
                           &region);
    im.after_transfer(cb);
  });
}

Status Context::fill_zero(const Buffer& dst) {
  if (!dst.valid()) return make_error(ErrorKind::kInvalidArgument, "fill_zero of an empty buffer");
  Impl& im = *impl_;
  VkBuffer b = reinterpret_cast<VkBuffer>(dst.handle_);
  return im.run_once([&](VkCommandBuffer cb) {
    im.before_transfer(cb);
    im.api.vkCmdFillBuffer(cb, b, 0, VK_WHOLE_SIZE, 0);
    im.after_transfer(cb);
  });
}

Result<const Pipeline*> Context::pipeline(const PipelineSpec& spec) {
  Impl& im = *impl_;
  auto it = im.pipelines.find(spec.name);
  if (it != im.pipelines.end()) return static_cast<const Pipeline*>(it->second.get());
  auto p = std::make_unique<Pipeline>();
  p->name = spec.name;
  p->buffers = spec.buffers;
  p->push_bytes = spec.push_bytes;
  std::vector<VkDescriptorSetLayoutBinding> binds(spec.buffers);
  for (uint32_t i = 0; i < spec.buffers; ++i) {
    binds[i] = VkDescriptorSetLayoutBinding{};
    binds[i].binding = i;
    binds[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    binds[i].descriptorCount = 1;
    binds[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo li{};
  li.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  if (im.push_descriptor_set != nullptr) li.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
  li.bindingCount = spec.buffers;
  li.pBindings = binds.data();
  VkResult r = im.api.vkCreateDescriptorSetLayout(im.device, &li, nullptr, &p->set_layout);
  if (r != VK_SUCCESS) return vk_error("vkCreateDescriptorSetLayout", r);
  VkPushConstantRange pr{VK_SHADER_STAGE_COMPUTE_BIT, 0, spec.push_bytes};
  VkPipelineLayoutCreateInfo pli{};
  pli.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  pli.setLayoutCount = 1;
  pli.pSetLayouts = &p->set_layout;
  pli.pushConstantRangeCount = spec.push_bytes > 0 ? 1 : 0;
  pli.pPushConstantRanges = &pr;
  r = im.api.vkCreatePipelineLayout(im.device, &pli, nullptr, &p->layout);
  if (r != VK_SUCCESS) {
    im.api.vkDestroyDescriptorSetLayout(im.device, p->set_layout, nullptr);
    return vk_error("vkCreatePipelineLayout", r);
  }
  VkShaderModuleCreateInfo mi{};
  mi.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  mi.codeSize = spec.spirv.size_bytes();
  mi.pCode = spec.spirv.data();
  VkShaderModule module = VK_NULL_HANDLE;
  r = im.api.vkCreateShaderModule(im.device, &mi, nullptr, &module);
  if (r == VK_SUCCESS) {
    VkComputePipelineCreateInfo ci{};
    ci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
    ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    ci.stage.module = module;
    ci.stage.pName = "main";
    ci.layout = p->layout;
    r = im.api.vkCreateComputePipelines(im.device, VK_NULL_HANDLE, 1, &ci, nullptr, &p->pipeline);
    im.api.vkDestroyShaderModule(im.device, module, nullptr);
  }
  if (r != VK_SUCCESS) {
    im.api.vkDestroyPipelineLayout(im.device, p->layout, nullptr);
    im.api.vkDestroyDescriptorSetLayout(im.device, p->set_layout, nullptr);
    return vk_error(("compute pipeline " + spec.name).c_str(), r);
  }
  const Pipeline* out = p.get();
  im.pipelines.emplace(spec.name, std::move(p));
  return out;
}


#else  // !HEARTH_VULKAN

class Pipeline {};

struct Context::Impl {
  DeviceInfo info;
};

Buffer::Buffer(Buffer&&) noexcept {}
Buffer& Buffer::operator=(Buffer&&) noexcept { return *this; }
Buffer::~Buffer() = default;
void Buffer::release() {}

Context::Context(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Context::~Context() = default;
const DeviceInfo& Context::info() const { return impl_->info; }
uint64_t Context::allocated_bytes() const { return 0; }
const DeviceCounters& Context::counters() const {
  static const DeviceCounters none;
  return none;
}
std::string Context::profile_report() const { return {}; }
void Context::set_allocation_limit(uint64_t) {}
uint64_t Context::available_bytes() const { return 0; }
Result<std::unique_ptr<Context>> Context::open(size_t) { return list_devices().error(); }
Result<Buffer> Context::alloc(size_t) { return make_error(ErrorKind::kUnsupported, "no Vulkan backend"); }
Status Context::upload(const Buffer&, size_t, const void*, size_t) { return make_error(ErrorKind::kUnsupported, "no Vulkan backend"); }
Status Context::download(const Buffer&, size_t, void*, size_t) { return make_error(ErrorKind::kUnsupported, "no Vulkan backend"); }
Status Context::fill_zero(const Buffer&) { return make_error(ErrorKind::kUnsupported, "no Vulkan backend"); }
bool Context::buffer_addresses() const { return false; }
Result<uint64_t> Context::address(const Buffer&) const { return make_error(ErrorKind::kUnsupported, "no Vulkan backend"); }
Status Context::copy(const Buffer&, size_t, const Buffer&, size_t, size_t) {
  return make_error(ErrorKind::kUnsupported, "no Vulkan backend");
}
Result<const Pipeline*> Context::pipeline(const PipelineSpec&) { return make_error(ErrorKind::kUnsupported, "no Vulkan backend"); }



#endif

}  // namespace hearth::device
