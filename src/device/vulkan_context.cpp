// One opened Vulkan device: its queue, device-local buffers (with a host-visible staging
// buffer for upload and download), compute pipelines built from SPIR-V, command recording
// and fences. Everything is submitted to one compute queue; callers serialise use of a
// Context (the engine thread owns it).
#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "device/device.h"

#if HEARTH_VULKAN
#include "device/vulkan_api.h"
#endif

namespace hearth::device {

#if HEARTH_VULKAN

class Pipeline {
 public:
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  uint32_t buffers = 0;
  uint32_t push_bytes = 0;
  std::string name;
};

struct Context::Impl {
  VulkanApi api;  // instance functions copied, device functions resolved for this device
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory{};
  DeviceInfo info;
  uint64_t allocated = 0;
  uint64_t limit = 0;
  DeviceCounters counters;
  bool addresses = false;  // bufferDeviceAddress enabled: storage buffers get device addresses
  std::map<std::string, std::unique_ptr<Pipeline>> pipelines;
  // Staging: one host-visible, coherent buffer reused by every transfer.
  VkBuffer staging = VK_NULL_HANDLE;
  VkDeviceMemory staging_memory = VK_NULL_HANDLE;
  void* staging_map = nullptr;
  size_t staging_bytes = 0;

  ~Impl() {
    if (device == VK_NULL_HANDLE) return;
    for (auto& [name, p] : pipelines) {
      api.vkDestroyPipeline(device, p->pipeline, nullptr);
      api.vkDestroyPipelineLayout(device, p->layout, nullptr);
      api.vkDestroyDescriptorSetLayout(device, p->set_layout, nullptr);
    }
    if (staging != VK_NULL_HANDLE) {
      api.vkDestroyBuffer(device, staging, nullptr);
      api.vkFreeMemory(device, staging_memory, nullptr);
    }
    if (pool != VK_NULL_HANDLE) api.vkDestroyCommandPool(device, pool, nullptr);
    api.vkDestroyDevice(device, nullptr);
  }

  // A memory type allowed by `bits` with all of `want`; -1 if none.
  int memory_type(uint32_t bits, VkMemoryPropertyFlags want) const {
    for (uint32_t i = 0; i < memory.memoryTypeCount; ++i) {
      if ((bits & (1u << i)) != 0 && (memory.memoryTypes[i].propertyFlags & want) == want) return static_cast<int>(i);
    }
    return -1;
  }

  Status make_buffer(size_t bytes, VkBufferUsageFlags usage, VkMemoryPropertyFlags want, VkBuffer* buf,
                     VkDeviceMemory* mem) {
    VkBufferCreateInfo bi{};
    bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    bi.size = bytes;
    bi.usage = usage;
    bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    VkResult r = api.vkCreateBuffer(device, &bi, nullptr, buf);
    if (r != VK_SUCCESS) return vk_error("vkCreateBuffer", r);
    VkMemoryRequirements req{};
    api.vkGetBufferMemoryRequirements(device, *buf, &req);
    const int type = memory_type(req.memoryTypeBits, want);
    if (type < 0) {
      api.vkDestroyBuffer(device, *buf, nullptr);
      return make_error(ErrorKind::kUnsupported, "the Vulkan device has no memory type for this buffer");
    }
    VkMemoryAllocateInfo ai{};
    ai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    ai.allocationSize = req.size;
    ai.memoryTypeIndex = static_cast<uint32_t>(type);
    VkMemoryAllocateFlagsInfo flags{};
    if ((usage & VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT) != 0) {
      flags.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO;
      flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
      ai.pNext = &flags;
    }
    r = api.vkAllocateMemory(device, &ai, nullptr, mem);
    if (r != VK_SUCCESS) {
      api.vkDestroyBuffer(device, *buf, nullptr);
      return vk_error("vkAllocateMemory", r);
    }
    r = api.vkBindBufferMemory(device, *buf, *mem, 0);
    if (r != VK_SUCCESS) {
      api.vkDestroyBuffer(device, *buf, nullptr);
      api.vkFreeMemory(device, *mem, nullptr);
      return vk_error("vkBindBufferMemory", r);
    }
    return ok_status();
  }

