// llama-quantize's type choices for the file types make-model writes (see quant_mix.h).
#include "gguf/quant_mix.h"

namespace hearth::gguf {
namespace {

struct FileTypeRow {
  FileType type;
  const char* flag;
  const char* name;
  uint32_t gguf_id;
  DType base;
};
constexpr FileTypeRow kFileTypes[] = {
    {FileType::kF16, "f16", "F16", 1, DType::kF16},       {FileType::kQ8_0, "q8_0", "Q8_0", 7, DType::kQ8_0},
    {FileType::kQ4_0, "q4_0", "Q4_0", 2, DType::kQ4_0},   {FileType::kQ4_K_M, "q4_k_m", "Q4_K_M", 15, DType::kQ4_K},
    {FileType::kQ5_K_M, "q5_k_m", "Q5_K_M", 17, DType::kQ5_K}, {FileType::kQ6_K, "q6_k", "Q6_K", 18, DType::kQ6_K},
    {FileType::kIQ4_NL, "iq4_nl", "IQ4_NL", 25, DType::kIQ4_NL}, {FileType::kIQ4_XS, "iq4_xs", "IQ4_XS", 30, DType::kIQ4_XS},
};

const FileTypeRow& row_of(FileType t) {
  for (const auto& r : kFileTypes) {
    if (r.type == t) return r;
  }
  return kFileTypes[0];
}

// Layers that get more bits in the _M mixes: the first and last eighth and every third one
// between.
bool use_more_bits(int32_t i_layer, int32_t n_layers) {
  return i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 || (i_layer - n_layers / 8) % 3 == 2;
}

bool has_suffix(const std::string& s, const char* suffix) {
  const std::string x(suffix);
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

// The type a block type falls back to when rows are not a multiple of its block size: a
// K-quant takes a legacy type of 32-element blocks, and F16 when even that does not fit.
DType fallback_for(DType t, int64_t cols) {
  DType f = DType::kF16;
  switch (t) {
    case DType::kQ4_K: f = DType::kQ5_0; break;
    case DType::kQ5_K: f = DType::kQ5_1; break;
    case DType::kQ6_K: f = DType::kQ8_0; break;
    case DType::kIQ4_XS: f = DType::kIQ4_NL; break;
    default: break;
  }
  return cols % dtype_info(f).block_elems == 0 ? f : DType::kF16;
}

}  // namespace

Result<FileType> file_type_from_name(const std::string& name) {
  std::string lower;
  for (char c : name) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  std::string known;
  for (const auto& r : kFileTypes) {
    if (lower == r.flag) return r.type;
    known += std::string(known.empty() ? "" : ", ") + r.flag;
  }
  return make_error(ErrorKind::kInvalidArgument, "unknown type '" + name + "' (known: " + known + ")");
}

const char* file_type_name(FileType t) { return row_of(t).name; }
uint32_t file_type_gguf_id(FileType t) { return row_of(t).gguf_id; }
bool file_type_quantized(FileType t) { return t != FileType::kF16; }

DType preferred_tensor_type(FileType ftype, const TensorRole& t) {
  if (!t.is_matrix) return DType::kF32;
  DType type = row_of(ftype).base;
  if (!file_type_quantized(ftype)) return type;
  const bool m_mix = ftype == FileType::kQ4_K_M || ftype == FileType::kQ5_K_M;
  const bool iq4_mix = ftype == FileType::kIQ4_NL || ftype == FileType::kIQ4_XS;
  if (t.is_output) {
    if (type != DType::kQ8_0) type = DType::kQ6_K;
  } else if (iq4_mix) {
    if (has_suffix(t.name, "attn_v.weight") && t.n_gqa >= 4) type = DType::kQ5_K;
    if (has_suffix(t.name, "ffn_down.weight") && t.layer < t.n_layer / 8) type = DType::kQ5_K;
  } else if (m_mix) {
    if (has_suffix(t.name, "attn_v.weight") || has_suffix(t.name, "ffn_down.weight")) {
      if (use_more_bits(t.layer, t.n_layer)) type = DType::kQ6_K;
    } else if (has_suffix(t.name, "attn_qkv.weight")) {
      type = ftype == FileType::kQ4_K_M ? DType::kQ5_K : DType::kQ6_K;
    }
  }
  return type;
}

DType tensor_type_for(FileType ftype, const TensorRole& t) {
  DType type = preferred_tensor_type(ftype, t);
  if (!t.is_matrix || !file_type_quantized(ftype)) return type;
  if (t.cols % dtype_info(type).block_elems != 0) {
    // The output matrix of an odd width takes Q8_0 directly (llama-quantize checks it first).
    type = t.is_output ? DType::kQ8_0 : fallback_for(type, t.cols);
    if (t.cols % dtype_info(type).block_elems != 0) type = DType::kF16;
  }
  return type;
}

}  // namespace hearth::gguf
