// Shared model/sampling flags (see sampling_flags.h).
#include "app/sampling_flags.h"

namespace hearth::app {
namespace {
constexpr double kInt32Max = SettingRange::kInt32Max;
}  // namespace

std::vector<SettingSpec> model_run_settings() {
  const std::vector<std::string> kv_types = {"f16", "bf16", "f32", "q8_0", "q4_0"};
  const std::string no_gpu = "Hearth runs a model on one GPU (HEARTH_GPU picks it); splitting over several is not supported";
  return {
      {"model", 'm', SettingType::kString, "", "GGUF model file", "HEARTH_MODEL"},
      {"ctx_size", 'c', SettingType::kInt, "0", "context size in tokens (0: the model's, at most 4096)", "HEARTH_CTX_SIZE",
       SettingRange::between(0, kInt32Max)},
      {"threads", 't', SettingType::kInt, "0", "threads (0: physical cores)", "HEARTH_THREADS", thread_count_range()},
      SettingSpec{"kv_type", 0, SettingType::kString, "f16", "KV cache type of K and V", "HEARTH_KV_TYPE"}
          .with_choices(kv_types)
          .with_env_fallback("OLLAMA_KV_CACHE_TYPE"),
      // llama-server's spellings; Hearth keeps K and V in one type, so the two must agree.
      SettingSpec{"cache_type_k", 0, SettingType::kString, "", "KV cache type of K (as --kv-type; -ctk and -ctv must agree)", ""}
          .with_aliases({"-ctk"})
          .with_choices(kv_types),
      SettingSpec{"cache_type_v", 0, SettingType::kString, "", "KV cache type of V (as --kv-type; -ctk and -ctv must agree)", ""}
          .with_aliases({"-ctv"})
          .with_choices(kv_types),
      // llama-server's values: a count, auto (-1: as many as fit) or all.
      SettingSpec{"n_gpu_layers", 0, SettingType::kInt, "auto",
                  "layers to put on the GPU (Vulkan): a count, auto (as many as fit) or all; HEARTH_GPU=none|INDEX|NAME "
                  "picks the device",
                  "", SettingRange::at_least(-1)}
          .with_aliases({"-ngl", "--gpu-layers"})
          .with_choices({"auto", "all"}),
      SettingSpec{"flash_attn", 0, SettingType::kString, "auto",
                  "on, off or auto (alone: on): accepted and ignored (Hearth's CPU attention has no separate flash kernel)",
                  ""}
          .with_aliases({"-fa"})
          .with_choices({"on", "off", "auto"})
          .with_implicit_value("on"),
      unsupported_setting("lora", {"--lora-scaled"}, "LoRA adapters are not supported; merge the adapter into the GGUF"),
      unsupported_setting("mmproj", {"-mm", "--mmproj-url"}, "multimodal projectors (images) are not supported"),
      unsupported_setting("model_draft", {"-md"}, "speculative decoding with a draft model is not supported"),
      unsupported_setting("hf_repo", {"-hf"}, "Hearth does not download models; pass a local file with -m FILE.gguf"),
      unsupported_setting("split_mode", {"-sm"}, no_gpu),
      unsupported_setting("tensor_split", {"-ts"}, no_gpu),
      unsupported_setting("main_gpu", {"-mg"}, no_gpu),
  };
}

std::vector<SettingSpec> sampling_settings() {
  return {
      {"temp", 0, SettingType::kFloat, "0.8", "temperature (0: greedy)", "", SettingRange::at_least(0)},
      {"top_k", 0, SettingType::kInt, "40", "top-k (0: off)", "", SettingRange::between(0, kInt32Max)},
      {"top_p", 0, SettingType::kFloat, "0.9", "top-p (1: off)", "", SettingRange::between(0, 1)},
      {"min_p", 0, SettingType::kFloat, "0.0", "min-p (0: off)", "", SettingRange::between(0, 1)},
      {"typical_p", 0, SettingType::kFloat, "1.0", "locally typical sampling (1: off)", "", SettingRange::between(0, 1)},
      {"repeat_penalty", 0, SettingType::kFloat, "1.0", "repeat penalty (1: off)", "", SettingRange::above(0)},
      {"repeat_last_n", 0, SettingType::kInt, "64", "tokens the penalties look back over (0: off, -1: all)", "",
       SettingRange::between(-1, kInt32Max)},
      // Any finite value, as the HTTP APIs accept (OpenAI documents -2 to 2 but does not refuse more).
      {"presence_penalty", 0, SettingType::kFloat, "0.0", "presence penalty (0: off)", ""},
      {"frequency_penalty", 0, SettingType::kFloat, "0.0", "frequency penalty (0: off)", ""},
      {"mirostat", 0, SettingType::kInt, "0", "mirostat version (0: off, 1, 2)", "", SettingRange::between(0, 2)},
      {"seed", 's', SettingType::kInt, "-1", "random seed (-1: random)", "", SettingRange::at_least(-1)},
  };
}

Result<engine::ContextOptions> context_options_from(const Settings& s) {
  engine::ContextOptions o;
  o.n_ctx = static_cast<int32_t>(s.get_int("ctx_size"));
  o.n_threads = static_cast<int32_t>(s.get_int("threads"));
  // The table allows only f16, bf16, f32, q8_0 and q4_0 in each of the three.
  std::string name = s.get_string("kv_type");
  const std::string k = s.get_string("cache_type_k");
  const std::string v = s.get_string("cache_type_v");
  if (!k.empty() && !v.empty() && k != v) {
    return make_error(ErrorKind::kInvalidArgument, "-ctk " + k + " and -ctv " + v +
                                                       " differ; Hearth keeps K and V in one type (--kv-type)");
  }
  if (!k.empty() || !v.empty()) name = k.empty() ? v : k;
  auto type = dtype_from_name(name);
  if (!type) return make_error(ErrorKind::kInvalidArgument, "KV cache type must be f16, bf16, f32, q8_0 or q4_0, not '" + name + "'");
  o.kv_type = *type;
  const std::string ngl = s.get_string("n_gpu_layers");
  if (ngl == "auto") {
    o.gpu_layers = -1;
  } else if (ngl == "all") {
    o.gpu_layers = engine::ContextOptions::kAllGpuLayers;
  } else {
    o.gpu_layers = static_cast<int32_t>(s.get_int("n_gpu_layers"));
  }
  return o;
}

Result<sampler::SamplerParams> sampler_params_from(const Settings& s) {
  sampler::SamplerParams p;
  p.temperature = static_cast<float>(s.get_float("temp"));
  p.top_k = static_cast<int32_t>(s.get_int("top_k"));
  p.top_p = static_cast<float>(s.get_float("top_p"));
  p.min_p = static_cast<float>(s.get_float("min_p"));
  p.typical_p = static_cast<float>(s.get_float("typical_p"));
  p.repeat_penalty = static_cast<float>(s.get_float("repeat_penalty"));
  p.repeat_last_n = static_cast<int32_t>(s.get_int("repeat_last_n"));
  p.presence_penalty = static_cast<float>(s.get_float("presence_penalty"));
  p.frequency_penalty = static_cast<float>(s.get_float("frequency_penalty"));
  p.mirostat = static_cast<int32_t>(s.get_int("mirostat"));
  int64_t seed = s.get_int("seed");
  p.seed = seed < 0 ? 0xFFFFFFFFu : static_cast<uint64_t>(seed);
  HEARTH_TRY(sampler::validate_sampler_params(p));
  return p;
}

}  // namespace hearth::app