  Status ensure_staging(size_t bytes) {
    if (staging_bytes >= bytes) return ok_status();
    if (staging != VK_NULL_HANDLE) {
      api.vkDestroyBuffer(device, staging, nullptr);
      api.vkFreeMemory(device, staging_memory, nullptr);
      staging = VK_NULL_HANDLE;
      staging_bytes = 0;
    }
    Status s = make_buffer(bytes, VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                           VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, &staging,
                           &staging_memory);
    if (!s.ok()) return s;
    VkResult r = api.vkMapMemory(device, staging_memory, 0, VK_WHOLE_SIZE, 0, &staging_map);
    if (r != VK_SUCCESS) return vk_error("vkMapMemory", r);
    staging_bytes = bytes;
    return ok_status();
  }

  // Transfers (upload, copy, fill) run in their own submissions, and a fence or queue wait
  // orders execution but makes no device write visible to later commands: a transfer waits
  // behind a barrier for earlier shader and transfer work on the buffers it touches (write
  // after read, write after write), and its writes are made visible to every later command,
  // compute shaders included, by a barrier after it (later submissions on the queue are in
  // its second scope).
  void before_transfer(VkCommandBuffer cb) {
    ++counters.barriers;
    VkMemoryBarrier mb{};
    mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    api.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0,
                             nullptr, 0, nullptr);
  }
  void after_transfer(VkCommandBuffer cb) {
    ++counters.barriers;
    VkMemoryBarrier mb{};
    mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                       VK_ACCESS_TRANSFER_WRITE_BIT;
    api.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &mb, 0,
                             nullptr, 0, nullptr);
  }

  // Records one command buffer with `record`, submits it and waits.
  template <typename F>
  Status run_once(F&& record) {
    VkCommandBufferAllocateInfo ai{};
    ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    ai.commandPool = pool;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    VkCommandBuffer cb = VK_NULL_HANDLE;
    VkResult r = api.vkAllocateCommandBuffers(device, &ai, &cb);
    if (r != VK_SUCCESS) return vk_error("vkAllocateCommandBuffers", r);
    VkCommandBufferBeginInfo bi{};
    bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    api.vkBeginCommandBuffer(cb, &bi);
    record(cb);
    api.vkEndCommandBuffer(cb);
    VkSubmitInfo si{};
    si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cb;
    r = api.vkQueueSubmit(queue, 1, &si, VK_NULL_HANDLE);
    ++counters.submits;
    if (r == VK_SUCCESS) {
      r = api.vkQueueWaitIdle(queue);
      ++counters.fence_waits;
    }
    api.vkFreeCommandBuffers(device, pool, 1, &cb);
    if (r != VK_SUCCESS) return vk_error("vkQueueSubmit", r);
    return ok_status();
  }
};

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
  VkDeviceCreateInfo di{};
  di.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  di.pNext = &want12;
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  VkResult r = api.vkCreateDevice(im->physical, &di, nullptr, &im->device);
  if (r != VK_SUCCESS) return vk_error("vkCreateDevice", r);
  Status s = load_device_functions(api, im->device);
  if (!s.ok()) return s.error();
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

Status check_range(const Buffer& b, size_t offset, size_t bytes) {
  if (!b.valid() || offset > b.bytes() || bytes > b.bytes() - offset) {
    return make_error(ErrorKind::kOutOfRange, "device buffer access outside the buffer");
  }
  return ok_status();
}
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

// ---- Fence and Recorder ----

struct Fence::State {
  Context::Impl* im = nullptr;
  VkFence fence = VK_NULL_HANDLE;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  VkDescriptorPool descriptors = VK_NULL_HANDLE;
  bool waited = false;

  ~State() {
    if (im == nullptr) return;
    if (!waited && fence != VK_NULL_HANDLE) {
      im->api.vkWaitForFences(im->device, 1, &fence, VK_TRUE, UINT64_MAX);
      ++im->counters.fence_waits;
    }
    if (fence != VK_NULL_HANDLE) im->api.vkDestroyFence(im->device, fence, nullptr);
    if (cb != VK_NULL_HANDLE) im->api.vkFreeCommandBuffers(im->device, im->pool, 1, &cb);
    if (descriptors != VK_NULL_HANDLE) im->api.vkDestroyDescriptorPool(im->device, descriptors, nullptr);
  }
};

