// Scalar reference dequantizers for the linear block types (the non-linear ones are in
// quantize_nonlinear.cpp), and the DType-dispatching entry points
// (dequantize_row, quantize_row, dequantize_tensor) that check sizes and alignment so bad
// input becomes an error value. Each dequantizer decodes the layout documented in
// quant_blocks.h; SIMD kernels added later are tested against these.
#include <cstring>
#include <string>

#include "tensor/fp16.h"
#include "tensor/quantize.h"

namespace hearth {

void dequantize_row_q4_0(const BlockQ4_0* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float d = fp16_to_fp32(src[i].d);
    float* y = dst + i * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = static_cast<float>((src[i].qs[j] & 0x0F) - 8) * d;
      y[j + kQK / 2] = static_cast<float>((src[i].qs[j] >> 4) - 8) * d;
    }
  }
}

void dequantize_row_q4_1(const BlockQ4_1* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float d = fp16_to_fp32(src[i].d);
    const float m = fp16_to_fp32(src[i].m);
    float* y = dst + i * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = static_cast<float>(src[i].qs[j] & 0x0F) * d + m;
      y[j + kQK / 2] = static_cast<float>(src[i].qs[j] >> 4) * d + m;
    }
  }
}

namespace {
inline uint32_t load_qh(const uint8_t* qh) {
  return static_cast<uint32_t>(qh[0]) | (static_cast<uint32_t>(qh[1]) << 8) |
         (static_cast<uint32_t>(qh[2]) << 16) | (static_cast<uint32_t>(qh[3]) << 24);
}
}  // namespace

void dequantize_row_q5_0(const BlockQ5_0* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float d = fp16_to_fp32(src[i].d);
    const uint32_t qh = load_qh(src[i].qh);
    float* y = dst + i * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      const int h0 = static_cast<int>((qh >> j) & 1u) << 4;
      const int h1 = static_cast<int>((qh >> (j + kQK / 2)) & 1u) << 4;
      y[j] = static_cast<float>(((src[i].qs[j] & 0x0F) | h0) - 16) * d;
      y[j + kQK / 2] = static_cast<float>(((src[i].qs[j] >> 4) | h1) - 16) * d;
    }
  }
}

void dequantize_row_q5_1(const BlockQ5_1* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float d = fp16_to_fp32(src[i].d);
    const float m = fp16_to_fp32(src[i].m);
    const uint32_t qh = load_qh(src[i].qh);
    float* y = dst + i * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      const int h0 = static_cast<int>((qh >> j) & 1u) << 4;
      const int h1 = static_cast<int>((qh >> (j + kQK / 2)) & 1u) << 4;
      y[j] = static_cast<float>((src[i].qs[j] & 0x0F) | h0) * d + m;
      y[j + kQK / 2] = static_cast<float>((src[i].qs[j] >> 4) | h1) * d + m;
    }
  }
}

void dequantize_row_q8_0(const BlockQ8_0* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float d = fp16_to_fp32(src[i].d);
    for (int j = 0; j < kQK; ++j) dst[i * kQK + j] = static_cast<float>(src[i].qs[j]) * d;
  }
}

void dequantize_row_q8_1(const BlockQ8_1* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float d = fp16_to_fp32(src[i].d);
    for (int j = 0; j < kQK; ++j) dst[i * kQK + j] = static_cast<float>(src[i].qs[j]) * d;
  }
}

void dequantize_row_q2_k(const BlockQ2_K* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const BlockQ2_K& b = src[i];
    const float d = fp16_to_fp32(b.d);
    const float dmin = fp16_to_fp32(b.dmin);
    float* y = dst + i * kQK_K;
    // Element 128 h + 32 j + 16 k + l sits in bits 2 j of qs[32 h + 16 k + l], group 8 h + 2 j + k.
    for (int h = 0; h < 2; ++h) {
      const uint8_t* q = b.qs + 32 * h;
      for (int j = 0; j < 4; ++j) {
        for (int k = 0; k < 2; ++k) {
          const int sc = b.scales[8 * h + 2 * j + k];
          const float dl = d * static_cast<float>(sc & 0xF);
          const float ml = dmin * static_cast<float>(sc >> 4);
          float* out = y + 128 * h + 32 * j + 16 * k;
          for (int l = 0; l < 16; ++l) out[l] = dl * static_cast<float>((q[16 * k + l] >> (2 * j)) & 3) - ml;
        }
      }
    }
  }
}

