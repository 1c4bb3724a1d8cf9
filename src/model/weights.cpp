// Tensor lookup with shape checks (see weights.h).
#include "model/weights.h"

#include <cmath>

#include "tensor/quantize.h"

namespace hearth::model {
namespace {
std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}
}  // namespace

std::string layer_tensor(int32_t il, const char* suffix) { return "blk." + std::to_string(il) + "." + suffix; }

Result<kernels::WeightView> WeightBinder::matrix(const std::string& name, int64_t cols, int64_t rows) {
  const gguf::TensorInfo* t = file_.find_tensor(name);
  if (t == nullptr) return make_error(ErrorKind::kNotFound, "model is missing tensor '" + name + "'");
  std::vector<int64_t> shape = t->shape;
  while (shape.size() > 2 && shape.back() == 1) shape.pop_back();
  if (shape.size() == 1) shape.push_back(1);
  if (shape.size() != 2 || shape[0] != cols || shape[1] != rows) {
    return make_error(ErrorKind::kCorrupt, "tensor '" + name + "' has shape " + shape_text(t->shape) + ", expected [" +
                                               std::to_string(cols) + ", " + std::to_string(rows) + "]");
  }
  if (!dtype_convertible(t->type)) {
    return make_error(ErrorKind::kUnsupported,
                      "tensor '" + name + "' has type " + std::string(dtype_name(t->type)) + ", which Hearth cannot compute with");
  }
  kernels::WeightView w;
  w.type = t->type;
  w.data = t->data;
  w.cols = cols;
  w.rows = rows;
  HEARTH_ASSIGN(w.row_bytes, dtype_row_bytes(t->type, static_cast<uint64_t>(cols)));
  return w;
}

Result<std::vector<kernels::WeightView>> WeightBinder::experts(const std::string& name, int64_t cols, int64_t rows,
                                                              int64_t n_expert) {
  const gguf::TensorInfo* t = file_.find_tensor(name);
  if (t == nullptr) return make_error(ErrorKind::kNotFound, "model is missing expert tensor '" + name + "'");
  std::vector<int64_t> shape = t->shape;
  while (shape.size() < 3) shape.push_back(1);
  if (shape.size() != 3 || shape[0] != cols || shape[1] != rows || shape[2] != n_expert) {
    return make_error(ErrorKind::kCorrupt, "expert tensor '" + name + "' has shape " + shape_text(t->shape) +
                                               ", expected [" + std::to_string(cols) + ", " + std::to_string(rows) +
                                               ", " + std::to_string(n_expert) + "] (expert_count " +
                                               std::to_string(n_expert) + ")");
  }
  if (!dtype_convertible(t->type)) {
    return make_error(ErrorKind::kUnsupported,
                      "tensor '" + name + "' has type " + std::string(dtype_name(t->type)) + ", which Hearth cannot compute with");
  }
  kernels::WeightView w;
  w.type = t->type;
  w.cols = cols;
  w.rows = rows;
  HEARTH_ASSIGN(w.row_bytes, dtype_row_bytes(t->type, static_cast<uint64_t>(cols)));
  const size_t expert_bytes = w.row_bytes * static_cast<size_t>(rows);
  if (expert_bytes * static_cast<size_t>(n_expert) > t->size_bytes) {
    return make_error(ErrorKind::kCorrupt, "expert tensor '" + name + "' holds fewer bytes than its shape needs");
  }
  std::vector<kernels::WeightView> out(static_cast<size_t>(n_expert), w);
  for (int64_t e = 0; e < n_expert; ++e) out[static_cast<size_t>(e)].data = t->data + static_cast<size_t>(e) * expert_bytes;
  return out;
}

Result<kernels::WeightView> WeightBinder::optional_matrix(const std::string& name, int64_t cols, int64_t rows) {
  if (!has(name)) return kernels::WeightView{};
  return matrix(name, cols, rows);
}

Result<const float*> WeightBinder::vector(const std::string& name, int64_t n) {
  const gguf::TensorInfo* t = file_.find_tensor(name);
  if (t == nullptr) return make_error(ErrorKind::kNotFound, "model is missing tensor '" + name + "'");
  if (t->element_count() != n) {
    return make_error(ErrorKind::kCorrupt, "tensor '" + name + "' has shape " + shape_text(t->shape) + ", expected " +
                                               std::to_string(n) + " elements");
  }
  // Always a copy, never a pointer into the mapping: the page cache keeps files in large folios,
  // and one read of a norm through the mapping maps the whole folio around it (up to 2 MB of the
  // neighbouring matrices), which counts as resident memory when those matrices were moved into
  // the interleaved layout (qwen2-0.5b: 130 MB).
  auto buf = std::make_unique<std::vector<float>>(static_cast<size_t>(n));
  auto st = dequantize_tensor(t->type, t->data, t->size_bytes, buf->data(), n);
  if (!st.ok()) return st.error().with_context("tensor '" + name + "'");
  const float* p = buf->data();
  owned_.push_back(std::move(buf));
  return p;
}

Result<const float*> WeightBinder::optional_vector(const std::string& name, int64_t n) {
  if (!has(name)) return static_cast<const float*>(nullptr);
  return vector(name, n);
}

Result<const float*> WeightBinder::optional_rope_factors(const std::string& name, int64_t n) {
  HEARTH_ASSIGN(const float* factors, optional_vector(name, n));
  if (factors == nullptr) return factors;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(factors[i]) || factors[i] <= 0.0f) {
      return make_error(ErrorKind::kCorrupt, "tensor '" + name + "': RoPE frequency factors must be positive, element " +
                                                 std::to_string(i) + " is " + std::to_string(factors[i]));
    }
  }
  return factors;
}

}  // namespace hearth::model
