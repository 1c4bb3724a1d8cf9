// Command recording and fences (device.h's Recorder and Fence): one command buffer per
// Recorder holding dispatches, host uploads and downloads through mapped host buffers, and
// device copies, with barriers placed by what each command reads and writes; one submission
// and one fence per list. With HEARTH_VK_PROFILE each list also carries timestamps
// (vulkan_profile.h).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "device/device.h"

#if HEARTH_VULKAN
#include "device/vulkan_context_impl.h"
#endif

namespace hearth::device {

#if HEARTH_VULKAN

namespace {

// One barrier kind for everything a list holds: earlier shader and transfer writes made
// visible to later shader and transfer reads and writes (and later writes kept behind earlier
// reads).
void full_barrier(Context::Impl& im, VkCommandBuffer cb, VkPipelineStageFlags src_stages) {
  VkMemoryBarrier mb{};
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask =
      VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  im.api.vkCmdPipelineBarrier(cb, src_stages, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
                              1, &mb, 0, nullptr, 0, nullptr);
  ++im.counters.barriers;
}

constexpr VkPipelineStageFlags kListStages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;

// Timestamps one profiled list holds; commands past it go uncounted.
constexpr uint32_t kProfileQueries = 8192;

double ns_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

struct PendingRead {
  void* dst = nullptr;
  const uint8_t* src = nullptr;  // in a host buffer of the list
  size_t bytes = 0;
};

struct Fence::State {
  Context::Impl* im = nullptr;
  VkFence fence = VK_NULL_HANDLE;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  std::vector<VkCommandBuffer> flushed;  // earlier parts of the list, submitted by flush()
  std::vector<VkDescriptorPool> descriptors;
  std::vector<HostBuffer> host;
  std::vector<PendingRead> reads;
  bool waited = false;
  // HEARTH_VK_PROFILE: the list's timestamps (query 0 at its start, query i after names[i - 1]).
  VkQueryPool queries = VK_NULL_HANDLE;
  std::vector<std::string> names;
  std::chrono::steady_clock::time_point started, submitted;
  double record_ns = 0;

  ~State() {
    if (im == nullptr) return;
    if (!waited && fence != VK_NULL_HANDLE) {
      im->api.vkWaitForFences(im->device, 1, &fence, VK_TRUE, UINT64_MAX);
      ++im->counters.fence_waits;
    }
    if (queries != VK_NULL_HANDLE) im->api.vkDestroyQueryPool(im->device, queries, nullptr);
    if (fence != VK_NULL_HANDLE) im->api.vkDestroyFence(im->device, fence, nullptr);
    if (cb != VK_NULL_HANDLE) im->api.vkFreeCommandBuffers(im->device, im->pool, 1, &cb);
    for (VkCommandBuffer part : flushed) im->api.vkFreeCommandBuffers(im->device, im->pool, 1, &part);
    for (VkDescriptorPool p : descriptors) im->api.vkDestroyDescriptorPool(im->device, p, nullptr);
    for (HostBuffer& h : host) im->give_host(h);
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
  for (const PendingRead& pr : state_->reads) std::memcpy(pr.dst, pr.src, pr.bytes);
  state_->reads.clear();
  if (state_->queries != VK_NULL_HANDLE) {
    const double wait_ns = ns_since(state_->submitted);
    std::vector<uint64_t> ticks(state_->names.size() + 1);
    r = state_->im->api.vkGetQueryPoolResults(state_->im->device, state_->queries, 0,
                                              static_cast<uint32_t>(ticks.size()), ticks.size() * sizeof(uint64_t),
                                              ticks.data(), sizeof(uint64_t), VK_QUERY_RESULT_64_BIT);
    if (r == VK_SUCCESS) state_->im->profile.add_list(ticks, state_->names, state_->record_ns, wait_ns);
  }
  return ok_status();
}

struct Recorder::State {
  std::unique_ptr<Fence::State> pending;  // what the fence will own once submitted
  uint32_t sets_left = 0;
  size_t host_used = 0;  // bytes used of pending->host.back()
  // Buffers written and read since the last barrier (a few at a time: linear search).
  std::vector<uint64_t> written, read;
  Status failed;

  Status begin_part(Context::Impl& im);

  // HEARTH_VK_PROFILE: a timestamp after the command just recorded, charged to `name`.
  void mark(Context::Impl& im, const std::string& name) {
    if (pending->queries == VK_NULL_HANDLE || pending->names.size() + 1 >= kProfileQueries) return;
    pending->names.push_back(name);
    im.api.vkCmdWriteTimestamp(pending->cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pending->queries,
                               static_cast<uint32_t>(pending->names.size()));
  }