Fence::Fence(Fence&& o) noexcept = default;
Fence& Fence::operator=(Fence&& o) noexcept = default;
Fence::~Fence() = default;

Status Fence::wait() {
  if (!state_ || state_->waited) return ok_status();
  VkResult r = state_->im->api.vkWaitForFences(state_->im->device, 1, &state_->fence, VK_TRUE, UINT64_MAX);
  ++state_->im->counters.fence_waits;
  state_->waited = true;
  if (r != VK_SUCCESS) return vk_error("vkWaitForFences", r);
  return ok_status();
}

struct Recorder::State {
  std::unique_ptr<Fence::State> pending;  // command buffer and descriptor pools not yet submitted
  std::vector<VkDescriptorPool> pools;
  uint32_t sets_left = 0;
  Status failed;
};

Recorder::Recorder(Context& ctx) : ctx_(ctx), state_(std::make_unique<State>()) {
  Context::Impl& im = ctx.impl();
  state_->pending = std::make_unique<Fence::State>();
  state_->pending->im = &im;
  VkCommandBufferAllocateInfo ai{};
  ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  ai.commandPool = im.pool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkResult r = im.api.vkAllocateCommandBuffers(im.device, &ai, &state_->pending->cb);
  if (r != VK_SUCCESS) {
    state_->failed = vk_error("vkAllocateCommandBuffers", r);
    state_->pending->cb = VK_NULL_HANDLE;
    return;
  }
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  im.api.vkBeginCommandBuffer(state_->pending->cb, &bi);
}

Recorder::~Recorder() {
  // Pools beyond the first are owned by the state's extra list; destroy them if never submitted.
  if (state_ && state_->pending) {
    Context::Impl& im = ctx_.impl();
    for (VkDescriptorPool p : state_->pools) im.api.vkDestroyDescriptorPool(im.device, p, nullptr);
    state_->pending->waited = true;  // never submitted: nothing to wait for
  }
}

Status Recorder::dispatch(const Pipeline& p, std::initializer_list<BufferRange> bindings, const void* push,
                          size_t push_bytes, uint32_t gx, uint32_t gy, uint32_t gz) {
  if (!state_->failed.ok()) return state_->failed;
  if (!state_->pending) return make_error(ErrorKind::kInternal, "dispatch after submit");
  if (bindings.size() != p.buffers || push_bytes != p.push_bytes) {
    return make_error(ErrorKind::kInternal, "pipeline " + p.name + ": wrong number of buffers or push constant size");
  }
  Context::Impl& im = ctx_.impl();
  constexpr uint32_t kSetsPerPool = 64;
  if (state_->sets_left == 0) {
    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSetsPerPool * 8};
    VkDescriptorPoolCreateInfo ci{};
    ci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
    ci.maxSets = kSetsPerPool;
    ci.poolSizeCount = 1;
    ci.pPoolSizes = &size;
    VkDescriptorPool pool = VK_NULL_HANDLE;
    VkResult r = im.api.vkCreateDescriptorPool(im.device, &ci, nullptr, &pool);
    if (r != VK_SUCCESS) return state_->failed = vk_error("vkCreateDescriptorPool", r);
    state_->pools.push_back(pool);
    state_->sets_left = kSetsPerPool;
  }
  VkDescriptorSetAllocateInfo ai{};
  ai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
  ai.descriptorPool = state_->pools.back();
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &p.set_layout;
  VkDescriptorSet set = VK_NULL_HANDLE;
  VkResult r = im.api.vkAllocateDescriptorSets(im.device, &ai, &set);
  if (r != VK_SUCCESS) return state_->failed = vk_error("vkAllocateDescriptorSets", r);
  --state_->sets_left;
  std::vector<VkDescriptorBufferInfo> infos;
  infos.reserve(bindings.size());
  for (const BufferRange& b : bindings) {
    if (b.buffer == nullptr || !b.buffer->valid() || b.offset >= b.buffer->bytes()) {
      return make_error(ErrorKind::kInternal, "pipeline " + p.name + ": a binding is empty or out of range");
    }
    infos.push_back({reinterpret_cast<VkBuffer>(b.buffer->handle_), b.offset, b.bytes == 0 ? VK_WHOLE_SIZE : b.bytes});
  }
  std::vector<VkWriteDescriptorSet> writes(infos.size());
  for (size_t i = 0; i < infos.size(); ++i) {
    writes[i] = VkWriteDescriptorSet{};
    writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    writes[i].dstSet = set;
    writes[i].dstBinding = static_cast<uint32_t>(i);
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  im.api.vkUpdateDescriptorSets(im.device, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
  VkCommandBuffer cb = state_->pending->cb;
  im.api.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
  im.api.vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0, nullptr);
  if (push_bytes > 0) {
    im.api.vkCmdPushConstants(cb, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, static_cast<uint32_t>(push_bytes), push);
  }
  im.api.vkCmdDispatch(cb, gx, gy, gz);
  ++im.counters.dispatches;
  ++im.counters.barriers;
  VkMemoryBarrier mb{};
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  im.api.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb,
                              0, nullptr, 0, nullptr);
  return ok_status();
}

