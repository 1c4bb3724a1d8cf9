// Tensor element types as numbered in GGUF files (ggml_type ids), with each type's block
// geometry: how many elements one block holds and how many bytes it takes. These numbers are
// the file format; they must equal the ecosystem's so that files from other tools load.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "util/result.h"

namespace hearth {

enum class DType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ4_NL = 20,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kBF16 = 30,
  kMXFP4 = 39,
};

struct DTypeInfo {
  DType type;
  std::string_view name;   // "Q4_K", as tools print it
  uint32_t block_elems;    // elements per block (1 for plain types)
  uint32_t block_bytes;    // bytes per block
  bool quantized;
};

// Known types only (the ones Hearth can size); nullopt for ids it does not know, including
// types the ecosystem has retired or that Hearth does not support yet (most IQ*, TQ*).
std::optional<DTypeInfo> dtype_info(uint32_t ggml_type_id);
const DTypeInfo& dtype_info(DType type);
std::string_view dtype_name(DType type);
std::optional<DType> dtype_from_name(std::string_view name);  // "q4_k" or "Q4_K"

// Bytes taken by a row of n elements; an error when n is not a multiple of the block size or
// the size overflows.
Result<uint64_t> dtype_row_bytes(DType type, uint64_t n_elements);

}  // namespace hearth
