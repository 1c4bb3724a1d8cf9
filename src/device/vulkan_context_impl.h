// The Vulkan Context's internals, shared by the files that implement device.h's classes
// (vulkan_context.cpp: buffers, transfers, pipelines; vulkan_recorder.cpp: command recording,
// fences). Only built with the Vulkan backend.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "device/device.h"
#include "device/vulkan_api.h"
#include "device/vulkan_profile.h"

namespace hearth::device {

// Whether [offset, offset + bytes) lies inside b (transfers and copies, queued or immediate).
inline Status check_range(const Buffer& b, size_t offset, size_t bytes) {
  if (!b.valid() || offset > b.bytes() || bytes > b.bytes() - offset) {
    return make_error(ErrorKind::kOutOfRange, "device buffer access outside the buffer");
  }
  return ok_status();
}

class Pipeline {
 public:
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  uint32_t buffers = 0;
  uint32_t push_bytes = 0;
  std::string name;
};

// A host-visible, coherent buffer, mapped: where a Recorder's uploads and downloads pass.
struct HostBuffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  uint8_t* map = nullptr;
  size_t bytes = 0;
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
  // VK_KHR_push_descriptor enabled: set layouts are push layouts, dispatches push their bindings.
  PFN_vkCmdPushDescriptorSetKHR push_descriptor_set = nullptr;
  std::map<std::string, std::unique_ptr<Pipeline>> pipelines;
  // Staging: one host-visible, coherent buffer reused by every transfer.
  VkBuffer staging = VK_NULL_HANDLE;
  VkDeviceMemory staging_memory = VK_NULL_HANDLE;
  void* staging_map = nullptr;
  size_t staging_bytes = 0;

  // Host buffers of finished command lists, kept for the next (a step reuses the last one's).
  std::vector<HostBuffer> spare_host;
  KernelProfile profile;  // HEARTH_VK_PROFILE

  ~Impl() {
    if (device == VK_NULL_HANDLE) return;
    if (profile.on && profile.lists > 0) std::fputs(profile.report(info.name).c_str(), stderr);
    for (HostBuffer& h : spare_host) destroy_host(h);
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

  void destroy_host(HostBuffer& h) {
    api.vkDestroyBuffer(device, h.buffer, nullptr);
    api.vkFreeMemory(device, h.memory, nullptr);
    h = HostBuffer{};
  }
  // A spare host buffer of at least `bytes`, or a new one.
  Status take_host(size_t bytes, HostBuffer* out) {
    for (size_t i = 0; i < spare_host.size(); ++i) {
      if (spare_host[i].bytes >= bytes) {
        *out = spare_host[i];
        spare_host.erase(spare_host.begin() + static_cast<std::ptrdiff_t>(i));
        return ok_status();
      }
    }
    HostBuffer h;
    h.bytes = std::max<size_t>(bytes, size_t{1} << 18);
    Status s = make_buffer(h.bytes, VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                           VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, &h.buffer,
                           &h.memory);
    if (!s.ok()) return s;
    void* map = nullptr;
    VkResult r = api.vkMapMemory(device, h.memory, 0, VK_WHOLE_SIZE, 0, &map);
    if (r != VK_SUCCESS) {
      destroy_host(h);
      return vk_error("vkMapMemory", r);
    }
    h.map = static_cast<uint8_t*>(map);
    *out = h;
    return ok_status();
  }
  // Back to the spares once the device is done with it; a few are kept, the smallest go.
  void give_host(HostBuffer h) {
    spare_host.push_back(h);
    if (spare_host.size() > 4) {
      auto smallest = std::min_element(spare_host.begin(), spare_host.end(),
                                       [](const HostBuffer& a, const HostBuffer& b) { return a.bytes < b.bytes; });
      destroy_host(*smallest);
      spare_host.erase(smallest);
    }
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

}  // namespace hearth::device
