// The table of tensor element types (see dtype.h).
#include "tensor/dtype.h"

#include <cctype>
#include <string>

namespace hearth {
namespace {

constexpr DTypeInfo kTypes[] = {
    {DType::kF32, "F32", 1, 4, false},       {DType::kF16, "F16", 1, 2, false},
    {DType::kQ4_0, "Q4_0", 32, 18, true},    {DType::kQ4_1, "Q4_1", 32, 20, true},
    {DType::kQ5_0, "Q5_0", 32, 22, true},    {DType::kQ5_1, "Q5_1", 32, 24, true},
    {DType::kQ8_0, "Q8_0", 32, 34, true},    {DType::kQ8_1, "Q8_1", 32, 36, true},
    {DType::kQ2_K, "Q2_K", 256, 84, true},   {DType::kQ3_K, "Q3_K", 256, 110, true},
    {DType::kQ4_K, "Q4_K", 256, 144, true},  {DType::kQ5_K, "Q5_K", 256, 176, true},
    {DType::kQ6_K, "Q6_K", 256, 210, true},  {DType::kQ8_K, "Q8_K", 256, 292, true},
    {DType::kI8, "I8", 1, 1, false},         {DType::kI16, "I16", 1, 2, false},
    {DType::kI32, "I32", 1, 4, false},       {DType::kI64, "I64", 1, 8, false},
    {DType::kF64, "F64", 1, 8, false},       {DType::kBF16, "BF16", 1, 2, false},
    {DType::kIQ4_NL, "IQ4_NL", 32, 18, true}, {DType::kIQ4_XS, "IQ4_XS", 256, 136, true},
    {DType::kMXFP4, "MXFP4", 32, 17, true},
};

}  // namespace

std::optional<DTypeInfo> dtype_info(uint32_t id) {
  for (const auto& t : kTypes) {
    if (static_cast<uint32_t>(t.type) == id) return t;
  }
  return std::nullopt;
}

const DTypeInfo& dtype_info(DType type) {
  for (const auto& t : kTypes) {
    if (t.type == type) return t;
  }
  return kTypes[0];  // unreachable for valid enum values
}

std::string_view dtype_name(DType type) { return dtype_info(type).name; }

std::optional<DType> dtype_from_name(std::string_view name) {
  std::string upper;
  for (char c : name) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const auto& t : kTypes) {
    if (t.name == upper) return t.type;
  }
  return std::nullopt;
}

Result<uint64_t> dtype_row_bytes(DType type, uint64_t n) {
  const auto& info = dtype_info(type);
  if (n % info.block_elems != 0) {
    return make_error(ErrorKind::kCorrupt, std::to_string(n) + " elements is not a multiple of the " +
                                               std::string(info.name) + " block size " +
                                               std::to_string(info.block_elems));
  }
  uint64_t blocks = n / info.block_elems;
  if (blocks > UINT64_MAX / info.block_bytes) return make_error(ErrorKind::kOutOfRange, "tensor size overflows");
  return blocks * info.block_bytes;
}

}  // namespace hearth