void dequantize_row_q3_k(const BlockQ3_K* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const BlockQ3_K& b = src[i];
    const float d_all = fp16_to_fp32(b.d);
    float* y = dst + i * kQK_K;
    // Low bits as in Q2_K; the high bit of element 128 h + 32 j + 16 k + l is bit 4 h + j of
    // hmask[16 k + l]; a clear high bit means q - 4.
    for (int h = 0; h < 2; ++h) {
      const uint8_t* q = b.qs + 32 * h;
      for (int j = 0; j < 4; ++j) {
        const int hbit = 4 * h + j;
        for (int k = 0; k < 2; ++k) {
          const float dl = d_all * static_cast<float>(q3k_scale(8 * h + 2 * j + k, b.scales) - 32);
          float* out = y + 128 * h + 32 * j + 16 * k;
          for (int l = 0; l < 16; ++l) {
            const int idx = 16 * k + l;
            const int low = (q[idx] >> (2 * j)) & 3;
            const int high = (b.hmask[idx] >> hbit) & 1;
            out[l] = dl * static_cast<float>(low - 4 + 4 * high);
          }
        }
      }
    }
  }
}

void dequantize_row_q4_k(const BlockQ4_K* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const BlockQ4_K& b = src[i];
    const float d = fp16_to_fp32(b.d);
    const float dmin = fp16_to_fp32(b.dmin);
    float* y = dst + i * kQK_K;
    for (int g = 0; g < 8; ++g) {
      uint8_t sc, m;
      kquant_scale_min(g, b.scales, &sc, &m);
      const float dl = d * static_cast<float>(sc);
      const float ml = dmin * static_cast<float>(m);
      const uint8_t* q = b.qs + 32 * (g / 2);
      const int shift = (g % 2) * 4;
      for (int l = 0; l < 32; ++l) y[32 * g + l] = dl * static_cast<float>((q[l] >> shift) & 0xF) - ml;
    }
  }
}

void dequantize_row_q5_k(const BlockQ5_K* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const BlockQ5_K& b = src[i];
    const float d = fp16_to_fp32(b.d);
    const float dmin = fp16_to_fp32(b.dmin);
    float* y = dst + i * kQK_K;
    for (int g = 0; g < 8; ++g) {
      uint8_t sc, m;
      kquant_scale_min(g, b.scales, &sc, &m);
      const float dl = d * static_cast<float>(sc);
      const float ml = dmin * static_cast<float>(m);
      const uint8_t* q = b.qs + 32 * (g / 2);
      const int shift = (g % 2) * 4;
      for (int l = 0; l < 32; ++l) {
        const int v = ((q[l] >> shift) & 0xF) | (((b.qh[l] >> g) & 1) << 4);
        y[32 * g + l] = dl * static_cast<float>(v) - ml;
      }
    }
  }
}

