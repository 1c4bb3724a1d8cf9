// The mixture-of-experts FFN block. Every token of the micro-batch is routed first (router
// matmul, the architecture's gating function, top-k, weight normalisation); then the tokens
// are grouped by expert and each chosen expert runs once over its group, so an expert's
// matrices are read once per micro-batch in prefill and only the chosen experts are read at
// decode. Each (token, slot) output is kept apart and the slots are summed per token in
// best-first order with their weights, the order the ecosystem adds them in.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "model/forward.h"

namespace hearth::model {
namespace {
// Batches up to this many tokens run their chosen experts together (run_experts_grouped).
constexpr int64_t kGroupedExpertTokens = 8;

void grow(std::vector<float>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}
}  // namespace

void ForwardPass::route_tokens(int32_t il, std::span<const BatchToken> batch) {
  const auto& h = model_.hparams();
  const MoeWeights& moe = model_.weights().layers[static_cast<size_t>(il)].moe;
  const int64_t n = static_cast<int64_t>(batch.size());
  const int32_t ne = h.moe.n_expert;
  const int32_t k = h.moe.n_expert_used;
  grow(moe_scores_, static_cast<size_t>(n * ne));
  moe_route_.resize(static_cast<size_t>(n * k));
  grow(moe_weight_, static_cast<size_t>(n * k));
  if (auto st = matmul(moe.gate_inp, xn_.data(), n, moe_scores_.data()); !st.ok()) status_ = st;
  add_bias_rows(moe_scores_.data(), moe.gate_inp_b, n, ne);
  std::vector<int32_t> order(static_cast<size_t>(ne));
  for (int64_t t = 0; t < n; ++t) {
    float* s = moe_scores_.data() + t * ne;
    // Selection scores: probabilities for kSoftmax and kSigmoid, the logits for kSoftmaxOfTopK.
    if (h.moe.gating == ExpertGating::kSoftmax) {
      kernels::softmax(s, ne);
    } else if (h.moe.gating == ExpertGating::kSigmoid) {
      for (int32_t e = 0; e < ne; ++e) s[e] = 1.0f / (1.0f + std::exp(-s[e]));
    }
    std::iota(order.begin(), order.end(), 0);
    // Best first; equal scores keep the lower expert id first.
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [s](int32_t a, int32_t b) {
      return s[a] > s[b] || (s[a] == s[b] && a < b);
    });
    int32_t* chosen = moe_route_.data() + t * k;
    std::copy(order.begin(), order.begin() + k, chosen);
    if (router_observer_ != nullptr) {
      router_observer_->on_route(il, batch[static_cast<size_t>(t)], std::span<const float>(s, static_cast<size_t>(ne)),
                                 std::span<int32_t>(chosen, static_cast<size_t>(k)));
      for (int32_t j = 0; j < k; ++j) {
        if (chosen[j] < 0 || chosen[j] >= ne) {
          status_ = make_error(ErrorKind::kInvalidArgument, "router observer chose expert " + std::to_string(chosen[j]) +
                                                                " of " + std::to_string(ne));
          chosen[j] = 0;
        }
      }
    }
    float* w = moe_weight_.data() + t * k;
    for (int32_t j = 0; j < k; ++j) w[j] = s[chosen[j]];
    if (h.moe.gating == ExpertGating::kSoftmaxOfTopK) {
      kernels::softmax(w, k);
    } else if (h.moe.norm_weights) {
      float sum = 0.0f;
      for (int32_t j = 0; j < k; ++j) sum += w[j];
      for (int32_t j = 0; j < k; ++j) w[j] /= sum;
    }
    if (h.moe.weights_scale != 1.0f) kernels::scale(w, h.moe.weights_scale, k);
  }
}

