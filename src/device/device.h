// The compute-device layer: Vulkan devices found at run time (libvulkan is dlopened, so a
// binary built with the backend still runs where there is no Vulkan), device buffers,
// upload/download, compute pipelines made from embedded SPIR-V, command recording and fences.
// Nothing here does math; the shaders and their dispatch live in kernels/vulkan/. One
// backend per device kind: Vulkan today; another kind would add its own Context.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace hearth::device {

enum class DeviceKind { kDiscrete, kIntegrated, kVirtual, kCpu, kOther };
const char* device_kind_name(DeviceKind kind);

struct DeviceInfo {
  int physical_index = 0;      // the Vulkan driver's own enumeration index
  std::string name;
  std::string vendor;          // "NVIDIA", "AMD", "Intel", "Mesa", ... or the hex vendor id
  std::string driver;          // driver name and info ("llvmpipe", "NVIDIA 550.54")
  DeviceKind kind = DeviceKind::kOther;
  uint64_t total_bytes = 0;    // device-local heaps
  uint64_t free_bytes = 0;     // budget minus usage with VK_EXT_memory_budget, else total
  bool budget_known = false;   // free_bytes came from VK_EXT_memory_budget
  uint32_t subgroup_size = 0;
  bool subgroup_arithmetic = false;  // compute shaders may use subgroupAdd/Max
};

// Whether this binary was built with the Vulkan backend (headers and glslc at build time).
bool vulkan_built();

// Every Vulkan device, discrete first, then integrated, virtual, CPU; within a kind by free
// memory, most first. Fails (kUnavailable, with the reason) when libvulkan or a driver is
// missing or broken; an empty list means Vulkan works but reports no device.
Result<std::vector<DeviceInfo>> list_devices();
// list_devices() run in a child process that exits after answering: the same list (or error),
// with nothing of the Vulkan loader or its drivers left mapped in this process. For a process
// that shows the devices but never runs a kernel (the router). Call it before starting threads
// (it forks). Errors also when the child crashes or stalls (30 s).
Result<std::vector<DeviceInfo>> list_devices_in_child();

// The device to use from an ordered list and the HEARTH_GPU value (empty: automatic):
// "none" -> nullopt; a number -> that position in the list; other text -> the first device
// whose name contains it (no case). Automatic choice takes the first device that is not a
// CPU implementation (lavapipe, SwiftShader are slower than Hearth's own CPU path); a CPU
// device is used only when named. An index or name that matches nothing is an error that
// lists the devices.
Result<std::optional<size_t>> choose_device(const std::vector<DeviceInfo>& devices, std::string_view hearth_gpu);
// HEARTH_GPU asks for the CPU ("none" or "cpu", any case): callers skip discovery altogether,
// which would map every installed Vulkan driver into the process (lavapipe alone brings
// libLLVM, ~44 MiB of resident code) for nothing.
bool gpu_disabled(std::string_view hearth_gpu);

// One line per device: "0: NAME (vendor, kind, driver) total 8.0 GiB free 7.5 GiB"; the same
// without the position where a device is named alone.
std::string describe_device(size_t position, const DeviceInfo& d);
std::string describe_device(const DeviceInfo& d);

class Context;

// What a Context has done since it opened, for tests and diagnostics: how a step's work
// reaches the device. A submit is one vkQueueSubmit; a fence wait is one host wait for the
// device (a fence or the queue going idle), so submits + waits count host round trips.
struct DeviceCounters {
  uint64_t submits = 0;
  uint64_t fence_waits = 0;
  uint64_t dispatches = 0;
  uint64_t barriers = 0;  // pipeline barriers recorded (between dispatches and around transfers)
  uint64_t descriptor_sets = 0;  // allocated from pools (none where bindings are pushed)
};

// A device-local buffer. Move-only; frees its memory (and its accounting) when destroyed.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  size_t bytes() const { return bytes_; }
  bool valid() const { return handle_ != 0; }

 private:
  friend class Context;
  friend class Recorder;
  void release();
  Context* ctx_ = nullptr;
  uint64_t handle_ = 0;   // VkBuffer
  uint64_t memory_ = 0;   // VkDeviceMemory
  size_t bytes_ = 0;
};

// A compute pipeline: one SPIR-V module, n storage buffers at bindings 0..n-1 of set 0, and
// push constants of push_bytes.
struct PipelineSpec {
  std::string name;
  std::span<const uint32_t> spirv;
  uint32_t buffers = 0;
  uint32_t push_bytes = 0;
};
class Pipeline;

// A range of a buffer bound to one binding of a dispatch (bytes 0: to the end). `write`: the
// shader writes it (or writes memory it reaches through device addresses held in it), which
// is what the Recorder places barriers by.
struct BufferRange {
  const Buffer* buffer = nullptr;
  size_t offset = 0;
  size_t bytes = 0;
  bool write = false;
};