void dequantize_row_q6_k(const BlockQ6_K* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const BlockQ6_K& b = src[i];
    const float d = fp16_to_fp32(b.d);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = b.ql + 64 * h;
      const uint8_t* qh = b.qh + 32 * h;
      const int8_t* sc = b.scales + 8 * h;
      float* y = dst + i * kQK_K + 128 * h;
      for (int l = 0; l < 32; ++l) {
        const int g = l / 16;
        const int q1 = ((ql[l] & 0xF) | ((qh[l] & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[g]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[g + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[g + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[g + 6]) * static_cast<float>(q4);
      }
    }
  }
}

void dequantize_row_q8_k(const BlockQ8_K* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    for (int j = 0; j < kQK_K; ++j) dst[i * kQK_K + j] = src[i].d * static_cast<float>(src[i].qs[j]);
  }
}

bool dtype_convertible(DType type) {
  switch (type) {
    case DType::kF32: case DType::kF16: case DType::kBF16:
    case DType::kQ4_0: case DType::kQ4_1: case DType::kQ5_0: case DType::kQ5_1:
    case DType::kQ8_0: case DType::kQ8_1:
    case DType::kQ2_K: case DType::kQ3_K: case DType::kQ4_K: case DType::kQ5_K:
    case DType::kQ6_K: case DType::kQ8_K:
    case DType::kIQ4_NL: case DType::kIQ4_XS: case DType::kMXFP4:
      return true;
    default:
      return false;
  }
}

namespace {

size_t block_alignment(DType type) {
  switch (type) {
    case DType::kF32: case DType::kQ8_K: return 4;
    case DType::kMXFP4: return 1;
    default: return 2;
  }
}

Status check_conversion(DType type, const void* data, int64_t n, const char* what) {
  if (!dtype_convertible(type)) {
    return make_error(ErrorKind::kUnsupported,
                      std::string("cannot ") + what + " type " + std::string(dtype_name(type)));
  }
  if (n < 0) return make_error(ErrorKind::kInvalidArgument, "negative element count " + std::to_string(n));
  const auto& info = dtype_info(type);
  if (n % info.block_elems != 0) {
    return make_error(ErrorKind::kInvalidArgument,
                      std::to_string(n) + " elements is not a multiple of the " + std::string(info.name) +
                          " block size " + std::to_string(info.block_elems));
  }
  if (n > 0 && data == nullptr) return make_error(ErrorKind::kInvalidArgument, "null tensor data");
  if (reinterpret_cast<uintptr_t>(data) % block_alignment(type) != 0) {
    return make_error(ErrorKind::kInvalidArgument, std::string(info.name) + " data is not aligned to " +
                                                       std::to_string(block_alignment(type)) + " bytes");
  }
  return ok_status();
}

}  // namespace

Status dequantize_row(DType type, const void* src, float* dst, int64_t n) {
  HEARTH_TRY(check_conversion(type, src, n, "dequantize"));
  switch (type) {
    case DType::kF32: if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); break;
    case DType::kF16: fp16_to_fp32_row(static_cast<const uint16_t*>(src), dst, n); break;
    case DType::kBF16: bf16_to_fp32_row(static_cast<const uint16_t*>(src), dst, n); break;
    case DType::kQ4_0: dequantize_row_q4_0(static_cast<const BlockQ4_0*>(src), dst, n); break;
    case DType::kQ4_1: dequantize_row_q4_1(static_cast<const BlockQ4_1*>(src), dst, n); break;
    case DType::kQ5_0: dequantize_row_q5_0(static_cast<const BlockQ5_0*>(src), dst, n); break;
    case DType::kQ5_1: dequantize_row_q5_1(static_cast<const BlockQ5_1*>(src), dst, n); break;
    case DType::kQ8_0: dequantize_row_q8_0(static_cast<const BlockQ8_0*>(src), dst, n); break;
    case DType::kQ8_1: dequantize_row_q8_1(static_cast<const BlockQ8_1*>(src), dst, n); break;
    case DType::kQ2_K: dequantize_row_q2_k(static_cast<const BlockQ2_K*>(src), dst, n); break;
    case DType::kQ3_K: dequantize_row_q3_k(static_cast<const BlockQ3_K*>(src), dst, n); break;
    case DType::kQ4_K: dequantize_row_q4_k(static_cast<const BlockQ4_K*>(src), dst, n); break;
    case DType::kQ5_K: dequantize_row_q5_k(static_cast<const BlockQ5_K*>(src), dst, n); break;
    case DType::kQ6_K: dequantize_row_q6_k(static_cast<const BlockQ6_K*>(src), dst, n); break;
    case DType::kQ8_K: dequantize_row_q8_k(static_cast<const BlockQ8_K*>(src), dst, n); break;
    case DType::kIQ4_NL: dequantize_row_iq4_nl(static_cast<const BlockIQ4_NL*>(src), dst, n); break;
    case DType::kIQ4_XS: dequantize_row_iq4_xs(static_cast<const BlockIQ4_XS*>(src), dst, n); break;
    case DType::kMXFP4: dequantize_row_mxfp4(static_cast<const BlockMXFP4*>(src), dst, n); break;
    default: return make_error(ErrorKind::kInternal, "unhandled convertible type");
  }
  return ok_status();
}