void ForwardPass::run_expert(const kernels::WeightView& gate, const kernels::WeightView& up,
                             const kernels::WeightView& down, const float* gate_b, const float* up_b,
                             const float* down_b, const float* x, int64_t n_rows) {
  const int64_t ff = gate.rows;
  grow(moe_gate_, static_cast<size_t>(n_rows * ff));
  grow(moe_up_, static_cast<size_t>(n_rows * ff));
  grow(moe_y_, static_cast<size_t>(n_rows * down.rows));
  const kernels::MatmulJob jobs[] = {{&gate, moe_gate_.data()}, {&up, moe_up_.data()}};
  if (auto st = kernels::matmul_multi(jobs, x, n_rows, pool_, mm_scratch_); !st.ok()) status_ = st;
  add_bias_rows(moe_gate_.data(), gate_b, n_rows, ff);
  add_bias_rows(moe_up_.data(), up_b, n_rows, ff);
  gated_activation(moe_gate_.data(), moe_up_.data(), n_rows * ff);
  if (auto st = matmul(down, moe_gate_.data(), n_rows, moe_y_.data()); !st.ok()) status_ = st;
  add_bias_rows(moe_y_.data(), down_b, n_rows, down.rows);
}

void ForwardPass::run_experts_grouped(const MoeWeights& moe, int64_t n) {
  const auto& h = model_.hparams();
  const int64_t d = h.n_embd;
  const int32_t k = h.moe.n_expert_used;
  const int64_t ff = h.moe.n_ff_expert;
  const int64_t pairs = n * k;
  // The (token, slot) pairs ordered by expert, batch order within one, and their inputs.
  moe_rows_.resize(static_cast<size_t>(pairs));
  std::iota(moe_rows_.begin(), moe_rows_.end(), 0);
  std::stable_sort(moe_rows_.begin(), moe_rows_.end(), [this](int32_t a, int32_t b) {
    return moe_route_[static_cast<size_t>(a)] < moe_route_[static_cast<size_t>(b)];
  });
  grow(moe_x_, static_cast<size_t>(pairs * d));
  grow(moe_gate_, static_cast<size_t>(pairs * ff));
  grow(moe_up_, static_cast<size_t>(pairs * ff));
  grow(moe_y_, static_cast<size_t>(pairs * d));
  // One group of rows per chosen expert: [first, end).
  auto for_each_group = [&](auto fn) {
    for (int64_t first = 0; first < pairs;) {
      const int32_t e = moe_route_[static_cast<size_t>(moe_rows_[static_cast<size_t>(first)])];
      int64_t end = first + 1;
      while (end < pairs && moe_route_[static_cast<size_t>(moe_rows_[static_cast<size_t>(end)])] == e) ++end;
      fn(e, first, end - first);
      first = end;
    }
  };
  // An expert chosen by one token reads that token's row of xn_ in place, so experts that share
  // a token share its activation conversion (at decode: one conversion for all of them); the
  // rows of an expert chosen by several tokens are gathered into moe_x_.
  moe_jobs_.clear();
  for_each_group([&](int32_t e, int64_t first, int64_t rows) {
    const float* x = xn_.data() + (moe_rows_[static_cast<size_t>(first)] / k) * d;
    if (rows > 1) {
      for (int64_t r = first; r < first + rows; ++r) {
        const float* src = xn_.data() + (moe_rows_[static_cast<size_t>(r)] / k) * d;
        std::copy(src, src + d, moe_x_.data() + r * d);
      }
      x = moe_x_.data() + first * d;
    }
    const auto ue = static_cast<size_t>(e);
    moe_jobs_.push_back({&moe.gate[ue], x, rows, moe_gate_.data() + first * ff});
    moe_jobs_.push_back({&moe.up[ue], x, rows, moe_up_.data() + first * ff});
  });
  if (auto st = kernels::matmul_grouped(moe_jobs_, pool_, mm_scratch_); !st.ok()) status_ = st;
  for_each_group([&](int32_t e, int64_t first, int64_t rows) {
    if (moe.gate_b) add_bias_rows(moe_gate_.data() + first * ff, moe.gate_b + e * ff, rows, ff);
    if (moe.up_b) add_bias_rows(moe_up_.data() + first * ff, moe.up_b + e * ff, rows, ff);
  });
  gated_activation(moe_gate_.data(), moe_up_.data(), pairs * ff);
  moe_jobs_.clear();
  for_each_group([&](int32_t e, int64_t first, int64_t rows) {
    moe_jobs_.push_back({&moe.down[static_cast<size_t>(e)], moe_gate_.data() + first * ff, rows, moe_y_.data() + first * d});
  });
  if (auto st = kernels::matmul_grouped(moe_jobs_, pool_, mm_scratch_); !st.ok()) status_ = st;
  for_each_group([&](int32_t e, int64_t first, int64_t rows) {
    if (moe.down_b) add_bias_rows(moe_y_.data() + first * d, moe.down_b + e * d, rows, d);
  });
  for (int64_t r = 0; r < pairs; ++r) {
    const float* y = moe_y_.data() + r * d;
    std::copy(y, y + d, moe_slots_.data() + static_cast<int64_t>(moe_rows_[static_cast<size_t>(r)]) * d);
  }
}

