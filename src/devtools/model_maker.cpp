// Builds the metadata and tensor list of a synthetic model and streams its random, quantized
// weights to disk (see model_maker.h).
#include "devtools/model_maker.h"

#include <cmath>
#include <vector>

#include "devtools/model_shapes.h"
#include "gguf/quant_mix.h"
#include "devtools/synthetic_vocab.h"
#include "gguf/gguf_writer.h"
#include "tensor/quantize.h"
#include "util/thread_pool.h"

namespace hearth::devtools {
using gguf::FileType;
using gguf::TensorRole;
using gguf::file_type_from_name;
using gguf::file_type_gguf_id;
using gguf::file_type_quantized;
using gguf::tensor_type_for;

namespace {

// How a tensor's values are drawn: mean + std * (a triangular variate of unit variance), or
// fixed values (rope_freqs).
struct TensorPlan {
  TensorRole role;
  DType type = DType::kF32;
  float mean = 0.0f;
  float std = 0.0f;
  std::vector<float> fixed;  // non-empty: these values instead of random ones
  std::vector<int64_t> dims; // non-empty: the tensor's dimensions (3-D experts, 2-D biases)
};

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// One row of random values; the stream depends only on (seed, tensor, row).
void fill_random_row(float* out, int64_t n, uint64_t seed, size_t tensor, int64_t row, float mean, float std) {
  uint64_t state = seed ^ (static_cast<uint64_t>(tensor) << 40) ^ static_cast<uint64_t>(row) * 0xD1B54A32D192ED03ull;
  // The sum of two uniforms on [0,1) minus 1 has variance 1/6.
  const float a = std * std::sqrt(6.0f);
  constexpr float kInv32 = 1.0f / 4294967296.0f;
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t r = splitmix64(state);
    const float u = static_cast<float>(static_cast<uint32_t>(r)) * kInv32;
    const float v = static_cast<float>(static_cast<uint32_t>(r >> 32)) * kInv32;
    out[i] = mean + a * (u + v - 1.0f);
  }
}

// Llama 3.1+ RoPE frequency divisors (factor 32, low/high frequency factors 1 and 4, original
// context 8192), one per rotated pair.
std::vector<float> llama3_rope_factors(const ModelShape& s) {
  const double factor = 32.0, low_freq_factor = 1.0, high_freq_factor = 4.0, original_ctx = 8192.0;
  const double low_freq_wavelen = original_ctx / low_freq_factor;
  const double high_freq_wavelen = original_ctx / high_freq_factor;
  std::vector<float> out;
  for (int32_t i = 0; i < s.head_dim / 2; ++i) {
    const double freq = 1.0 / std::pow(static_cast<double>(s.rope_freq_base), 2.0 * i / s.head_dim);
    const double wavelen = 2.0 * M_PI / freq;
    double f = 1.0;
    if (wavelen > low_freq_wavelen) {
      f = factor;
    } else if (wavelen >= high_freq_wavelen) {
      const double smooth = (original_ctx / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      f = 1.0 / ((1.0 - smooth) / factor + smooth);
    }
    out.push_back(static_cast<float>(f));
  }
  return out;
}

std::vector<TensorPlan> plan_tensors(const ModelShape& s, FileType ftype) {
  std::vector<TensorPlan> plans;
  auto add = [&](std::string name, int64_t cols, int64_t rows, bool matrix, int32_t layer, float mean, float std) {
    TensorPlan p;
    p.role.name = std::move(name);
    p.role.cols = cols;
    p.role.rows = rows;
    p.role.is_matrix = matrix;
    p.role.layer = layer;
    p.role.n_layer = s.n_layer;
    p.role.n_gqa = s.n_head_kv > 0 ? s.n_head / s.n_head_kv : 0;
    // A tied shape's output is its token embedding, as in the real models.
    p.role.is_output = p.role.name == (s.tied_output ? "token_embd.weight" : "output.weight");
    p.mean = mean;
    p.std = std;
    p.type = tensor_type_for(ftype, p.role);
    plans.push_back(std::move(p));
  };
  // n_expert stacked matrices of rows x cols (or, for vectors, n_expert vectors of cols).
  auto add_experts = [&](std::string name, int64_t cols, int64_t rows, bool matrix, int32_t layer, float std) {
    add(std::move(name), cols, matrix ? rows * s.n_expert : s.n_expert, matrix, layer, 0.0f, std);
    TensorPlan& p = plans.back();
    p.dims = matrix ? std::vector<int64_t>{cols, rows, s.n_expert} : std::vector<int64_t>{cols, s.n_expert};
    if (matrix && s.experts_mxfp4) p.type = DType::kMXFP4;
  };
  const int64_t d = s.n_embd;
  const int64_t q_dim = static_cast<int64_t>(s.n_head) * s.head_dim;
  const int64_t kv_dim = static_cast<int64_t>(s.n_head_kv) * s.head_dim;
  const float in_std = 1.0f / std::sqrt(static_cast<float>(d));
  if (s.llama3_rope) {
    add("rope_freqs.weight", s.head_dim / 2, 1, false, -1, 0.0f, 0.0f);
    plans.back().fixed = llama3_rope_factors(s);
  }
  add("token_embd.weight", d, s.n_vocab, true, -1, 0.0f, 0.02f);
  for (int32_t il = 0; il < s.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    add(p + "attn_norm.weight", d, 1, false, il, 1.0f, 0.05f);
    add(p + "attn_q.weight", d, q_dim, true, il, 0.0f, in_std);
    add(p + "attn_k.weight", d, kv_dim, true, il, 0.0f, in_std);
    add(p + "attn_v.weight", d, kv_dim, true, il, 0.0f, in_std);
    if (s.qkv_bias || s.gpt_oss) {
      add(p + "attn_q.bias", q_dim, 1, false, il, 0.0f, 0.02f);
      add(p + "attn_k.bias", kv_dim, 1, false, il, 0.0f, 0.02f);
      add(p + "attn_v.bias", kv_dim, 1, false, il, 0.0f, 0.02f);
    }
    if (s.qk_norm) {
      add(p + "attn_q_norm.weight", s.head_dim, 1, false, il, 1.0f, 0.05f);
      add(p + "attn_k_norm.weight", s.head_dim, 1, false, il, 1.0f, 0.05f);
    }
    add(p + "attn_output.weight", q_dim, d, true, il, 0.0f, 1.0f / std::sqrt(static_cast<float>(q_dim)));
    if (s.gpt_oss) {
      add(p + "attn_output.bias", d, 1, false, il, 0.0f, 0.02f);
      add(p + "attn_sinks.weight", s.n_head, 1, false, il, 0.0f, 1.0f);
    }
    add(p + (s.gpt_oss ? "post_attention_norm.weight" : "ffn_norm.weight"), d, 1, false, il, 1.0f, 0.05f);
    if (s.n_expert == 0) {
      add(p + "ffn_gate.weight", d, s.n_ff, true, il, 0.0f, in_std);
      add(p + "ffn_up.weight", d, s.n_ff, true, il, 0.0f, in_std);
      add(p + "ffn_down.weight", s.n_ff, d, true, il, 0.0f, 1.0f / std::sqrt(static_cast<float>(s.n_ff)));
      continue;
    }
    // The router stays F32, as llama-quantize leaves it.
    add(p + "ffn_gate_inp.weight", d, s.n_expert, true, il, 0.0f, in_std);
    plans.back().type = DType::kF32;
    const int64_t ff = s.n_ff_expert;
    add_experts(p + "ffn_gate_exps.weight", d, ff, true, il, in_std);
    add_experts(p + "ffn_up_exps.weight", d, ff, true, il, in_std);
    add_experts(p + "ffn_down_exps.weight", ff, d, true, il, 1.0f / std::sqrt(static_cast<float>(ff)));
    if (s.gpt_oss) {
      add(p + "ffn_gate_inp.bias", s.n_expert, 1, false, il, 0.0f, 0.02f);
      add_experts(p + "ffn_gate_exps.bias", ff, 1, false, il, 0.02f);
      add_experts(p + "ffn_up_exps.bias", ff, 1, false, il, 0.02f);
      add_experts(p + "ffn_down_exps.bias", d, 1, false, il, 0.02f);
    }
  }
  add("output_norm.weight", d, 1, false, -1, 1.0f, 0.05f);
  if (!s.tied_output) add("output.weight", d, s.n_vocab, true, -1, 0.0f, in_std);
  return plans;
}

gguf::Value string_array(std::vector<std::string> items) {
  gguf::Array a;
  a.elem_type = gguf::ValueType::kString;
  a.items = std::move(items);
  return gguf::Value(std::move(a));
}

gguf::Value int32_array(std::vector<int32_t> items) {
  gguf::Array a;
  a.elem_type = gguf::ValueType::kInt32;
  a.items = std::move(items);
  return gguf::Value(std::move(a));
}

void set_metadata(gguf::Writer& w, const ModelShape& s, FileType ftype, SyntheticVocab vocab) {
  const std::string a = s.arch + ".";
  w.set("general.architecture", gguf::Value(s.arch));
  w.set("general.name", gguf::Value("hearth-synthetic-" + s.arch + "-" + s.name));
  w.set("general.description", gguf::Value("Random weights in the shape of " + s.label +
                                           "; written by hearth-dev make-model for benchmarks. Not a trained model."));
  w.set("general.file_type", gguf::Value(file_type_gguf_id(ftype)));
  if (file_type_quantized(ftype)) w.set("general.quantization_version", gguf::Value(uint32_t{2}));
  w.set(a + "context_length", gguf::Value(static_cast<uint32_t>(s.n_ctx_train)));
  w.set(a + "embedding_length", gguf::Value(static_cast<uint32_t>(s.n_embd)));
  w.set(a + "block_count", gguf::Value(static_cast<uint32_t>(s.n_layer)));
  w.set(a + "feed_forward_length", gguf::Value(static_cast<uint32_t>(s.n_ff)));
  w.set(a + "attention.head_count", gguf::Value(static_cast<uint32_t>(s.n_head)));
  w.set(a + "attention.head_count_kv", gguf::Value(static_cast<uint32_t>(s.n_head_kv)));
  w.set(a + "attention.key_length", gguf::Value(static_cast<uint32_t>(s.head_dim)));
  w.set(a + "attention.value_length", gguf::Value(static_cast<uint32_t>(s.head_dim)));
  w.set(a + "attention.layer_norm_rms_epsilon", gguf::Value(s.norm_eps));
  w.set(a + "rope.freq_base", gguf::Value(s.rope_freq_base));
  w.set(a + "rope.dimension_count", gguf::Value(static_cast<uint32_t>(s.head_dim)));
  if (s.arch == "llama") w.set(a + "vocab_size", gguf::Value(static_cast<uint32_t>(s.n_vocab)));
  if (s.n_expert > 0) {
    w.set(a + "expert_count", gguf::Value(static_cast<uint32_t>(s.n_expert)));
    w.set(a + "expert_used_count", gguf::Value(static_cast<uint32_t>(s.n_expert_used)));
    w.set(a + "expert_feed_forward_length", gguf::Value(static_cast<uint32_t>(s.n_ff_expert)));
  }
  if (s.sliding_window > 0) w.set(a + "attention.sliding_window", gguf::Value(static_cast<uint32_t>(s.sliding_window)));
  if (s.yarn_factor > 0.0f) {
    w.set(a + "rope.scaling.type", gguf::Value(std::string("yarn")));
    w.set(a + "rope.scaling.factor", gguf::Value(s.yarn_factor));
    w.set(a + "rope.scaling.original_context_length", gguf::Value(static_cast<uint32_t>(s.yarn_original_ctx)));
  }
  w.set("tokenizer.ggml.model", gguf::Value("gpt2"));
  w.set("tokenizer.ggml.pre", gguf::Value(s.tokenizer_pre));
  w.set("tokenizer.ggml.tokens", string_array(std::move(vocab.tokens)));
  w.set("tokenizer.ggml.token_type", int32_array(std::move(vocab.token_types)));
  w.set("tokenizer.ggml.merges", string_array(std::move(vocab.merges)));
  if (vocab.bos >= 0) w.set("tokenizer.ggml.bos_token_id", gguf::Value(static_cast<uint32_t>(vocab.bos)));
  if (vocab.eos >= 0) w.set("tokenizer.ggml.eos_token_id", gguf::Value(static_cast<uint32_t>(vocab.eos)));
  if (vocab.pad >= 0) w.set("tokenizer.ggml.padding_token_id", gguf::Value(static_cast<uint32_t>(vocab.pad)));
  w.set("tokenizer.ggml.add_bos_token", gguf::Value(s.add_bos));
}

// Fills `bytes` with the tensor's rows, drawn and converted in parallel.
Status produce_tensor(const TensorPlan& p, size_t index, uint64_t seed, ThreadPool& pool, std::string& bytes) {
  HEARTH_ASSIGN(const uint64_t row_bytes, dtype_row_bytes(p.type, static_cast<uint64_t>(p.role.cols)));
  bytes.resize(row_bytes * static_cast<uint64_t>(p.role.rows));
  std::vector<Status> failures(static_cast<size_t>(pool.size()), ok_status());
  std::vector<std::vector<float>> rows(static_cast<size_t>(pool.size()));
  pool.parallel_for(static_cast<size_t>(p.role.rows), [&](size_t begin, size_t end, int thread) {
    std::vector<float>& row = rows[static_cast<size_t>(thread)];
    row.resize(static_cast<size_t>(p.role.cols));
    for (size_t r = begin; r < end; ++r) {
      if (!p.fixed.empty()) {
        row = p.fixed;
      } else {
        fill_random_row(row.data(), p.role.cols, seed, index, static_cast<int64_t>(r), p.mean, p.std);
      }
      auto st = quantize_row(p.type, row.data(), bytes.data() + r * row_bytes, p.role.cols);
      if (!st.ok()) {
        failures[static_cast<size_t>(thread)] = st;
        return;
      }
    }
  });
  for (const auto& st : failures) {
    if (!st.ok()) return st.error().with_context("tensor '" + p.role.name + "'");
  }
  return ok_status();
}

}  // namespace

Status make_model(const MakeModelOptions& o) {
  if (o.output.empty()) return make_error(ErrorKind::kInvalidArgument, "no output path given");
  HEARTH_ASSIGN(ModelShape shape, find_model_shape(o.arch, o.shape));
  if (o.n_layers < 0) return make_error(ErrorKind::kInvalidArgument, "--layers must not be negative");
  if (o.n_layers > 0) shape.n_layer = o.n_layers;
  HEARTH_ASSIGN(const FileType ftype, file_type_from_name(o.type));
  HEARTH_ASSIGN(SyntheticVocab vocab, make_synthetic_vocab(shape));
  const std::vector<TensorPlan> plans = plan_tensors(shape, ftype);

  gguf::Writer w(32);
  set_metadata(w, shape, ftype, std::move(vocab));
  for (const auto& p : plans) {
    std::vector<int64_t> dims = p.dims;
    if (dims.empty()) dims.push_back(p.role.cols);
    if (p.dims.empty() && p.role.is_matrix) dims.push_back(p.role.rows);
    HEARTH_TRY(w.add_tensor_deferred(p.role.name, p.type, std::move(dims)));
  }
  ThreadPool pool(o.n_threads);
  return w.write_streamed(o.output, [&](size_t i, std::string& bytes) -> Status {
    HEARTH_TRY(produce_tensor(plans[i], i, o.seed, pool, bytes));
    if (o.progress) o.progress(i + 1, plans.size(), plans[i].role.name);
    return ok_status();
  });
}

}  // namespace hearth::devtools
