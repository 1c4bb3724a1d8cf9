// One table of the sampler/generation fields shared by the dialects (see generation_options.h).
#include "api/generation_options.h"

#include <cmath>
#include <cstdlib>
#include <limits>

namespace hearth::api {
namespace {

struct FloatField {
  const char* name;
  float protocol::SamplingOptions::*member;
};
struct IntField {
  const char* name;
  int32_t protocol::SamplingOptions::*member;
};

constexpr FloatField kFloatFields[] = {
    {"temperature", &protocol::SamplingOptions::temperature},
    {"top_p", &protocol::SamplingOptions::top_p},
    {"min_p", &protocol::SamplingOptions::min_p},
    {"typical_p", &protocol::SamplingOptions::typical_p},
    {"top_n_sigma", &protocol::SamplingOptions::top_n_sigma},
    {"repeat_penalty", &protocol::SamplingOptions::repeat_penalty},
    {"presence_penalty", &protocol::SamplingOptions::presence_penalty},
    {"frequency_penalty", &protocol::SamplingOptions::frequency_penalty},
    {"mirostat_tau", &protocol::SamplingOptions::mirostat_tau},
    {"mirostat_eta", &protocol::SamplingOptions::mirostat_eta},
    {"dynatemp_range", &protocol::SamplingOptions::dynatemp_range},
    {"dynatemp_exponent", &protocol::SamplingOptions::dynatemp_exponent},
    {"xtc_probability", &protocol::SamplingOptions::xtc_probability},
    {"xtc_threshold", &protocol::SamplingOptions::xtc_threshold},
    {"dry_multiplier", &protocol::SamplingOptions::dry_multiplier},
    {"dry_base", &protocol::SamplingOptions::dry_base},
};

constexpr IntField kIntFields[] = {
    {"top_k", &protocol::SamplingOptions::top_k},
    {"repeat_last_n", &protocol::SamplingOptions::repeat_last_n},
    {"mirostat", &protocol::SamplingOptions::mirostat},
    {"dry_allowed_length", &protocol::SamplingOptions::dry_allowed_length},
    {"dry_penalty_last_n", &protocol::SamplingOptions::dry_last_n},
    {"n_probs", &protocol::SamplingOptions::n_probs},
};

// Fields of ollama's runner options: valid in `options`, meaningless for one loaded model.
constexpr const char* kIgnoredOptions[] = {"num_batch", "num_gpu", "main_gpu", "num_thread", "numa",
                                           "use_mmap", "use_mlock", "low_vram", "f16_kv", "vocab_only",
                                           "logits_all", "embedding_only", "penalize_newline", "tfs_z"};

// The ranges each API documents for the shared fields where they differ (docs/decisions.md).
// temperature: OpenAI "between 0 and 2", Anthropic "ranges from 0.0 to 1.0", ollama and
// llama-server no upper bound; 0 is the lower bound everywhere. top_k: Anthropic documents
// x >= 0; llama-server (the OpenAI routes' extras) and ollama's runner read 0 or less as off.
struct DialectRanges {
  Dialect dialect;
  double temperature_max;
  int64_t top_k_min;
};
constexpr DialectRanges kDialectRanges[] = {
    {Dialect::kOllama, std::numeric_limits<double>::infinity(), std::numeric_limits<int32_t>::min()},
    {Dialect::kOpenAI, 2.0, std::numeric_limits<int32_t>::min()},
    {Dialect::kAnthropic, 1.0, 0},
};

Status check_dialect_ranges(const Json& obj, std::string_view where, Dialect dialect) {
  for (const auto& r : kDialectRanges) {
    if (r.dialect != dialect) continue;
    HEARTH_ASSIGN(auto temperature, read_number(obj, "temperature", where));
    if (temperature) HEARTH_TRY(check_number_range(std::string(where) + "temperature", *temperature, 0.0, r.temperature_max));
    HEARTH_ASSIGN(auto top_k, read_integer(obj, "top_k", where));
    if (top_k && *top_k < r.top_k_min) {
      HEARTH_TRY(check_range(std::string(where) + "top_k", *top_k, r.top_k_min, std::numeric_limits<int32_t>::max()));
    }
  }
  return ok_status();
}

Result<int32_t> to_int32(std::string_view where, std::string_view key, int64_t v) {
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
    std::string message(1, '\'');
    message.append(where).append(key).append("' is out of range");
    return make_error(ErrorKind::kInvalidArgument, std::move(message));
  }
  return static_cast<int32_t>(v);
}

// logit_bias as OpenAI ({"token id": bias}) or llama-server ([[id, bias], [id, false]]) sends it.
Status read_logit_bias(const Json& value, std::string_view where, protocol::SamplingOptions& p) {
  const std::string name = std::string(where) + "logit_bias";
  auto bias_of = [&](const Json& b) -> Result<float> {
    if (b.is_boolean()) {
      if (b.get<bool>()) return make_error(ErrorKind::kInvalidArgument, "'" + name + "' values must be numbers or false");
      return -std::numeric_limits<float>::infinity();
    }
    if (!b.is_number() || !std::isfinite(b.get<double>())) {
      return make_error(ErrorKind::kInvalidArgument, "'" + name + "' values must be numbers");
    }
    return static_cast<float>(b.get<double>());
  };
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      const std::string& key = it.key();
      char* end = nullptr;
      long long id = std::strtoll(key.c_str(), &end, 10);
      if (key.empty() || *end != '\0' || id < 0 || id > std::numeric_limits<int32_t>::max()) {
        return make_error(ErrorKind::kInvalidArgument, "'" + name + "' keys must be token ids, got '" + key + "'");
      }
      HEARTH_ASSIGN(float bias, bias_of(it.value()));
      p.logit_bias.emplace_back(static_cast<int32_t>(id), bias);
    }
    return ok_status();
  }
  if (value.is_array()) {
    for (const auto& pair : value) {
      if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_integer()) {
        return make_error(ErrorKind::kInvalidArgument, "'" + name + "' entries must be [token_id, bias] pairs");
      }
      int64_t id = pair[0].get<int64_t>();
      if (id < 0 || id > std::numeric_limits<int32_t>::max()) {
        return make_error(ErrorKind::kInvalidArgument, "'" + name + "' has a negative or huge token id");
      }
      HEARTH_ASSIGN(float bias, bias_of(pair[1]));
      p.logit_bias.emplace_back(static_cast<int32_t>(id), bias);
    }
    return ok_status();
  }
  return field_type_error(where, "logit_bias", "an object or an array", value);
}

