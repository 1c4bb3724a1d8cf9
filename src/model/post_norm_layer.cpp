// The post-norm layer (bert's): x = norm(x + attn(x)); x = norm(x + ffn(x)). Shares the
// attention and FFN blocks with the pre-norm layer (see forward.cpp, attention_block.cpp).
#include <algorithm>

#include "model/forward.h"

namespace hearth::model {

void ForwardPass::post_norm_layer(int32_t il, std::span<const BatchToken> batch, kv::KvCache& kv) {
  const LayerWeights& L = model_.weights().layers[static_cast<size_t>(il)];
  const int64_t n = static_cast<int64_t>(batch.size());
  const int64_t d = model_.hparams().n_embd;
  std::copy(x_.begin(), x_.begin() + n * d, xn_.begin());
  attention_block(il, batch, kv);
  for (int64_t t = 0; t < n; ++t) {
    float* xt = x_.data() + t * d;
    kernels::add(xt, tmp_.data() + t * d, d);
    norm_row(xt, L.attn_out_norm, L.attn_out_norm_b, xt);
  }
  std::copy(x_.begin(), x_.begin() + n * d, xn_.begin());
  ffn_block(il, n);
  for (int64_t t = 0; t < n; ++t) {
    float* xt = x_.data() + t * d;
    kernels::add(xt, tmp_.data() + t * d, d);
    norm_row(xt, L.out_norm, L.out_norm_b, xt);
  }
}

}  // namespace hearth::model
