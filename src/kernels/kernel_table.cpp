// Builds the per-variant dispatch tables once and hands out the active one.
#include "kernels/kernel_table.h"

namespace hearth::kernels {
namespace {

struct AllTables {
  KernelTable scalar;
  KernelTable avx2;
  KernelTable avx512;
  AllTables() {
    fill_reference_kernels(scalar);
    scalar.variant = CpuVariant::kScalar;
    avx2 = scalar;
    avx512 = scalar;
    // ISA files are compiled for their instruction set, so even their fill functions run
    // only where the CPU supports it.
    if (cpu_variant_supported(CpuVariant::kAvx2)) {
      fill_avx2_kernels(avx2);
      avx2.variant = CpuVariant::kAvx2;
    }
    if (cpu_variant_supported(CpuVariant::kAvx512)) {
      fill_avx2_kernels(avx512);
      fill_avx512_kernels(avx512);
      avx512.variant = CpuVariant::kAvx512;
    }
  }
};

const AllTables& all_tables() {
  static const AllTables tables;
  return tables;
}

}  // namespace

DType activation_type(DType w) {
  switch (w) {
    case DType::kF16: return DType::kF16;
    case DType::kBF16: return DType::kBF16;
    case DType::kQ4_0:
    case DType::kQ5_0:
    case DType::kQ8_0:
    case DType::kIQ4_NL:
    case DType::kMXFP4: return DType::kQ8_0;
    case DType::kQ4_1:
    case DType::kQ5_1: return DType::kQ8_1;
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kIQ4_XS: return DType::kQ8_K;
    default: return DType::kF32;
  }
}

const KernelTable& kernels_for(CpuVariant v) {
  const AllTables& t = all_tables();
  if (!cpu_variant_supported(v)) return t.scalar;
  switch (v) {
    case CpuVariant::kScalar: return t.scalar;
    case CpuVariant::kAvx2: return t.avx2;
    case CpuVariant::kAvx512: return t.avx512;
  }
  return t.scalar;
}

const KernelTable& active_kernels() { return kernels_for(active_cpu_variant()); }

}  // namespace hearth::kernels