Status read_sampler_order(const Json& value, std::string_view where, protocol::SamplingOptions& p) {
  std::vector<std::string> names;
  if (value.is_array()) {
    for (const auto& v : value) {
      if (!v.is_string()) return field_type_error(where, "samplers", "an array of sampler names", value);
      names.push_back(v.get<std::string>());
    }
  } else if (value.is_string()) {
    // llama-server's compact form: one letter per sampler is not supported; ';'-separated names are.
    std::string s = value.get<std::string>();
    size_t start = 0;
    while (start <= s.size()) {
      size_t end = s.find(';', start);
      if (end == std::string::npos) end = s.size();
      if (end > start) names.push_back(s.substr(start, end - start));
      start = end + 1;
    }
  } else {
    return field_type_error(where, "samplers", "an array of sampler names", value);
  }
  std::vector<protocol::SamplerKind> order;
  for (const auto& n : names) {
    auto kind = protocol::sampler_kind_from_name(n);
    if (!kind.ok()) {
      std::string message(1, '\'');
      message.append(where).append("samplers': ").append(kind.error().message);
      return make_error(ErrorKind::kInvalidArgument, std::move(message));
    }
    order.push_back(*kind);
  }
  p.order = std::move(order);
  return ok_status();
}

}  // namespace

protocol::SamplingOptions ollama_default_sampling() {
  protocol::SamplingOptions p;
  p.temperature = 0.8f;
  p.top_k = 40;
  p.top_p = 0.9f;
  p.min_p = 0.0f;
  p.repeat_penalty = 1.1f;
  p.repeat_last_n = 64;
  return p;
}

protocol::SamplingOptions llama_server_default_sampling() {
  protocol::SamplingOptions p;
  p.temperature = 0.8f;
  p.top_k = 40;
  p.top_p = 0.95f;
  p.min_p = 0.05f;
  p.repeat_penalty = 1.0f;
  p.repeat_last_n = 64;
  return p;
}