Result<Fence> Recorder::submit() {
  if (!state_->failed.ok()) return state_->failed.error();
  if (!state_->pending) return make_error(ErrorKind::kInternal, "submit twice");
  Context::Impl& im = ctx_.impl();
  std::unique_ptr<Fence::State> st = std::move(state_->pending);
  // The fence state owns the first pool; more than one pool is rare (over 64 dispatches):
  // merge by keeping them in the fence too.
  im.api.vkEndCommandBuffer(st->cb);
  VkFenceCreateInfo fi{};
  fi.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  VkResult r = im.api.vkCreateFence(im.device, &fi, nullptr, &st->fence);
  if (r != VK_SUCCESS) {
    for (VkDescriptorPool p : state_->pools) im.api.vkDestroyDescriptorPool(im.device, p, nullptr);
    state_->pools.clear();
    st->waited = true;
    return vk_error("vkCreateFence", r);
  }
  VkSubmitInfo si{};
  si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &st->cb;
  r = im.api.vkQueueSubmit(im.queue, 1, &si, st->fence);
  ++im.counters.submits;
  if (r != VK_SUCCESS) {
    for (VkDescriptorPool p : state_->pools) im.api.vkDestroyDescriptorPool(im.device, p, nullptr);
    state_->pools.clear();
    st->waited = true;
    return vk_error("vkQueueSubmit", r);
  }
  // Wait for completion before the extra pools go; the first is kept with the fence.
  Fence f;
  if (!state_->pools.empty()) {
    st->descriptors = state_->pools.front();
    if (state_->pools.size() > 1) {
      // Extra pools: freed once the fence was waited for, through an immediate wait here.
      im.api.vkWaitForFences(im.device, 1, &st->fence, VK_TRUE, UINT64_MAX);
      ++im.counters.fence_waits;
      st->waited = true;
      for (size_t i = 1; i < state_->pools.size(); ++i) im.api.vkDestroyDescriptorPool(im.device, state_->pools[i], nullptr);
    }
    state_->pools.clear();
  }
  f.state_ = std::move(st);
  return f;
}

Status Recorder::run() {
  auto f = submit();
  if (!f.ok()) return f.error();
  return f->wait();
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

struct Fence::State {};
Fence::Fence(Fence&&) noexcept = default;
Fence& Fence::operator=(Fence&&) noexcept = default;
Fence::~Fence() = default;
Status Fence::wait() { return ok_status(); }

struct Recorder::State {};
Recorder::Recorder(Context& ctx) : ctx_(ctx) {}
Recorder::~Recorder() = default;
Status Recorder::dispatch(const Pipeline&, std::initializer_list<BufferRange>, const void*, size_t, uint32_t, uint32_t,
                          uint32_t) {
  return make_error(ErrorKind::kUnsupported, "no Vulkan backend");
}
Result<Fence> Recorder::submit() { return make_error(ErrorKind::kUnsupported, "no Vulkan backend"); }
Status Recorder::run() { return make_error(ErrorKind::kUnsupported, "no Vulkan backend"); }

#endif

}  // namespace hearth::device