void ForwardPass::moe_block(int32_t il, std::span<const BatchToken> batch) {
  const auto& h = model_.hparams();
  const MoeWeights& moe = model_.weights().layers[static_cast<size_t>(il)].moe;
  const int64_t n = static_cast<int64_t>(batch.size());
  const int64_t d = h.n_embd;
  const int32_t k = h.moe.n_expert_used;
  const int64_t ff = h.moe.n_ff_expert;
  route_tokens(il, batch);
  grow(moe_slots_, static_cast<size_t>(n * k * d));
  grow(moe_x_, static_cast<size_t>(n * d));
  // Decode: the chosen experts' matrices are small for the pool one at a time, so they run
  // together; a prefill micro-batch gives each expert enough rows to run alone.
  if (n <= kGroupedExpertTokens) run_experts_grouped(moe, n);
  for (int32_t e = 0; n > kGroupedExpertTokens && e < h.moe.n_expert; ++e) {
    // The (token, slot) pairs that chose expert e, in batch order.
    moe_rows_.clear();
    for (int64_t i = 0; i < n * k; ++i) {
      if (moe_route_[static_cast<size_t>(i)] == e) moe_rows_.push_back(static_cast<int32_t>(i));
    }
    if (moe_rows_.empty()) continue;  // an expert nobody chose is not read
    const int64_t rows = static_cast<int64_t>(moe_rows_.size());
    for (int64_t r = 0; r < rows; ++r) {
      const float* src = xn_.data() + (moe_rows_[static_cast<size_t>(r)] / k) * d;
      std::copy(src, src + d, moe_x_.data() + r * d);
    }
    const auto ue = static_cast<size_t>(e);
    run_expert(moe.gate[ue], moe.up[ue], moe.down[ue], moe.gate_b ? moe.gate_b + e * ff : nullptr,
               moe.up_b ? moe.up_b + e * ff : nullptr, moe.down_b ? moe.down_b + e * d : nullptr, moe_x_.data(), rows);
    for (int64_t r = 0; r < rows; ++r) {
      const float* y = moe_y_.data() + r * d;
      std::copy(y, y + d, moe_slots_.data() + static_cast<int64_t>(moe_rows_[static_cast<size_t>(r)]) * d);
    }
  }
  // tmp_[t] = sum over slots, best first, of weight * expert output.
  for (int64_t t = 0; t < n; ++t) {
    float* out = tmp_.data() + t * d;
    for (int32_t j = 0; j < k; ++j) {
      float* y = moe_slots_.data() + (t * k + j) * d;
      kernels::scale(y, moe_weight_[static_cast<size_t>(t * k + j)], d);
      if (j == 0) {
        std::copy(y, y + d, out);
      } else {
        kernels::add(out, y, d);
      }
    }
  }
  if (moe.up_shexp.data != nullptr) {
    run_expert(moe.gate_shexp, moe.up_shexp, moe.down_shexp, nullptr, nullptr, nullptr, xn_.data(), n);
    for (int64_t t = 0; t < n; ++t) kernels::add(tmp_.data() + t * d, moe_y_.data() + t * d, d);
  }
}

}  // namespace hearth::model