  bool in(const std::vector<uint64_t>& v, uint64_t h) const { return std::find(v.begin(), v.end(), h) != v.end(); }
  // Records a barrier first when a command reading `reads` and writing `writes` depends on
  // what was recorded since the last one; then notes its accesses.
  void order(Context::Impl& im, const uint64_t* reads, size_t n_reads, const uint64_t* writes, size_t n_writes) {
    bool need = false;
    for (size_t k = 0; k < n_reads; ++k) need = need || in(written, reads[k]);
    for (size_t k = 0; k < n_writes; ++k) need = need || in(written, writes[k]) || in(read, writes[k]);
    if (need) {
      full_barrier(im, pending->cb, kListStages);
      written.clear();
      read.clear();
    }
    for (size_t k = 0; k < n_reads; ++k) {
      if (!in(read, reads[k])) read.push_back(reads[k]);
    }
    for (size_t k = 0; k < n_writes; ++k) {
      if (!in(written, writes[k])) written.push_back(writes[k]);
    }
  }
  // Room for `bytes` in the list's host buffers: where they go (buffer, offset).
  Status host_room(Context::Impl& im, size_t bytes, HostBuffer** buf, size_t* offset) {
    const size_t aligned = (bytes + 15) & ~size_t{15};
    if (pending->host.empty() || pending->host.back().bytes - host_used < aligned) {
      HostBuffer h;
      if (Status s = im.take_host(aligned, &h); !s.ok()) return s;
      pending->host.push_back(h);
      host_used = 0;
    }
    *buf = &pending->host.back();
    *offset = host_used;
    host_used += aligned;
    return ok_status();
  }
};

// A new command buffer for the list, begun, behind a barrier for earlier submissions' writes
// (a fence or queue order orders execution, it makes no write visible).
Status Recorder::State::begin_part(Context::Impl& im) {
  VkCommandBufferAllocateInfo ai{};
  ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  ai.commandPool = im.pool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkResult r = im.api.vkAllocateCommandBuffers(im.device, &ai, &pending->cb);
  if (r != VK_SUCCESS) {
    pending->cb = VK_NULL_HANDLE;
    return failed = vk_error("vkAllocateCommandBuffers", r);
  }
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  im.api.vkBeginCommandBuffer(pending->cb, &bi);
  full_barrier(im, pending->cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT);
  written.clear();
  read.clear();
  return ok_status();
}

Recorder::Recorder(Context& ctx) : ctx_(ctx), state_(std::make_unique<State>()) {
  Context::Impl& im = ctx.impl();
  state_->pending = std::make_unique<Fence::State>();
  state_->pending->im = &im;
  if (!state_->begin_part(im).ok()) return;
  if (im.profile.on) {
    state_->pending->started = std::chrono::steady_clock::now();
    VkQueryPoolCreateInfo qi{};
    qi.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = kProfileQueries;
    if (im.api.vkCreateQueryPool(im.device, &qi, nullptr, &state_->pending->queries) == VK_SUCCESS) {
      im.api.vkCmdResetQueryPool(state_->pending->cb, state_->pending->queries, 0, kProfileQueries);
      im.api.vkCmdWriteTimestamp(state_->pending->cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, state_->pending->queries,
                                 0);
    } else {
      state_->pending->queries = VK_NULL_HANDLE;
    }
  }
}

Recorder::~Recorder() {
  // Never submitted: nothing to wait for; the pending state frees the rest.
  if (state_ && state_->pending) state_->pending->waited = true;
}

Status Recorder::dispatch(const Pipeline& p, std::initializer_list<BufferRange> bindings, const void* push,
                          size_t push_bytes, uint32_t gx, uint32_t gy, uint32_t gz) {
  if (!state_->failed.ok()) return state_->failed;
  if (!state_->pending) return make_error(ErrorKind::kInternal, "dispatch after submit");
  if (bindings.size() != p.buffers || push_bytes != p.push_bytes) {
    return make_error(ErrorKind::kInternal, "pipeline " + p.name + ": wrong number of buffers or push constant size");
  }
  Context::Impl& im = ctx_.impl();
  constexpr uint32_t kSetsPerPool = 256;
  constexpr uint32_t kMaxBindings = 8;
  if (bindings.size() > kMaxBindings) return make_error(ErrorKind::kInternal, "pipeline " + p.name + ": too many buffers");
  VkDescriptorBufferInfo infos[kMaxBindings];
  VkWriteDescriptorSet writes[kMaxBindings];
  uint64_t reads[kMaxBindings], wrote[kMaxBindings];
  size_t n_reads = 0, n_writes = 0, i = 0;
  for (const BufferRange& b : bindings) {
    if (b.buffer == nullptr || !b.buffer->valid() || b.offset >= b.buffer->bytes()) {
      return make_error(ErrorKind::kInternal, "pipeline " + p.name + ": a binding is empty or out of range");
    }
    infos[i] = {reinterpret_cast<VkBuffer>(b.buffer->handle_), b.offset, b.bytes == 0 ? VK_WHOLE_SIZE : b.bytes};
    (b.write ? wrote[n_writes++] : reads[n_reads++]) = b.buffer->handle_;
    ++i;
  }
  for (size_t k = 0; k < i; ++k) {
    writes[k] = VkWriteDescriptorSet{};
    writes[k].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    writes[k].dstBinding = static_cast<uint32_t>(k);
    writes[k].descriptorCount = 1;
    writes[k].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[k].pBufferInfo = &infos[k];
  }
  VkDescriptorSet set = VK_NULL_HANDLE;
  if (im.push_descriptor_set == nullptr) {
    if (state_->sets_left == 0) {
      VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSetsPerPool * kMaxBindings};
      VkDescriptorPoolCreateInfo ci{};
      ci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
      ci.maxSets = kSetsPerPool;
      ci.poolSizeCount = 1;
      ci.pPoolSizes = &size;
      VkDescriptorPool pool = VK_NULL_HANDLE;
      VkResult r = im.api.vkCreateDescriptorPool(im.device, &ci, nullptr, &pool);
      if (r != VK_SUCCESS) return state_->failed = vk_error("vkCreateDescriptorPool", r);
      state_->pending->descriptors.push_back(pool);
      state_->sets_left = kSetsPerPool;
    }
    VkDescriptorSetAllocateInfo ai{};
    ai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
    ai.descriptorPool = state_->pending->descriptors.back();
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &p.set_layout;
    VkResult r = im.api.vkAllocateDescriptorSets(im.device, &ai, &set);
    if (r != VK_SUCCESS) return state_->failed = vk_error("vkAllocateDescriptorSets", r);
    --state_->sets_left;
    ++im.counters.descriptor_sets;
    for (size_t k = 0; k < i; ++k) writes[k].dstSet = set;
    im.api.vkUpdateDescriptorSets(im.device, static_cast<uint32_t>(i), writes, 0, nullptr);
  }
  VkCommandBuffer cb = state_->pending->cb;
  state_->order(im, reads, n_reads, wrote, n_writes);
  im.api.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
  if (set != VK_NULL_HANDLE) {
    im.api.vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0, nullptr);
  } else {
    im.push_descriptor_set(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, static_cast<uint32_t>(i), writes);
  }
  if (push_bytes > 0) {
    im.api.vkCmdPushConstants(cb, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, static_cast<uint32_t>(push_bytes), push);
  }
  im.api.vkCmdDispatch(cb, gx, gy, gz);
  ++im.counters.dispatches;
  if (im.profile.by_groups) {
    const uint64_t groups = uint64_t{gx} * gy * gz;
    const double mib = bindings.size() == 0 ? 0.0 : static_cast<double>(bindings.begin()->buffer->bytes()) / (1 << 20);
    char detail[64];
    std::snprintf(detail, sizeof detail, " [%llu groups, %.1f MiB]", static_cast<unsigned long long>(groups), mib);
    state_->mark(im, p.name + detail);
  } else {
    state_->mark(im, p.name);
  }
  return ok_status();
}

Status Recorder::upload(const Buffer& dst, size_t offset, const void* src, size_t bytes) {
  if (!state_->failed.ok()) return state_->failed;
  if (!state_->pending) return make_error(ErrorKind::kInternal, "upload after submit");
  HEARTH_TRY(check_range(dst, offset, bytes));
  if (bytes == 0) return ok_status();
  Context::Impl& im = ctx_.impl();
  HostBuffer* h = nullptr;
  size_t at = 0;
  HEARTH_TRY(state_->host_room(im, bytes, &h, &at));
  std::memcpy(h->map + at, src, bytes);  // host writes before the submit are visible to it
  state_->order(im, nullptr, 0, &dst.handle_, 1);
  VkBufferCopy region{at, offset, bytes};
  im.api.vkCmdCopyBuffer(state_->pending->cb, h->buffer, reinterpret_cast<VkBuffer>(dst.handle_), 1, &region);
  state_->mark(im, "upload");
  return ok_status();
}

Status Recorder::download(const Buffer& src, size_t offset, void* dst, size_t bytes) {
  if (!state_->failed.ok()) return state_->failed;
  if (!state_->pending) return make_error(ErrorKind::kInternal, "download after submit");
  HEARTH_TRY(check_range(src, offset, bytes));
  if (bytes == 0) return ok_status();
  Context::Impl& im = ctx_.impl();
  HostBuffer* h = nullptr;
  size_t at = 0;
  HEARTH_TRY(state_->host_room(im, bytes, &h, &at));
  state_->order(im, &src.handle_, 1, nullptr, 0);
  VkBufferCopy region{offset, at, bytes};
  im.api.vkCmdCopyBuffer(state_->pending->cb, reinterpret_cast<VkBuffer>(src.handle_), h->buffer, 1, &region);
  state_->pending->reads.push_back({dst, h->map + at, bytes});
  state_->mark(im, "download");
  return ok_status();
}

Status Recorder::copy(const Buffer& src, const Buffer& dst, std::span<const CopyRegion> regions) {
  if (!state_->failed.ok()) return state_->failed;
  if (!state_->pending) return make_error(ErrorKind::kInternal, "copy after submit");
  if (regions.empty()) return ok_status();
  std::vector<VkBufferCopy> vr;
  vr.reserve(regions.size());
  for (const CopyRegion& c : regions) {
    HEARTH_TRY(check_range(src, c.src_offset, c.bytes));
    HEARTH_TRY(check_range(dst, c.dst_offset, c.bytes));
    if (c.bytes > 0) vr.push_back({c.src_offset, c.dst_offset, c.bytes});
  }
  if (vr.empty()) return ok_status();
  Context::Impl& im = ctx_.impl();
  state_->order(im, &src.handle_, 1, &dst.handle_, 1);
  im.api.vkCmdCopyBuffer(state_->pending->cb, reinterpret_cast<VkBuffer>(src.handle_),
                         reinterpret_cast<VkBuffer>(dst.handle_), static_cast<uint32_t>(vr.size()), vr.data());
  state_->mark(im, "copy");
  return ok_status();
}

Status Recorder::flush() {
  if (!state_->failed.ok()) return state_->failed;
  if (!state_->pending) return make_error(ErrorKind::kInternal, "flush after submit");
  Context::Impl& im = ctx_.impl();
  Fence::State& st = *state_->pending;
  im.api.vkEndCommandBuffer(st.cb);
  VkSubmitInfo si{};
  si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &st.cb;
  VkResult r = im.api.vkQueueSubmit(im.queue, 1, &si, VK_NULL_HANDLE);
  ++im.counters.submits;
  st.flushed.push_back(st.cb);
  st.cb = VK_NULL_HANDLE;
  if (r != VK_SUCCESS) return state_->failed = vk_error("vkQueueSubmit", r);
  HEARTH_TRY(state_->begin_part(im));
  state_->mark(im, "idle (host recording)");
  return ok_status();
}

Result<Fence> Recorder::submit() {
  if (!state_->failed.ok()) return state_->failed.error();
  if (!state_->pending) return make_error(ErrorKind::kInternal, "submit twice");
  Context::Impl& im = ctx_.impl();
  std::unique_ptr<Fence::State> st = std::move(state_->pending);
  if (!st->reads.empty()) {
    // The downloads' writes to host buffers made visible to the host's reads after the wait.
    VkMemoryBarrier mb{};
    mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    im.api.vkCmdPipelineBarrier(st->cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0,
                                nullptr, 0, nullptr);
    ++im.counters.barriers;
  }
  im.api.vkEndCommandBuffer(st->cb);
  VkFenceCreateInfo fi{};
  fi.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  VkResult r = im.api.vkCreateFence(im.device, &fi, nullptr, &st->fence);
  if (r != VK_SUCCESS) {
    st->waited = true;
    return vk_error("vkCreateFence", r);
  }
  VkSubmitInfo si{};
  si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &st->cb;
  if (st->queries != VK_NULL_HANDLE) {
    st->record_ns = ns_since(st->started);
    st->submitted = std::chrono::steady_clock::now();
  }
  r = im.api.vkQueueSubmit(im.queue, 1, &si, st->fence);
  ++im.counters.submits;
  if (r != VK_SUCCESS) {
    st->waited = true;
    return vk_error("vkQueueSubmit", r);
  }
  Fence f;
  f.state_ = std::move(st);
  return f;
}

Status Recorder::run() {
  auto f = submit();
  if (!f.ok()) return f.error();
  return f->wait();
}

#else  // !HEARTH_VULKAN

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
Status Recorder::upload(const Buffer&, size_t, const void*, size_t) {
  return make_error(ErrorKind::kUnsupported, "no Vulkan backend");
}
Status Recorder::download(const Buffer&, size_t, void*, size_t) {
  return make_error(ErrorKind::kUnsupported, "no Vulkan backend");
}
Status Recorder::copy(const Buffer&, const Buffer&, std::span<const CopyRegion>) {
  return make_error(ErrorKind::kUnsupported, "no Vulkan backend");
}
Result<Fence> Recorder::submit() { return make_error(ErrorKind::kUnsupported, "no Vulkan backend"); }
Status Recorder::flush() { return make_error(ErrorKind::kUnsupported, "no Vulkan backend"); }
Status Recorder::run() { return make_error(ErrorKind::kUnsupported, "no Vulkan backend"); }

#endif

}  // namespace hearth::device
