// phi3 LongRoPE: rope_factors_long / rope_factors_short divide each rotated pair's frequency,
// the long set when the context (per sequence) exceeds rope.scaling.original_context_length and
// the short set otherwise, and rope.scaling.attn_factor multiplies every rotated value. No
// shared model has them, so the test adds them to the random phi3 with Hearth's GGUF writer and
// checks (a) factors of 1.0 reproduce the original file's logits exactly, and (b) non-trivial
// factors give the logits of an independent float64 phi3 forward pass written here with the
// factors and the attention factor applied by hand, for the factor set the context length
// selects, while the wrong set or a missing attention factor would be far outside tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/test_paths.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "kv/kv_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "tensor/quantize.h"
#include "util/thread_pool.h"

namespace hearth::model {
namespace {

std::string phi3_path() { return test::models_dir() + "/random/phi3-F32.gguf"; }

struct LongRope {
  std::vector<float> long_factors, short_factors;
  int64_t original_context = 0;  // 0: key not written
  float attn_factor = 0.0f;      // 0: key not written
};

// The phi3 file with LongRoPE tensors and metadata added, written to a temp dir.
std::string write_longrope_phi3(const LongRope& lr) {
  auto src = gguf::File::open(phi3_path());
  EXPECT_TRUE(src.ok()) << src.error().to_string();
  if (!src.ok()) return "";
  gguf::Writer w;
  for (const auto& kv : src->metadata()) w.set(kv.key, kv.value);
  if (lr.original_context > 0) {
    w.set("phi3.rope.scaling.original_context_length", gguf::Value(static_cast<uint32_t>(lr.original_context)));
  }
  if (lr.attn_factor > 0.0f) w.set("phi3.rope.scaling.attn_factor", gguf::Value(lr.attn_factor));
  for (const auto& t : src->tensors()) {
    auto st = w.add_tensor(t.name, t.type, t.shape,
                           std::string_view(reinterpret_cast<const char*>(t.data), static_cast<size_t>(t.size_bytes)));
    EXPECT_TRUE(st.ok()) << st.error().to_string();
  }
  auto add = [&](const char* name, const std::vector<float>& f) {
    auto st = w.add_tensor(name, DType::kF32, {static_cast<int64_t>(f.size())},
                           std::string_view(reinterpret_cast<const char*>(f.data()), f.size() * sizeof(float)));
    EXPECT_TRUE(st.ok()) << st.error().to_string();
  };
  if (!lr.long_factors.empty()) add("rope_factors_long.weight", lr.long_factors);
  if (!lr.short_factors.empty()) add("rope_factors_short.weight", lr.short_factors);
  const std::string path = test::make_temp_dir() + "/phi3-longrope.gguf";
  auto st = w.write(path);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  return path;
}

const std::vector<int32_t> kPrompt = {1, 450, 1017, 310, 344, 338, 263, 1243, 889, 13};  // vocab: 1248
const std::vector<int32_t> kDecoded = {306, 1073, 871};

// Logits of the prompt (every position) and of each decoded token, one step at a time, from a
// fresh context whose sequences may reach n_ctx tokens. F32 KV cache when exact_kv.
std::vector<float> hearth_logits(const Model& m, int32_t n_ctx, bool exact_kv) {
  ThreadPool pool(2);
  auto kv = kv::KvCache::create(m.kv_layout(exact_kv ? DType::kF32 : DType::kF16), 4);
  EXPECT_TRUE(kv.ok());
  const int32_t seq = kv->seq_create();
  ForwardPass fwd(m, pool, n_ctx);
  std::vector<float> all, step;
  std::vector<BatchToken> batch;
  for (size_t i = 0; i < kPrompt.size(); ++i) batch.push_back({kPrompt[i], seq, static_cast<int32_t>(i), true});
  auto st = fwd.run(batch, *kv, &all);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  for (size_t i = 0; i < kDecoded.size(); ++i) {
    const BatchToken t{kDecoded[i], seq, static_cast<int32_t>(kPrompt.size() + i), true};
    st = fwd.run(std::span<const BatchToken>(&t, 1), *kv, &step);
    EXPECT_TRUE(st.ok()) << st.error().to_string();
    all.insert(all.end(), step.begin(), step.end());
  }
  return all;
}

std::vector<double> tensor_f64(const gguf::File& f, const std::string& name) {
  const gguf::TensorInfo* t = f.find_tensor(name);
  EXPECT_NE(t, nullptr) << name;
  if (t == nullptr) return {};
  std::vector<float> tmp(static_cast<size_t>(t->element_count()));
  EXPECT_TRUE(dequantize_tensor(t->type, t->data, t->size_bytes, tmp.data(), t->element_count()).ok());
  return std::vector<double>(tmp.begin(), tmp.end());
}

// y = W x for a GGUF matrix of `rows` rows of x.size() columns.
std::vector<double> matvec(const std::vector<double>& w, const std::vector<double>& x, size_t rows) {
  std::vector<double> y(rows, 0.0);
  for (size_t r = 0; r < rows; ++r) {
    double s = 0.0;
    for (size_t c = 0; c < x.size(); ++c) s += w[r * x.size() + c] * x[c];
    y[r] = s;
  }
  return y;
}

std::vector<double> rms_norm(const std::vector<double>& x, const std::vector<double>& w, double eps) {
  double ss = 0.0;
  for (double v : x) ss += v * v;
  const double s = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + eps);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * s * w[i];
  return y;
}

// The random phi3's weights as doubles, read once.
struct Phi3Weights {
  size_t d = 256, n_head = 4, hd = 64, n_ff = 768, n_layer = 2, vocab = 1248;
  double eps = 0.0, base = 0.0;
  std::vector<double> embd, out_norm;
  struct Layer {
    std::vector<double> attn_norm, qkv, wo, ffn_norm, up, down;
  };
  std::vector<Layer> layers;
};

const Phi3Weights& phi3_weights() {
  static const Phi3Weights w = [] {
    Phi3Weights w;
    auto f = gguf::File::open(phi3_path());
    EXPECT_TRUE(f.ok());
    if (!f.ok()) return w;
    w.eps = f->get<float>("phi3.attention.layer_norm_rms_epsilon").value();
    w.base = f->get_or<float>("phi3.rope.freq_base", 10000.0f);
    EXPECT_EQ(f->get_or<uint32_t>("phi3.embedding_length", 0), w.d);
    EXPECT_EQ(f->get_or<uint32_t>("phi3.block_count", 0), w.n_layer);
    EXPECT_EQ(f->get_or<uint32_t>("phi3.attention.head_count", 0), w.n_head);
    w.embd = tensor_f64(*f, "token_embd.weight");
    w.out_norm = tensor_f64(*f, "output_norm.weight");
    for (size_t il = 0; il < w.n_layer; ++il) {
      const std::string blk = "blk." + std::to_string(il) + ".";
      w.layers.push_back({tensor_f64(*f, blk + "attn_norm.weight"), tensor_f64(*f, blk + "attn_qkv.weight"),
                          tensor_f64(*f, blk + "attn_output.weight"), tensor_f64(*f, blk + "ffn_norm.weight"),
                          tensor_f64(*f, blk + "ffn_up.weight"), tensor_f64(*f, blk + "ffn_down.weight")});
    }
    return w;
  }();
  return w;
}

// The random phi3 (see shared/models/random/README.md) in float64: fused QKV (Q, K, V rows),
// NeoX RoPE over all 64 head dimensions with per-pair divisors `factors` (none when empty) and
// every rotated value times attn_factor, causal MHA, fused gate/up FFN with SiLU, tied output.
// Logits of every position.
std::vector<double> reference_logits(const std::vector<int32_t>& tokens, const std::vector<float>& factors,
                                     double attn_factor) {
  const Phi3Weights& w = phi3_weights();
  const size_t d = w.d, hd = w.hd;
  std::vector<std::vector<double>> keys(w.n_layer), values(w.n_layer);  // per layer, position-major
  std::vector<double> logits;
  for (size_t pos = 0; pos < tokens.size(); ++pos) {
    const auto row = w.embd.begin() + static_cast<int64_t>(static_cast<size_t>(tokens[pos]) * d);
    std::vector<double> x(row, row + static_cast<int64_t>(d));
    for (size_t il = 0; il < w.n_layer; ++il) {
      const Phi3Weights::Layer& L = w.layers[il];
      const std::vector<double> qkv = matvec(L.qkv, rms_norm(x, L.attn_norm, w.eps), 3 * d);
      std::vector<double> q(qkv.begin(), qkv.begin() + d), k(qkv.begin() + d, qkv.begin() + 2 * d);
      for (std::vector<double>* v : {&q, &k}) {
        for (size_t h = 0; h < w.n_head; ++h) {
          double* head = v->data() + h * hd;
          for (size_t i = 0; i < hd / 2; ++i) {
            const double divisor = factors.empty() ? 1.0 : factors[i];
            const double theta = static_cast<double>(pos) * std::pow(w.base, -2.0 * static_cast<double>(i) / hd) / divisor;
            const double x0 = head[i], x1 = head[i + hd / 2];
            head[i] = (x0 * std::cos(theta) - x1 * std::sin(theta)) * attn_factor;
            head[i + hd / 2] = (x0 * std::sin(theta) + x1 * std::cos(theta)) * attn_factor;
          }
        }
      }
      keys[il].insert(keys[il].end(), k.begin(), k.end());
      values[il].insert(values[il].end(), qkv.begin() + static_cast<int64_t>(2 * d), qkv.end());
      std::vector<double> attn(d, 0.0);
      for (size_t h = 0; h < w.n_head; ++h) {
        std::vector<double> s(pos + 1);
        double max = -INFINITY;
        for (size_t j = 0; j <= pos; ++j) {
          double dot = 0.0;
          for (size_t i = 0; i < hd; ++i) dot += q[h * hd + i] * keys[il][j * d + h * hd + i];
          s[j] = dot / std::sqrt(static_cast<double>(hd));
          max = std::max(max, s[j]);
        }
        double sum = 0.0;
        for (double& e : s) sum += (e = std::exp(e - max));
        for (size_t j = 0; j <= pos; ++j) {
          for (size_t i = 0; i < hd; ++i) attn[h * hd + i] += s[j] / sum * values[il][j * d + h * hd + i];
        }
      }
      const std::vector<double> o = matvec(L.wo, attn, d);
      for (size_t i = 0; i < d; ++i) x[i] += o[i];
      const std::vector<double> up = matvec(L.up, rms_norm(x, L.ffn_norm, w.eps), 2 * w.n_ff);
      std::vector<double> act(w.n_ff);
      for (size_t i = 0; i < w.n_ff; ++i) act[i] = up[i] / (1.0 + std::exp(-up[i])) * up[w.n_ff + i];
      const std::vector<double> down = matvec(L.down, act, d);
      for (size_t i = 0; i < d; ++i) x[i] += down[i];
    }
    const std::vector<double> out = matvec(w.embd, rms_norm(x, w.out_norm, w.eps), w.vocab);
    logits.insert(logits.end(), out.begin(), out.end());
  }
  return logits;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0.0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0.0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

std::vector<int32_t> all_tokens() {
  std::vector<int32_t> t = kPrompt;
  t.insert(t.end(), kDecoded.begin(), kDecoded.end());
  return t;
}

TEST(LongRope, FactorsOfOneGiveTheOriginalLogitsExactly) {
  HEARTH_REQUIRE_FILE(phi3_path());
  auto plain = Model::load(phi3_path());
  ASSERT_TRUE(plain.ok()) << plain.error().to_string();
  LongRope lr;
  lr.long_factors.assign(32, 1.0f);
  lr.short_factors.assign(32, 1.0f);
  lr.original_context = 64;
  lr.attn_factor = 1.0f;
  auto with_factors = Model::load(write_longrope_phi3(lr));
  ASSERT_TRUE(with_factors.ok()) << with_factors.error().to_string();
  ASSERT_NE((*with_factors)->weights().rope_factors_long, nullptr);
  const std::vector<float> want = hearth_logits(**plain, 0, false);
  for (int32_t n_ctx : {32, 512}) {  // short and long set
    const std::vector<float> got = hearth_logits(**with_factors, n_ctx, false);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0) << "n_ctx " << n_ctx;
  }
}

TEST(LongRope, FactorsAndAttentionFactorMatchAFloat64Reference) {
  HEARTH_REQUIRE_FILE(phi3_path());
  LongRope lr;
  for (int i = 0; i < 32; ++i) {
    // long: strong, growing divisors like a 128k model's; short: mild ones
    lr.long_factors.push_back(1.0f + 0.25f * static_cast<float>(i));
    lr.short_factors.push_back(1.0f + 0.02f * static_cast<float>(i % 7));
  }
  lr.original_context = 64;
  lr.attn_factor = 1.19f;  // Phi-4-mini's is sqrt(1 + ln(32) / ln(4096)) = 1.19
  auto m = Model::load(write_longrope_phi3(lr));
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ((*m)->hparams().rope.n_ctx_orig, 64);
  EXPECT_FLOAT_EQ((*m)->hparams().rope.attn_factor, 1.19f);

  const std::vector<int32_t> tokens = all_tokens();
  const std::vector<double> ref_long = reference_logits(tokens, lr.long_factors, lr.attn_factor);
  const std::vector<double> ref_short = reference_logits(tokens, lr.short_factors, lr.attn_factor);
  const std::vector<double> ref_long_no_attn_factor = reference_logits(tokens, lr.long_factors, 1.0);
  const std::vector<double> ref_no_factors = reference_logits(tokens, {}, lr.attn_factor);

  // Hearth with an F32 KV cache differs from float64 only by F32 rounding through two layers:
  // 6e-6 here (logit std 2.4). The wrong factor set or attention factor moves the logits
  // by far more than the tolerance, which the last checks confirm.
  const double tol = 1e-4;
  struct Case {
    int32_t n_ctx;
    const std::vector<double>* want;
    const char* what;
  };
  const Case cases[] = {{128, &ref_long, "context 128 > 64: long factors"},
                        {0, &ref_long, "default context (training length 2048): long factors"},
                        {64, &ref_short, "context 64 = original: short factors"},
                        {16, &ref_short, "context 16: short factors"}};
  for (const Case& c : cases) {
    const std::vector<float> got = hearth_logits(**m, c.n_ctx, true);
    const double err = max_abs_diff(got, *c.want);
    EXPECT_LE(err, tol) << c.what;
    std::printf("[longrope] %s: max abs error %.2e\n", c.what, err);
  }
  EXPECT_GT(max_abs_diff(ref_long, ref_short), 50 * tol);
  EXPECT_GT(max_abs_diff(ref_long, ref_long_no_attn_factor), 50 * tol);
  EXPECT_GT(max_abs_diff(ref_short, ref_no_factors), 50 * tol);
  std::printf("[longrope] long vs short %.3f, attn factor 1.19 vs 1 %.3f, short vs none %.3f\n",
              max_abs_diff(ref_long, ref_short), max_abs_diff(ref_long, ref_long_no_attn_factor),
              max_abs_diff(ref_short, ref_no_factors));
}

TEST(LongRope, BadFactorsAreErrors) {
  HEARTH_REQUIRE_FILE(phi3_path());
  LongRope wrong_length;
  wrong_length.long_factors.assign(31, 1.0f);
  auto r = Model::load(write_longrope_phi3(wrong_length));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kCorrupt);
  EXPECT_NE(r.error().message.find("rope_factors_long.weight"), std::string::npos) << r.error().to_string();

  LongRope zero;
  zero.short_factors.assign(32, 1.0f);
  zero.short_factors[5] = 0.0f;
  r = Model::load(write_longrope_phi3(zero));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kCorrupt);
  EXPECT_NE(r.error().message.find("rope_factors_short.weight"), std::string::npos) << r.error().to_string();
}

}  // namespace
}  // namespace hearth::model