// A submitted command list; wait() blocks until the device finished it, then fills the host
// memory of the list's downloads.
class Fence {
 public:
  Fence() = default;
  Fence(Fence&& other) noexcept;
  Fence& operator=(Fence&& other) noexcept;
  ~Fence();
  Status wait();

 private:
  friend class Recorder;
  struct State;
  std::unique_ptr<State> state_;
};

// Records dispatches and transfers into one command buffer; submit() hands it to the queue in
// one submission. A whole forward step goes in one Recorder: uploads of its inputs, every
// kernel, downloads of its outputs. Barriers go only where the recorded work needs them:
// before a dispatch or copy that reads or writes a buffer written since the last barrier, or
// writes one read since it (plus one at the start, for earlier submissions' writes). The
// descriptor sets and host buffers it made live until the fence is waited for or destroyed.
class Recorder {
 public:
  explicit Recorder(Context& ctx);
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;
  ~Recorder();

  Status dispatch(const Pipeline& p, std::initializer_list<BufferRange> bindings, const void* push, size_t push_bytes,
                  uint32_t groups_x, uint32_t groups_y = 1, uint32_t groups_z = 1);
  // Host bytes into dst at this point of the list (the bytes are copied now).
  Status upload(const Buffer& dst, size_t offset, const void* src, size_t bytes);
  // bytes of src at this point of the list into host memory at dst, written when the fence is
  // waited for (run() or Fence::wait()); dst must live until then.
  Status download(const Buffer& src, size_t offset, void* dst, size_t bytes);
  // Device-to-device copies of the regions, one command (ranges within dst must not overlap).
  struct CopyRegion {
    size_t src_offset = 0, dst_offset = 0, bytes = 0;
  };
  Status copy(const Buffer& src, const Buffer& dst, std::span<const CopyRegion> regions);
  Result<Fence> submit();
  // Submits what is recorded so far, without a fence or a wait, and goes on recording into a
  // new command buffer of the same list: the device starts on a step's first layers while the
  // host records the rest. submit()'s fence covers every part (a queue runs them in order); a
  // full barrier starts each part. Under HEARTH_VK_PROFILE the device's wait for the next part
  // is charged to "idle (host recording)".
  Status flush();
  // submit() and wait.
  Status run();

 private:
  struct State;
  Context& ctx_;
  std::unique_ptr<State> state_;
};

class Context {
 public:
  // Opens the device at position `position` of list_devices()'s order.
  static Result<std::unique_ptr<Context>> open(size_t position);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const DeviceInfo& info() const;

  // A device-local buffer of at least `bytes` (rounded up to 4). Fails with kUnavailable when
  // the device refuses or when the allocation limit (below) would be passed.
  Result<Buffer> alloc(size_t bytes);
  Status upload(const Buffer& dst, size_t offset, const void* src, size_t bytes);
  Status download(const Buffer& src, size_t offset, void* dst, size_t bytes);
  Status fill_zero(const Buffer& dst);
  // Copies bytes between device buffers (or within one, ranges not overlapping) and waits.
  Status copy(const Buffer& src, size_t src_offset, const Buffer& dst, size_t dst_offset, size_t bytes);

  // Whether buffers have device addresses (bufferDeviceAddress, every Vulkan 1.2 device): a
  // shader then reaches buffers through addresses stored in another buffer, so data split
  // over many allocations (the KV's chunks) needs no single binding.
  bool buffer_addresses() const;
  // The device address of a buffer's first byte (kUnsupported without buffer_addresses()).
  Result<uint64_t> address(const Buffer& b) const;

  Result<const Pipeline*> pipeline(const PipelineSpec& spec);
  // Whether dispatches push their bindings into the command buffer (VK_KHR_push_descriptor,
  // unless HEARTH_VULKAN_PUSH_DESCRIPTORS=0 when the context opened) instead of allocating and
  // writing a descriptor set from a pool each.
  bool pushes_descriptors() const;

  const DeviceCounters& counters() const;
  // With HEARTH_VK_PROFILE=1 in the environment when the context opened: the GPU time of every
  // command list so far by kernel, and the host's recording and waiting time (the same table
  // goes to stderr when the context closes); =groups splits each kernel's line by workgroup
  // count and first buffer's size. Empty when not profiling.
  std::string profile_report() const;

  // Bytes of device memory this context holds in buffers (the real figure for size_vram).
  uint64_t allocated_bytes() const;
  // Allocation beyond `bytes` in total fails as if the device were full (0: no limit). Used
  // to fit a model into a device budget and by tests to inject a failure midway.
  void set_allocation_limit(uint64_t bytes);
  // Bytes this context may still allocate: the device's free memory at discovery less what it
  // holds, capped by the allocation limit.
  uint64_t available_bytes() const;

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  explicit Context(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hearth::device
