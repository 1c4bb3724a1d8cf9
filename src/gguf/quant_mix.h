// Which type each tensor of a model gets for a given file type, following the rules
// llama-quantize applies without an importance matrix (so that files made here have the same
// tensor types as the files users download): norms and other 1-D tensors stay F32, the output
// matrix (token_embd when tied) gets Q6_K, the _M mixes raise some attn_v and ffn_down matrices
// to Q6_K (and a fused attn_qkv one step), the IQ4 mixes raise attn_v (grouped-query models)
// and the first eighth of ffn_down to Q5_K, and K-quants fall back to legacy types (IQ4_XS to
// IQ4_NL) when a row length is not a multiple of 256. Shared by make-model (devtools) and the store's quantizer.
#pragma once

#include <cstdint>
#include <string>

#include "tensor/dtype.h"
#include "util/result.h"

namespace hearth::gguf {

enum class FileType { kF16, kQ8_0, kQ4_0, kQ4_K_M, kQ5_K_M, kQ6_K, kIQ4_NL, kIQ4_XS };

// "f16", "q8_0", "q4_0", "q4_k_m", "q5_k_m", "q6_k", "iq4_nl", "iq4_xs" (any case)
Result<FileType> file_type_from_name(const std::string& name);
const char* file_type_name(FileType t);                          // "Q4_K_M"
uint32_t file_type_gguf_id(FileType t);                           // general.file_type (llama_ftype)
bool file_type_quantized(FileType t);

struct TensorRole {
  std::string name;    // GGUF tensor name
  int64_t cols = 0;    // ne[0]
  int64_t rows = 1;    // ne[1]; 1 for vectors
  bool is_matrix = false;
  bool is_output = false;  // output.weight, or token_embd.weight of a tied model
  int32_t layer = -1;      // block index for blk.N.* tensors
  int32_t n_layer = 0;
  int32_t n_gqa = 1;       // query heads per KV head (the IQ4 mixes raise attn_v when >= 4)
};

// The storage type of one tensor.
DType tensor_type_for(FileType ftype, const TensorRole& t);
// The type tensor_type_for picks before the row-length fallback (to tell when one happened).
DType preferred_tensor_type(FileType ftype, const TensorRole& t);

}  // namespace hearth::gguf