Status read_generation_options(const Json& obj, std::string_view where, CompletionJob& job) {
  protocol::SamplingOptions& p = job.request.sampling;
  for (const auto& f : kFloatFields) {
    HEARTH_ASSIGN(auto v, read_number(obj, f.name, where));
    if (v) p.*f.member = static_cast<float>(*v);
  }
  for (const auto& f : kIntFields) {
    HEARTH_ASSIGN(auto v, read_integer(obj, f.name, where));
    if (v) {
      HEARTH_ASSIGN(p.*f.member, to_int32(where, f.name, *v));
    }
  }
  HEARTH_TRY(check_dialect_ranges(obj, where, job.dialect));
  HEARTH_ASSIGN(auto num_ctx, read_integer(obj, "num_ctx", where));
  if (num_ctx) {
    HEARTH_TRY(check_range(std::string(where) + "num_ctx", *num_ctx, 1, kNumCtxMax));
    job.request.num_ctx = static_cast<int32_t>(*num_ctx);
  }
  HEARTH_ASSIGN(auto min_keep, read_integer(obj, "min_keep", where));
  if (min_keep) {
    HEARTH_TRY(check_range(std::string(where) + "min_keep", *min_keep, 0, 1 << 20));
    p.min_keep = static_cast<size_t>(*min_keep);
  }
  HEARTH_ASSIGN(auto seed, read_integer(obj, "seed", where));
  if (seed) p.seed = *seed < 0 ? 0xFFFFFFFFu : static_cast<uint64_t>(*seed);

  HEARTH_ASSIGN(auto stop, read_string_list(obj, "stop", where));
  if (stop) {
    job.request.stop.clear();
    for (auto& s : *stop) {
      if (!s.empty()) job.request.stop.push_back(std::move(s));
    }
  }
  for (const char* key : {"num_predict", "n_predict"}) {
    HEARTH_ASSIGN(auto v, read_integer(obj, key, where));
    if (v) {
      // ollama: -1 infinite, -2 fill the context; both mean "until the context is full" here.
      if (*v < -2) return make_error(ErrorKind::kInvalidArgument, "'" + std::string(where) + key + "' must be >= -2");
      HEARTH_ASSIGN(job.request.n_predict, to_int32(where, key, *v < 0 ? -1 : *v));
    }
  }
  for (const char* key : {"num_keep", "n_keep"}) {
    HEARTH_ASSIGN(auto v, read_integer(obj, key, where));
    if (v) {
      HEARTH_ASSIGN(job.request.n_keep, to_int32(where, key, *v < 0 ? 0 : *v));
    }
  }
  HEARTH_ASSIGN(auto ignore_eos, read_bool(obj, "ignore_eos", where));
  if (ignore_eos) job.request.ignore_eos = *ignore_eos;
  HEARTH_ASSIGN(auto cache_prompt, read_bool(obj, "cache_prompt", where));
  if (cache_prompt) job.request.cache_prompt = *cache_prompt;

  if (auto it = obj.find("logit_bias"); it != obj.end() && !it->is_null()) {
    p.logit_bias.clear();
    HEARTH_TRY(read_logit_bias(*it, where, p));
  }
  if (auto it = obj.find("samplers"); it != obj.end() && !it->is_null()) {
    HEARTH_TRY(read_sampler_order(*it, where, p));
  }
  HEARTH_ASSIGN(auto breakers, read_string_list(obj, "dry_sequence_breakers", where));
  if (breakers) job.request.dry_sequence_breakers = std::move(*breakers);

  for (const char* key : kIgnoredOptions) {
    auto it = obj.find(key);
    if (it != obj.end() && !(it->is_null() || it->is_number() || it->is_boolean())) {
      return field_type_error(where, key, "a number or a boolean", *it);
    }
  }
  return ok_status();
}

Status read_logprobs(const Json& body, CompletionJob& job) {
  HEARTH_ASSIGN(auto logprobs, read_bool(body, "logprobs"));
  job.request.logprobs = logprobs.value_or(false);
  HEARTH_ASSIGN(auto top_logprobs, read_integer(body, "top_logprobs"));
  if (top_logprobs) {
    HEARTH_TRY(check_range("top_logprobs", *top_logprobs, 0, 20));
    job.request.top_logprobs = static_cast<int32_t>(*top_logprobs);
    if (*top_logprobs > 0) job.request.logprobs = true;
  }
  return ok_status();
}

Status validate_completion_job(const CompletionJob& job) {
  const auto& r = job.request;
  if (r.n_predict < -1) return make_error(ErrorKind::kInvalidArgument, "the number of tokens to generate must be >= -1");
  if (r.top_logprobs < 0 || r.top_logprobs > 20) {
    return make_error(ErrorKind::kInvalidArgument, "'top_logprobs' must be between 0 and 20");
  }
  if (r.stop.size() > 64) return make_error(ErrorKind::kInvalidArgument, "at most 64 stop strings are allowed");
  for (const auto& s : r.stop) {
    if (s.size() > 1024) return make_error(ErrorKind::kInvalidArgument, "a stop string is longer than 1024 bytes");
  }
  if (job.request.n_choices < 1 || job.request.n_choices > 16) {
    return make_error(ErrorKind::kInvalidArgument, "'n' must be between 1 and 16");
  }
  if (job.request.prompts.empty() && !job.load_only) return make_error(ErrorKind::kInvalidArgument, "no prompt given");
  if (job.request.prompts.size() * static_cast<size_t>(job.request.n_choices) > 64) {
    return make_error(ErrorKind::kInvalidArgument, "too many prompts x choices in one request (at most 64)");
  }
  // Sampler ranges are checked where the sampler chain is built (the engine side).
  return ok_status();
}

}  // namespace hearth::api
