// The Vulkan entry points Hearth uses, resolved at run time from a dlopened libvulkan.so.1
// (no link-time dependency: a machine without Vulkan still runs the CPU path). Private to
// device/; only built when the Vulkan headers were found (HEARTH_VULKAN).
#pragma once

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan_core.h>

#include "util/result.h"

namespace hearth::device {

#define HEARTH_VK_INSTANCE_FNS(X)                 \
  X(vkDestroyInstance)                            \
  X(vkEnumeratePhysicalDevices)                   \
  X(vkGetPhysicalDeviceProperties)                \
  X(vkGetPhysicalDeviceProperties2)               \
  X(vkGetPhysicalDeviceMemoryProperties)          \
  X(vkGetPhysicalDeviceMemoryProperties2)         \
  X(vkGetPhysicalDeviceFeatures2)                 \
  X(vkGetPhysicalDeviceQueueFamilyProperties)     \
  X(vkEnumerateDeviceExtensionProperties)         \
  X(vkCreateDevice)                               \
  X(vkGetDeviceProcAddr)

#define HEARTH_VK_DEVICE_FNS(X)                   \
  X(vkDestroyDevice)                              \
  X(vkGetDeviceQueue)                             \
  X(vkCreateBuffer)                               \
  X(vkDestroyBuffer)                              \
  X(vkGetBufferMemoryRequirements)                \
  X(vkAllocateMemory)                             \
  X(vkFreeMemory)                                 \
  X(vkBindBufferMemory)                           \
  X(vkGetBufferDeviceAddress)                     \
  X(vkMapMemory)                                  \
  X(vkUnmapMemory)                                \
  X(vkCreateCommandPool)                          \
  X(vkDestroyCommandPool)                         \
  X(vkAllocateCommandBuffers)                     \
  X(vkFreeCommandBuffers)                         \
  X(vkBeginCommandBuffer)                         \
  X(vkEndCommandBuffer)                           \
  X(vkCmdCopyBuffer)                              \
  X(vkCmdFillBuffer)                              \
  X(vkCmdBindPipeline)                            \
  X(vkCmdBindDescriptorSets)                      \
  X(vkCmdPushConstants)                           \
  X(vkCmdDispatch)                                \
  X(vkCmdPipelineBarrier)                         \
  X(vkCreateFence)                                \
  X(vkDestroyFence)                               \
  X(vkWaitForFences)                              \
  X(vkQueueSubmit)                                \
  X(vkQueueWaitIdle)                              \
  X(vkCreateShaderModule)                         \
  X(vkDestroyShaderModule)                        \
  X(vkCreateDescriptorSetLayout)                  \
  X(vkDestroyDescriptorSetLayout)                 \
  X(vkCreatePipelineLayout)                       \
  X(vkDestroyPipelineLayout)                      \
  X(vkCreateComputePipelines)                     \
  X(vkDestroyPipeline)                            \
  X(vkCreateDescriptorPool)                       \
  X(vkDestroyDescriptorPool)                      \
  X(vkAllocateDescriptorSets)                     \
  X(vkUpdateDescriptorSets)                       \
  X(vkCreateQueryPool)                            \
  X(vkDestroyQueryPool)                           \
  X(vkCmdResetQueryPool)                          \
  X(vkCmdWriteTimestamp)                          \
  X(vkGetQueryPoolResults)

struct VulkanApi {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  PFN_vkCreateInstance vkCreateInstance = nullptr;
  PFN_vkEnumerateInstanceVersion vkEnumerateInstanceVersion = nullptr;
#define HEARTH_VK_MEMBER(name) PFN_##name name = nullptr;
  HEARTH_VK_INSTANCE_FNS(HEARTH_VK_MEMBER)
  HEARTH_VK_DEVICE_FNS(HEARTH_VK_MEMBER)
#undef HEARTH_VK_MEMBER
};

// The process-wide Vulkan instance: libvulkan loaded, an instance created, instance-level
// functions resolved. Made once, on first use, and kept for the process (drivers do not
// like instances coming and going); the error is kept too, so a missing driver is reported
// the same way each time.
struct VulkanInstance {
  VulkanApi api;
  VkInstance instance = VK_NULL_HANDLE;
  uint32_t api_version = 0;
};
Result<VulkanInstance*> vulkan_instance();

// Whether the physical device offers the device extension `name`.
bool has_extension(const VulkanApi& api, VkPhysicalDevice pd, const char* name);

// Resolves the device-level functions of `device` into api.
Status load_device_functions(VulkanApi& api, VkDevice device);

// "vkAllocateMemory failed: VK_ERROR_OUT_OF_DEVICE_MEMORY".
Error vk_error(const char* what, VkResult r);

}  // namespace hearth::device
