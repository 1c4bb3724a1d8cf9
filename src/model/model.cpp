// Loading a model from GGUF (see model.h).
#include "model/model.h"

#include <algorithm>
#include <chrono>

#include "kernels/ops.h"
#include "model/weight_interleaving.h"

namespace hearth::model {

Result<std::unique_ptr<Model>> Model::load(const std::string& path, const LoadOptions& options) {
  auto start = std::chrono::steady_clock::now();
  auto file = gguf::File::open(path);
  if (!file.ok()) return file.error();
  auto model = from_file(std::move(file).value(), options);
  if (!model.ok()) return model.error().with_context(path);
  (*model)->load_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return model;
}

Result<std::unique_ptr<Model>> Model::from_file(gguf::File file, const LoadOptions& options) {
  std::unique_ptr<Model> m(new Model());
  m->file_ = std::move(file);
  const gguf::TensorInfo* embd = m->file_.find_tensor("token_embd.weight");
  if (embd == nullptr) return make_error(ErrorKind::kNotFound, "model is missing tensor 'token_embd.weight'");
  if (embd->shape.size() < 2 || embd->shape[1] <= 0 || embd->shape[1] > (1 << 24)) {
    return make_error(ErrorKind::kCorrupt, "tensor 'token_embd.weight' has an implausible vocabulary dimension");
  }
  HEARTH_ASSIGN(m->hparams_, load_hparams(m->file_, static_cast<int32_t>(embd->shape[1])));
  WeightBinder binder(m->file_);
  HEARTH_TRY(bind_weights(m->hparams_, binder, m->weights_));
  m->owned_ = binder.take_owned();
  m->hparams_.rope.freq_factors = m->weights_.rope_freqs;
  if (options.interleave) {
    std::unique_ptr<ThreadPool> own;
    ThreadPool* pool = options.pool;
    if (pool == nullptr) pool = (own = std::make_unique<ThreadPool>(1)).get();
    HEARTH_TRY(m->interleave_matrices(*pool));
  }
  return m;
}

Status Model::interleave_matrices(ThreadPool& pool, const std::function<void(size_t done, size_t total)>& on_bytes) {
  if (interleaved_.size() > 0) return ok_status();
  HEARTH_ASSIGN(interleaved_, model::interleave_matrices(weights_, file_, pool, on_bytes));
  return ok_status();
}

size_t Model::release_layer_matrices(int32_t n_layers) {
  size_t released = 0;
  const uint8_t* lo = interleaved_.data();
  const uint8_t* hi = lo + interleaved_.size();
  const int32_t n = std::min<int32_t>(n_layers, static_cast<int32_t>(weights_.layers.size()));
  for (int32_t il = 0; il < n; ++il) {
    const LayerWeights& L = weights_.layers[static_cast<size_t>(il)];
    for (const kernels::WeightView* v : {&L.wq, &L.wk, &L.wv, &L.wqkv, &L.wo, &L.ffn_gate, &L.ffn_up, &L.ffn_down}) {
      if (v->data == nullptr) continue;
      const size_t bytes = static_cast<size_t>(v->rows) * v->row_bytes;
      if (v->interleaved && v->data >= lo && v->data + bytes <= hi) {
        release_mapped_pages(v->data, bytes);  // anonymous: the pages go back, zeros on touch
        released += bytes;
      } else {
        file_.release_bytes(v->data, bytes);
      }
    }
  }
  return released;
}

kernels::RopeParams Model::rope_params(int32_t n_ctx_per_seq) const {
  kernels::RopeParams p = hparams_.rope;
  if (weights_.rope_freqs != nullptr) return p;
  const int32_t n_ctx = n_ctx_per_seq > 0 ? n_ctx_per_seq : hparams_.n_ctx_train;
  p.freq_factors = n_ctx > hparams_.rope.n_ctx_orig ? weights_.rope_factors_long : weights_.rope_factors_short;
  return p;
}

kv::KvLayout Model::kv_layout(DType type, int32_t block_tokens) const {
  kv::KvLayout l;
  l.n_layers = hparams_.n_layer;
  l.k_row_elems = hparams_.n_head_kv * hparams_.head_dim_k;
  l.v_row_elems = hparams_.n_head_kv * hparams_.head_dim_v;
  l.block_tokens = block_tokens;
  l.type = type;
  // An F16 cache keeps K transposed and V by head where the decode kernels read K in whole
  // key groups.
  l.by_head = type == DType::kF16 && block_tokens % kernels::kTransposedKeyGroup == 0;
  return l;
}

kv::KvSliding Model::kv_sliding() const {
  kv::KvSliding s;
  if (hparams_.sliding_window <= 0) return s;
  s.window = hparams_.sliding_window;
  for (int32_t il = 0; il < hparams_.n_layer; ++il) s.layers.push_back(hparams_.layer_is_sliding(il));
  return s;
}

}  // namespace hearth::model
