// Which SIMD instruction sets this CPU (and its operating system) supports, and which kernel
// variant is in use. The variant is chosen once, at start-up, from CPUID; HEARTH_CPU=scalar|
// avx2|avx512 forces one. Tests switch variants with set_cpu_variant_for_testing to compare
// every variant with the scalar reference.
#pragma once

#include <string_view>
#include <vector>

#include "util/result.h"

namespace hearth::kernels {

struct CpuFeatures {
  bool avx = false;
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512vnni = false;
  bool avx512bf16 = false;
  bool avx_vnni = false;
  bool os_saves_ymm = false;  // XCR0 says the OS saves the AVX state
  bool os_saves_zmm = false;  // ... and the AVX-512 state (opmask, upper ZMM)
};

// Read once with CPUID/XGETBV.
const CpuFeatures& cpu_features();

enum class CpuVariant {
  kScalar,  // portable C++, the reference every other variant is tested against
  kAvx2,    // AVX2 + FMA + F16C
  kAvx512,  // AVX-512 F/BW/VL/DQ + VNNI (plus the AVX2 set)
};

std::string_view cpu_variant_name(CpuVariant v);
// "scalar", "avx2" or "avx512" (case-insensitive); an error naming the accepted values otherwise.
Result<CpuVariant> parse_cpu_variant(std::string_view text);
bool cpu_variant_supported(CpuVariant v);
// The fastest supported variant.
CpuVariant best_cpu_variant();
// Every supported variant, scalar first.
std::vector<CpuVariant> supported_cpu_variants();

// The variant HEARTH_CPU asks for (the best one when unset or empty). Errors: an unknown
// name, or a variant this CPU cannot run (the message says which instructions are missing).
Result<CpuVariant> cpu_variant_from_env();

// Selects the variant from HEARTH_CPU. Programs call this once at start-up and report the
// error; without it the first kernel call selects the best variant (or the forced one when
// it is supported, logging a warning otherwise).
Status init_cpu_variant();

// The variant the kernels use now.
CpuVariant active_cpu_variant();

// Switches variant; an error if this CPU cannot run it. Not for use while kernels run.
Status set_cpu_variant_for_testing(CpuVariant v);

// Whether the AVX-512 variant multiplies a BF16 KV cache with the AVX512_BF16 instruction
// (vdpbf16ps): where the CPU has it, unless a test turned it off (the variant then emulates it
// with FMAs, with the same results but for denormal inputs).
bool avx512_bf16_in_use();
// Turns that instruction off (or back on: an error if this CPU lacks it). Not while kernels run.
Status set_avx512_bf16_for_testing(bool use);

}  // namespace hearth::kernels
