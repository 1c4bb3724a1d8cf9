// Layer offload to a compute device: the weights of the first N layers (and their KV) live in
// device memory and those layers run there; the rest of the model stays on the CPU path. N is
// what fits (automatic) or what the caller asks (-ngl / num_gpu), lowered when the device runs
// out of memory while the layers go up. As in llama.cpp, the output layer (final norm and
// output matrix) counts as layer n_layer: asking for more than n_layer layers puts it on the
// device too, and the automatic fit takes it when every layer and it fit. KV rows of offloaded layers live in a DeviceKvPool,
// elastic device chunks mirroring the CPU pool's, addressed by the same block ids as the CPU
// cache's block tables, so the CPU KvCache stays the one bookkeeper of sequences, prefixes and
// blocks.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "device/device.h"
#include "kernels/vulkan/vulkan_ops.h"
#include "model/device_kv.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "util/result.h"

namespace hearth::model {

struct BatchToken;

// Why the model's layers cannot run on a device (empty: they can). The device has the llama
// family's pre-norm layer: RMSNorm; Q/K/V separate or fused (phi3), with qwen2's biases and
// qwen3's per-head QK norms; an attention output bias; gemma2's post-attention and post-FFN
// norms and attention softcap; RoPE with YaRN and frequency factors; a gated SiLU/GELU FFN,
// gate and up separate or fused (phi3); an F16 KV cache. The device needs buffer addresses
// (the paged KV's chunks).
std::string device_unsupported_reason(const Model& model, const kernels::RopeParams& rope, DType kv_type);

class DeviceOffload {
 public:
  // n_layers: -1 for automatic (as many as fit in the device's free memory, then the output
  // layer if it fits too), else at most that many (n_layer + 1 or more: every layer and the
  // output layer). kv_pool: the CPU cache's pool, with no block in
  // use; the device KV attaches to it as its mirror (detached when the offload goes). The
  // automatic fit leaves room for the whole pool's device KV, which is allocated only as the
  // pool hands out blocks.
  static Result<std::unique_ptr<DeviceOffload>> create(const Model& model, device::Context& ctx, int32_t n_layers,
                                                       kv::KvBlockPool& kv_pool, const kernels::RopeParams& rope);
  // The same before the cache exists: for a pool of kv_blocks blocks of `layout` (its
  // offloaded_layers ignored), with no device KV until attach_kv. The caller then makes the
  // cache with layout.offloaded_layers = n_layers() and attaches it: one cache, not two.
  static Result<std::unique_ptr<DeviceOffload>> create_unattached(const Model& model, device::Context& ctx,
                                                                  int32_t n_layers, const kv::KvLayout& layout,
                                                                  int32_t kv_blocks, const kernels::RopeParams& rope);
  // Moves the device KV to another pool of the same blocks, with no block in use: the cache
  // rebuilt with layout().offloaded_layers == n_layers(), whose CPU rows leave the offloaded
  // layers out. The old pool is detached first; it may then go.
  Status attach_kv(kv::KvBlockPool& kv_pool);
  ~DeviceOffload();
  DeviceOffload(const DeviceOffload&) = delete;
  DeviceOffload& operator=(const DeviceOffload&) = delete;

  int32_t n_layers() const { return static_cast<int32_t>(layers_.size()); }
  // Whether the output layer (final norm, output matrix) is on the device; only with every layer.
  bool has_output() const { return output_.valid(); }
  // Device memory held (weights, KV pools, scratch): the figure for size_vram.
  uint64_t device_bytes() const { return ctx_.allocated_bytes(); }
  device::Context& context() { return ctx_; }
  // The kernels the layers run with (tests tune them: VulkanOps::set_attention_split).
  kernels::vulkan::VulkanOps& ops() { return ops_; }

  // Tokens of a prompt to send through the device layers at once, given the sequence length
  // n_kv it reaches and the CPU path's micro-batch: up to 512, so that the tiled matmul
  // decodes each weight for more tokens and a 2048-row matrix spreads over enough workgroups
  // (16 per 128 tokens leaves most of a large GPU idle), but no more than keeps the
  // attention's score scratch (tokens x heads x n_kv floats) within 256 MiB; never fewer than
  // cpu_tokens.
  int64_t micro_batch_tokens(int64_t n_kv, int64_t cpu_tokens) const;