Status quantize_row(DType type, const float* src, void* dst, int64_t n) {
  HEARTH_TRY(check_conversion(type, dst, n, "quantize to"));
  switch (type) {
    case DType::kF32: if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); break;
    case DType::kF16: fp32_to_fp16_row(src, static_cast<uint16_t*>(dst), n); break;
    case DType::kBF16: fp32_to_bf16_row(src, static_cast<uint16_t*>(dst), n); break;
    case DType::kQ4_0: quantize_row_q4_0(src, static_cast<BlockQ4_0*>(dst), n); break;
    case DType::kQ4_1: quantize_row_q4_1(src, static_cast<BlockQ4_1*>(dst), n); break;
    case DType::kQ5_0: quantize_row_q5_0(src, static_cast<BlockQ5_0*>(dst), n); break;
    case DType::kQ5_1: quantize_row_q5_1(src, static_cast<BlockQ5_1*>(dst), n); break;
    case DType::kQ8_0: quantize_row_q8_0(src, static_cast<BlockQ8_0*>(dst), n); break;
    case DType::kQ8_1: quantize_row_q8_1(src, static_cast<BlockQ8_1*>(dst), n); break;
    case DType::kQ2_K: quantize_row_q2_k(src, static_cast<BlockQ2_K*>(dst), n); break;
    case DType::kQ3_K: quantize_row_q3_k(src, static_cast<BlockQ3_K*>(dst), n); break;
    case DType::kQ4_K: quantize_row_q4_k(src, static_cast<BlockQ4_K*>(dst), n); break;
    case DType::kQ5_K: quantize_row_q5_k(src, static_cast<BlockQ5_K*>(dst), n); break;
    case DType::kQ6_K: quantize_row_q6_k(src, static_cast<BlockQ6_K*>(dst), n); break;
    case DType::kQ8_K: quantize_row_q8_k(src, static_cast<BlockQ8_K*>(dst), n); break;
    case DType::kIQ4_NL: quantize_row_iq4_nl(src, static_cast<BlockIQ4_NL*>(dst), n); break;
    case DType::kIQ4_XS: quantize_row_iq4_xs(src, static_cast<BlockIQ4_XS*>(dst), n); break;
    case DType::kMXFP4: quantize_row_mxfp4(src, static_cast<BlockMXFP4*>(dst), n); break;
    default: return make_error(ErrorKind::kInternal, "unhandled convertible type");
  }
  return ok_status();
}

Status dequantize_tensor(DType type, const void* src, uint64_t src_bytes, float* dst, int64_t n) {
  if (n < 0) return make_error(ErrorKind::kInvalidArgument, "negative element count " + std::to_string(n));
  HEARTH_ASSIGN(const uint64_t expected, dtype_row_bytes(type, static_cast<uint64_t>(n)));
  if (expected != src_bytes) {
    return make_error(ErrorKind::kCorrupt, std::to_string(n) + " " + std::string(dtype_name(type)) +
                                               " elements take " + std::to_string(expected) +
                                               " bytes, but the tensor has " + std::to_string(src_bytes));
  }
  return dequantize_row(type, src, dst, n);
}

Result<std::vector<float>> dequantize_tensor(DType type, const void* src, uint64_t src_bytes, int64_t n) {
  if (n < 0) return make_error(ErrorKind::kInvalidArgument, "negative element count " + std::to_string(n));
  std::vector<float> out(static_cast<size_t>(n));
  HEARTH_TRY(dequantize_tensor(type, src, src_bytes, out.data(), n));
  return out;
}

}  // namespace hearth
