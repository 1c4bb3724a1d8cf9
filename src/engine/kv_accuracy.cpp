// KV cache type accuracy against an F16 cache (see kv_accuracy.h).
#include "engine/kv_accuracy.h"

#include <algorithm>
#include <cmath>

namespace hearth::engine {
namespace {

// Logits of every position but the last (each predicts the next token): the first half of the
// tokens in one batch, then one token per step.
Result<std::vector<float>> run_logits(const std::string& path, const std::vector<int32_t>& tokens, DType type,
                                      const ContextOptions& base) {
  ContextOptions o = base;
  o.kv_type = type;
  o.n_ctx = static_cast<int32_t>(tokens.size());
  o.gpu_layers = 0;
  HEARTH_ASSIGN(std::unique_ptr<InferenceContext> ctx, InferenceContext::load(path, o));
  const auto n = static_cast<int32_t>(tokens.size());
  const int32_t prefill = n / 2;
  const int32_t seq = ctx->seq_create();
  std::vector<float> all, step;
  std::vector<model::BatchToken> batch;
  for (int32_t i = 0; i < prefill; ++i) batch.push_back({tokens[static_cast<size_t>(i)], seq, i, true});
  HEARTH_TRY(ctx->decode(batch, all));
  for (int32_t i = prefill; i < n - 1; ++i) {
    const model::BatchToken t{tokens[static_cast<size_t>(i)], seq, i, true};
    HEARTH_TRY(ctx->decode(std::span<const model::BatchToken>(&t, 1), step));
    all.insert(all.end(), step.begin(), step.end());
  }
  return all;
}

// log-softmax of n logits, in double.
void log_softmax(const float* x, size_t n, std::vector<double>& out) {
  out.resize(n);
  const double max = *std::max_element(x, x + n);
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(x[i]) - max);
  const double log_sum = max + std::log(sum);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<double>(x[i]) - log_sum;
}

}  // namespace

Result<std::vector<KvAccuracy>> kv_accuracy(const std::string& path, const std::vector<int32_t>& tokens,
                                            const std::vector<DType>& types, const ContextOptions& base) {
  if (tokens.size() < 4) return make_error(ErrorKind::kInvalidArgument, "kv_accuracy needs at least 4 tokens");
  HEARTH_ASSIGN(std::vector<float> ref, run_logits(path, tokens, DType::kF16, base));
  const size_t n_pos = tokens.size() - 1;
  const size_t n_vocab = ref.size() / n_pos;
  std::vector<KvAccuracy> results;
  std::vector<double> lp_ref, lp;
  for (DType type : types) {
    HEARTH_ASSIGN(std::vector<float> got, run_logits(path, tokens, type, base));
    KvAccuracy a;
    a.type = type;
    a.n_positions = static_cast<int32_t>(n_pos);
    double kl_sum = 0.0, nll = 0.0, nll_ref = 0.0;
    int32_t agree = 0;
    for (size_t i = 0; i < n_pos; ++i) {
      const float* r = ref.data() + i * n_vocab;
      const float* g = got.data() + i * n_vocab;
      log_softmax(r, n_vocab, lp_ref);
      log_softmax(g, n_vocab, lp);
      double kl = 0.0;
      for (size_t v = 0; v < n_vocab; ++v) {
        kl += std::exp(lp_ref[v]) * (lp_ref[v] - lp[v]);
        a.max_logit_error = std::max(a.max_logit_error, static_cast<double>(std::fabs(r[v] - g[v])));
      }
      kl = std::max(kl, 0.0);  // rounding can leave a tiny negative
      kl_sum += kl;
      a.max_kl = std::max(a.max_kl, kl);
      agree += std::max_element(r, r + n_vocab) - r == std::max_element(g, g + n_vocab) - g ? 1 : 0;
      const auto next = static_cast<size_t>(tokens[i + 1]);
      nll -= lp[next];
      nll_ref -= lp_ref[next];
    }
    a.mean_kl = kl_sum / static_cast<double>(n_pos);
    a.top1_agreement = static_cast<double>(agree) / static_cast<double>(n_pos);
    a.ppl = std::exp(nll / static_cast<double>(n_pos));
    a.ppl_f16 = std::exp(nll_ref / static_cast<double>(n_pos));
    results.push_back(a);
  }
  return results;
}

}  // namespace hearth::engine
