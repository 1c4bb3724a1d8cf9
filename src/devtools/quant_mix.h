// Which type each tensor of a model gets for a given file type, following the rules
// llama-quantize applies without an importance matrix (so that files made here have the same
// tensor types as the files users download): norms and other 1-D tensors stay F32, the output
// matrix (token_embd when tied) gets Q6_K, Q4_K_M raises some attn_v and ffn_down matrices to
// Q6_K, and K-quants fall back to legacy types when a row length is not a multiple of 256.
#pragma once

#include <cstdint>
#include <string>

#include "tensor/dtype.h"
#include "util/result.h"

namespace hearth::devtools {

enum class FileType { kF16, kQ8_0, kQ4_0, kQ4_K_M, kQ6_K };

Result<FileType> file_type_from_name(const std::string& name);  // "f16", "q8_0", "q4_0", "q4_k_m", "q6_k"
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
};

// The storage type of one tensor.
DType tensor_type_for(FileType ftype, const TensorRole& t);

}  // namespace hearth::devtools