  // Runs layers [0, n_layers()) over the batch: x holds batch.size() rows of n_embd floats
  // (the embeddings) and gets the hidden states after the last offloaded layer. K/V rows of
  // the batch go into the device pools at the positions kv's block tables give. With
  // `logits` (needs has_output()), the output layer runs too, over the batch's output rows,
  // whose logits go there (n_vocab floats a row, before any final softcap) instead of the
  // hidden states to x. One submission and one wait either way.
  Status run(std::span<const BatchToken> batch, const kv::KvCache& kv, float* x, float* logits = nullptr);
  // The output layer over n_rows final hidden states (n_embd floats each, as run() left them):
  // n_rows rows of n_vocab logits into out (before any final softcap). Needs has_output().
  Status logits(const float* rows, int64_t n_rows, float* out);

 private:
  static constexpr size_t kLayersPerSubmit = 4;  // layers per submission of a step (run())

  struct Layer {
    device::Buffer attn_norm, ffn_norm;
    device::Buffer bq, bk, bv, q_norm, k_norm;  // absent (invalid) when the model has none
    device::Buffer bo, post_attn_norm, post_ffw_norm;
    kernels::vulkan::DeviceWeight wq, wk, wv, wo, gate, up, down;
    // Q, K and V (gate and up) stored together where they share a type: one matrix x vector
    // fills all of them in a decode step (invalid: stored apart).
    kernels::vulkan::DeviceWeight qkv, gate_up;
  };
  struct Scratch {
    device::Buffer x, xn, q, k, v, attn, tmp, gate, up, positions, tables, scores;
    device::Buffer partials;  // a split attention's per-range results (grown as sequences grow)
    int64_t tokens = 0, table_entries = 0, score_floats = 0;
  };

  DeviceOffload(const Model& model, device::Context& ctx, const kv::KvLayout& layout, const kernels::RopeParams& rope)
      : model_(model),
        ctx_(ctx),
        ops_(ctx),
        layout_(layout),
        rope_(rope),
        rope_swa_(model.hparams().swa_rope_differs ? model.hparams().rope_swa : rope) {}
  Result<Layer> upload_layer(int32_t il);
  void release_file_rows(const kernels::WeightView& w) const;
  // Uploads parts into one buffer (*together, dst their row ranges) when they share a type and
  // width, else each on its own (together stays invalid).
  Status upload_group(std::span<const kernels::WeightView> parts,
                      std::initializer_list<kernels::vulkan::DeviceWeight*> dst, kernels::vulkan::DeviceWeight* together);
  Status upload_output();
  Status ensure_output_scratch(int64_t n_rows);
  // The output layer over the first n_rows rows of out_x_, logits downloaded to out.
  Status record_output(device::Recorder& rec, uint32_t n_rows, float* out);
  Status ensure_scratch(int64_t tokens, int64_t table_entries, int64_t score_floats);
  // Whether a one-token step runs L with its norms inside the Q/K/V and gate/up matrix x
  // vector dispatches (one for each group stored together, else one per matrix) and its
  // output and down projections adding into the residual stream: every matrix on the matvec
  // kernel, no output bias and no post-norms (gemma's layers take the separate dispatches).
  bool fuses_decode_step(const Layer& L) const;

  const Model& model_;
  device::Context& ctx_;
  kernels::vulkan::VulkanOps ops_;
  kv::KvLayout layout_;
  kernels::RopeParams rope_;
  kernels::RopeParams rope_swa_;  // the sliding-window layers' RoPE (gemma3's own base), as the CPU's
  std::vector<Layer> layers_;
  device::Buffer rope_freqs_;  // the RoPE frequency factors, when the model has them
  device::Buffer output_norm_;
  kernels::vulkan::DeviceWeight output_;
  device::Buffer out_x_, out_xn_, out_logits_;  // logits() scratch, for out_rows_ rows
  int64_t out_rows_ = 0;
  std::unique_ptr<DeviceKvPool> kv_;
  kv::KvBlockPool* attached_ = nullptr;  // the pool kv_ mirrors
  Scratch s_;
};

}  // namespace hearth::model
