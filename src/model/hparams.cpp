// Reading hyper-parameters from GGUF metadata and each architecture's table of traits (see
// hparams.h): the one place that turns "which architecture" into fields the forward pass reads.
#include "model/hparams.h"

#include <cmath>

namespace hearth::model {
namespace {

// What each architecture fixes that its metadata does not say. Metadata-dependent quirks
// (gemma2's soft-caps and sliding window, bert's causality and pooling) are read in
// load_hparams below.
struct ArchTraits {
  Arch arch;
  const char* name;
  kernels::RopeStyle rope_style;
  ActivationKind ffn_activation;
  NormKind norm_kind;
  NormPlacement norm_placement;
  PositionEncoding position_encoding;
  ModelOutput output;
};
using AK = ActivationKind;
using NK = NormKind;
using NP = NormPlacement;
using PE = PositionEncoding;
using MO = ModelOutput;
using RS = kernels::RopeStyle;
// bert's rope_style is unused (learned positions).
constexpr ArchTraits kArchTraits[] = {
    {Arch::kLlama, "llama", RS::kNormal, AK::kSilu, NK::kRms, NP::kPre, PE::kRope, MO::kLogits},
    {Arch::kQwen2, "qwen2", RS::kNeox, AK::kSilu, NK::kRms, NP::kPre, PE::kRope, MO::kLogits},
    {Arch::kQwen3, "qwen3", RS::kNeox, AK::kSilu, NK::kRms, NP::kPre, PE::kRope, MO::kLogits},
    {Arch::kGemma2, "gemma2", RS::kNeox, AK::kGelu, NK::kRms, NP::kPre, PE::kRope, MO::kLogits},
    {Arch::kPhi3, "phi3", RS::kNeox, AK::kSilu, NK::kRms, NP::kPre, PE::kRope, MO::kLogits},
    {Arch::kBert, "bert", RS::kNeox, AK::kGelu, NK::kLayer, NP::kPost, PE::kLearned, MO::kHiddenStates},
    {Arch::kQwen3Moe, "qwen3moe", RS::kNeox, AK::kSilu, NK::kRms, NP::kPre, PE::kRope, MO::kLogits},
    {Arch::kGemma3, "gemma3", RS::kNeox, AK::kGelu, NK::kRms, NP::kPre, PE::kRope, MO::kLogits},
    {Arch::kGptOss, "gpt-oss", RS::kNeox, AK::kSwigluClamped, NK::kRms, NP::kPre, PE::kRope, MO::kLogits},
};

const ArchTraits& arch_traits(Arch arch) {
  for (const auto& a : kArchTraits) {
    if (a.arch == arch) return a;
  }
  return kArchTraits[0];  // unreachable: every Arch has a row
}

template <typename T>
Result<T> required(const gguf::File& f, const std::string& key) {
  auto r = f.get<T>(key);
  if (!r.ok()) return r.error().with_context("model metadata");
  return r;
}

// Layer il is sliding when il % period < period - 1 (period 0: every layer), the ecosystem's
// reading of a numeric pattern: 2 alternates starting with a sliding layer, 6 is five sliding
// layers then a global one.
std::vector<bool> periodic_sliding_layers(int32_t n_layer, int32_t period) {
  std::vector<bool> out(static_cast<size_t>(n_layer));
  for (int32_t il = 0; il < n_layer; ++il) out[static_cast<size_t>(il)] = period == 0 || il % period < period - 1;
  return out;
}

// <arch>.attention.sliding_window_pattern when present (a period as an integer, or one bool per
// layer), else the architecture's default period.
Result<std::vector<bool>> read_sliding_layers(const gguf::File& f, const std::string& p, int32_t n_layer,
                                              int32_t default_period) {
  const std::string key = p + "attention.sliding_window_pattern";
  const gguf::Value* v = f.find(key);
  if (v == nullptr) return periodic_sliding_layers(n_layer, default_period);
  if (v->array() != nullptr) {
    auto flags = f.get_array<bool>(key);
    if (!flags.ok() || static_cast<int32_t>(flags->size()) != n_layer) {
      return make_error(ErrorKind::kUnsupported, "model metadata: '" + key + "' must be one bool per layer (" +
                                                     std::to_string(n_layer) + ") or a period");
    }
    return std::vector<bool>(flags->begin(), flags->end());
  }
  auto period = f.get<int32_t>(key);
  if (!period.ok() || *period < 0 || *period > n_layer + 1) {
    return make_error(ErrorKind::kUnsupported, "model metadata: unknown sliding-window pattern in '" + key +
                                                   "' (expected a period from 0 to the layer count, or a bool per layer)");
  }
  return periodic_sliding_layers(n_layer, *period);
}

// The mixture-of-experts keys (<arch>.expert_*), with the architecture's gating as default.
Status read_moe(const gguf::File& f, const std::string& p, ModelHparams& h, ExpertGating gating, bool norm_weights) {
  MoeHparams& m = h.moe;
  HEARTH_ASSIGN(m.n_expert, required<int32_t>(f, p + "expert_count"));
  HEARTH_ASSIGN(m.n_expert_used, required<int32_t>(f, p + "expert_used_count"));
  if (m.n_expert <= 0 || m.n_expert > 4096) {
    return make_error(ErrorKind::kCorrupt, "model metadata: '" + p + "expert_count' must be from 1 to 4096");
  }
  if (m.n_expert_used <= 0 || m.n_expert_used > m.n_expert) {
    return make_error(ErrorKind::kCorrupt, "model metadata: '" + p + "expert_used_count' (" +
                                               std::to_string(m.n_expert_used) + ") must be from 1 to expert_count (" +
                                               std::to_string(m.n_expert) + ")");
  }
  m.n_ff_expert = f.get_or<int32_t>(p + "expert_feed_forward_length", h.n_ff);
  if (m.n_ff_expert <= 0) return make_error(ErrorKind::kCorrupt, "model metadata: '" + p + "expert_feed_forward_length' must be positive");
  const int32_t n_shared = f.get_or<int32_t>(p + "expert_shared_count", 0);
  m.n_ff_shared = n_shared > 0 ? n_shared * f.get_or<int32_t>(p + "expert_shared_feed_forward_length", m.n_ff_expert) : 0;
  if (n_shared < 0 || m.n_ff_shared < 0) return make_error(ErrorKind::kCorrupt, "model metadata: bad shared expert size");
  m.gating = gating;
  // expert_gating_func: 1 softmax, 2 sigmoid (the ecosystem's numbering).
  const uint32_t func = f.get_or<uint32_t>(p + "expert_gating_func", 0);
  if (func == 1 && gating != ExpertGating::kSoftmaxOfTopK) m.gating = ExpertGating::kSoftmax;
  if (func == 2) m.gating = ExpertGating::kSigmoid;
  if (func > 2) return make_error(ErrorKind::kUnsupported, "model metadata: unknown '" + p + "expert_gating_func' " + std::to_string(func));
  m.norm_weights = f.get_or<bool>(p + "expert_weights_norm", norm_weights);
  m.weights_scale = f.get_or<float>(p + "expert_weights_scale", 1.0f);
  if (!std::isfinite(m.weights_scale) || m.weights_scale <= 0.0f) m.weights_scale = 1.0f;
  return ok_status();
}

}  // namespace

Result<Arch> arch_from_name(const std::string& name) {
  for (const auto& a : kArchTraits) {
    if (name == a.name) return a.arch;
  }
  std::string known;
  for (const auto& a : kArchTraits) known += std::string(known.empty() ? "" : ", ") + a.name;
  return make_error(ErrorKind::kUnsupported,
                    "architecture '" + name + "' is not supported (supported: " + known + ")");
}

const char* arch_name(Arch arch) {
  for (const auto& a : kArchTraits) {
    if (a.arch == arch) return a.name;
  }
  return "?";
}

Result<ModelHparams> load_hparams(const gguf::File& f, int32_t n_vocab) {
  ModelHparams h;
  HEARTH_ASSIGN(h.arch_name, required<std::string>(f, "general.architecture"));
  HEARTH_ASSIGN(h.arch, arch_from_name(h.arch_name));
  const ArchTraits& traits = arch_traits(h.arch);
  h.ffn_activation = traits.ffn_activation;
  h.norm_kind = traits.norm_kind;
  h.norm_placement = traits.norm_placement;
  h.position_encoding = traits.position_encoding;
  h.output = traits.output;
  const std::string p = h.arch_name + ".";
  h.n_vocab = n_vocab;
  HEARTH_ASSIGN(h.n_embd, required<int32_t>(f, p + "embedding_length"));
  HEARTH_ASSIGN(h.n_layer, required<int32_t>(f, p + "block_count"));
  HEARTH_ASSIGN(h.n_head, required<int32_t>(f, p + "attention.head_count"));
  h.n_head_kv = f.get_or<int32_t>(p + "attention.head_count_kv", h.n_head);
  HEARTH_ASSIGN(h.n_ff, required<int32_t>(f, p + "feed_forward_length"));
  h.n_ctx_train = f.get_or<int32_t>(p + "context_length", 2048);
  if (h.n_embd <= 0 || h.n_layer <= 0 || h.n_head <= 0 || h.n_head_kv <= 0 || h.n_ff <= 0 || h.n_ctx_train <= 0) {
    return make_error(ErrorKind::kCorrupt, "model metadata: sizes must be positive");
  }
  if (h.n_layer > 4096 || h.n_head > 4096 || h.n_embd > (1 << 20)) {
    return make_error(ErrorKind::kCorrupt, "model metadata: implausible sizes");
  }
  if (h.n_head % h.n_head_kv != 0) {
    return make_error(ErrorKind::kCorrupt, "model metadata: head_count " + std::to_string(h.n_head) +
                                               " is not a multiple of head_count_kv " + std::to_string(h.n_head_kv));
  }
  const int32_t default_head_dim = h.n_embd / h.n_head;
  h.head_dim_k = f.get_or<int32_t>(p + "attention.key_length", default_head_dim);
  h.head_dim_v = f.get_or<int32_t>(p + "attention.value_length", default_head_dim);
  if (h.head_dim_k <= 0 || h.head_dim_v <= 0 || h.head_dim_k > 4096 || h.head_dim_v > 4096) {
    return make_error(ErrorKind::kCorrupt, "model metadata: bad attention key/value length");
  }

  if (h.norm_kind == NormKind::kLayer) {
    HEARTH_ASSIGN(h.norm_eps, required<float>(f, p + "attention.layer_norm_epsilon"));
  } else {
    HEARTH_ASSIGN(h.norm_eps, required<float>(f, p + "attention.layer_norm_rms_epsilon"));
  }
  // Learned position embeddings have one row per trained position; RoPE has no limit.
  if (h.position_encoding == PositionEncoding::kLearned) h.n_pos_max = h.n_ctx_train;

  // RoPE.
  h.rope.rope_dims = f.get_or<int32_t>(p + "rope.dimension_count", h.head_dim_k);
  h.rope.freq_base = f.get_or<float>(p + "rope.freq_base", 10000.0f);
  h.rope.style = traits.rope_style;
  if (h.rope.rope_dims <= 0 || h.rope.rope_dims > h.head_dim_k || h.rope.rope_dims % 2 != 0) {
    return make_error(ErrorKind::kCorrupt, "model metadata: rope.dimension_count must be even and at most the head size");
  }
  // Without rope.scaling.type, a scaling factor means linear scaling; an explicit "none"
  // ignores it. "longrope" (phi3) scales like linear when a factor is given; its per-dimension
  // factors are tensors (see Model::rope_params).
  const bool scaling_given = f.has(p + "rope.scaling.type");
  const std::string scaling = f.get_or<std::string>(p + "rope.scaling.type", "none");
  // rope.scale_linear is the older name of rope.scaling.factor, read only when that is absent.
  const float factor = f.has(p + "rope.scaling.factor") ? f.get_or<float>(p + "rope.scaling.factor", 0.0f)
                                                        : f.get_or<float>(p + "rope.scale_linear", 0.0f);
  if (!std::isfinite(factor) || factor < 0.0f) {
    return make_error(ErrorKind::kCorrupt, "model metadata: rope scaling factor must be a positive number");
  }
  if (scaling == "linear" || scaling == "longrope" || (!scaling_given && factor > 0.0f)) {
    if (factor > 0.0f) h.rope.freq_scale = 1.0f / factor;
  } else if (scaling == "yarn") {
    if (factor <= 0.0f) return make_error(ErrorKind::kCorrupt, "model metadata: yarn scaling needs rope.scaling.factor");
    h.rope.freq_scale = 1.0f / factor;
    h.rope.ext_factor = 1.0f;
    h.rope.beta_fast = f.get_or<float>(p + "rope.scaling.yarn_beta_fast", 32.0f);
    h.rope.beta_slow = f.get_or<float>(p + "rope.scaling.yarn_beta_slow", 1.0f);
  } else if (scaling != "none") {
    return make_error(ErrorKind::kUnsupported, "rope scaling type '" + scaling + "' is not supported");
  }
  // The context the model was trained with before any extension (YaRN's correction dimensions,
  // LongRoPE's choice of factors), and the factor every rotated value is multiplied by (written
  // by converters for LongRoPE and YaRN models); both apply whatever the scaling type.
  h.rope.n_ctx_orig = f.get_or<int32_t>(p + "rope.scaling.original_context_length", h.n_ctx_train);
  if (h.rope.n_ctx_orig <= 0) h.rope.n_ctx_orig = h.n_ctx_train;
  h.rope.attn_factor = f.get_or<float>(p + "rope.scaling.attn_factor", 1.0f);
  if (!std::isfinite(h.rope.attn_factor) || h.rope.attn_factor <= 0.0f) {
    return make_error(ErrorKind::kCorrupt, "model metadata: rope.scaling.attn_factor must be a positive number");
  }

  switch (h.arch) {
    case Arch::kGemma2: {
      h.attn_softcap = f.get_or<float>(p + "attn_logit_softcapping", 50.0f);
      h.final_softcap = f.get_or<float>(p + "final_logit_softcapping", 30.0f);
      h.sliding_window = f.get_or<int32_t>(p + "attention.sliding_window", 4096);
      HEARTH_ASSIGN(h.sliding_layers, read_sliding_layers(f, p, h.n_layer, 2));
      h.embed_scale = std::sqrt(static_cast<float>(h.n_embd));
      // Gemma 2 27B (46 layers) scales queries by 1/sqrt(n_embd / n_head) (its
      // query_pre_attn_scalar, 144) instead of 1/sqrt(head_dim = 128), as the ecosystem does.
      if (h.n_layer == 46) h.attn_scale = 1.0f / std::sqrt(static_cast<float>(h.n_embd / h.n_head));
      break;
    }
    case Arch::kGemma3: {
      // Local layers rotate with their own base and no scaling; the global ones use rope.*.
      h.sliding_window = f.get_or<int32_t>(p + "attention.sliding_window", 1024);
      HEARTH_ASSIGN(h.sliding_layers, read_sliding_layers(f, p, h.n_layer, 6));
      h.swa_rope_differs = true;
      h.rope_swa = h.rope;
      h.rope_swa.freq_base = f.get_or<float>(p + "rope.freq_base_swa", 10000.0f);
      h.rope_swa.freq_scale = 1.0f;
      h.rope_swa.ext_factor = 0.0f;
      h.attn_softcap = f.get_or<float>(p + "attn_logit_softcapping", 0.0f);
      h.final_softcap = f.get_or<float>(p + "final_logit_softcapping", 0.0f);
      h.embed_scale = std::sqrt(static_cast<float>(h.n_embd));
      // Gemma 3 27B (62 layers) scales queries by 1/sqrt(n_embd / n_head), like Gemma 2 27B.
      if (h.n_layer == 62) h.attn_scale = 1.0f / std::sqrt(static_cast<float>(h.n_embd / h.n_head));
      break;
    }
    case Arch::kQwen3Moe: {
      HEARTH_TRY(read_moe(f, p, h, ExpertGating::kSoftmax, /*norm_weights=*/true));
      break;
    }
    case Arch::kGptOss: {
      HEARTH_TRY(read_moe(f, p, h, ExpertGating::kSoftmaxOfTopK, /*norm_weights=*/false));
      h.sliding_window = f.get_or<int32_t>(p + "attention.sliding_window", 128);
      HEARTH_ASSIGN(h.sliding_layers, read_sliding_layers(f, p, h.n_layer, 2));
      break;
    }
    case Arch::kBert: {
      h.causal = f.get_or<bool>(p + "attention.causal", false);
      h.pooling = static_cast<PoolingType>(f.get_or<uint32_t>(p + "pooling_type", 1));
      if (static_cast<uint32_t>(h.pooling) > 3) return make_error(ErrorKind::kUnsupported, "unknown bert pooling type");
      break;
    }
    default:
      break;
  }
  if (h.sliding_window < 0) return make_error(ErrorKind::kCorrupt, "model metadata: '" + p + "attention.sliding_window' is negative");
  return h;
}

}  // namespace hearth::model
