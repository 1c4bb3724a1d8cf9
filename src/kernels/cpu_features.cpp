// CPUID/XGETBV feature detection and the choice of kernel variant (see cpu_features.h).
#include "kernels/cpu_features.h"

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <string>

#include "util/log.h"
#include "util/settings.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define HEARTH_X86 1
#endif

namespace hearth::kernels {
namespace {

#ifdef HEARTH_X86
uint64_t read_xcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}
#endif

CpuFeatures detect_features() {
  CpuFeatures f;
#ifdef HEARTH_X86
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return f;
  const unsigned max_leaf = a;
  __get_cpuid(1, &a, &b, &c, &d);
  const bool osxsave = (c >> 27) & 1;
  f.avx = (c >> 28) & 1;
  f.fma = (c >> 12) & 1;
  f.f16c = (c >> 29) & 1;
  if (osxsave) {
    const uint64_t xcr0 = read_xcr0();
    f.os_saves_ymm = (xcr0 & 0x6) == 0x6;
    f.os_saves_zmm = f.os_saves_ymm && (xcr0 & 0xE0) == 0xE0;
  }
  if (max_leaf >= 7) {
    __get_cpuid_count(7, 0, &a, &b, &c, &d);
    f.avx2 = (b >> 5) & 1;
    f.avx512f = (b >> 16) & 1;
    f.avx512dq = (b >> 17) & 1;
    f.avx512bw = (b >> 30) & 1;
    f.avx512vl = (b >> 31) & 1;
    f.avx512vnni = (c >> 11) & 1;
    __get_cpuid_count(7, 1, &a, &b, &c, &d);
    f.avx_vnni = (a >> 4) & 1;
    f.avx512bf16 = (a >> 5) & 1;
  }
#endif
  return f;
}

// Names of the instructions a variant needs that this CPU lacks ("" when none).
std::string missing_for(CpuVariant v) {
  const CpuFeatures& f = cpu_features();
  std::string missing;
  auto need = [&](bool have, const char* name) {
    if (have) return;
    if (!missing.empty()) missing += ", ";
    missing += name;
  };
  if (v == CpuVariant::kScalar) return missing;
  need(f.avx && f.os_saves_ymm, "AVX (with OS support)");
  need(f.avx2, "AVX2");
  need(f.fma, "FMA");
  need(f.f16c, "F16C");
  if (v == CpuVariant::kAvx2) return missing;
  need(f.os_saves_zmm, "OS support for AVX-512 state");
  need(f.avx512f, "AVX512F");
  need(f.avx512bw, "AVX512BW");
  need(f.avx512vl, "AVX512VL");
  need(f.avx512dq, "AVX512DQ");
  need(f.avx512vnni, "AVX512-VNNI");
  return missing;
}

std::atomic<int> g_active{-1};  // CpuVariant, or -1 before the first selection
std::atomic<int> g_bf16_off{0};  // a test turned AVX512_BF16 off
std::once_flag g_default_once;

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect_features();
  return features;
}

std::string_view cpu_variant_name(CpuVariant v) {
  switch (v) {
    case CpuVariant::kScalar: return "scalar";
    case CpuVariant::kAvx2: return "avx2";
    case CpuVariant::kAvx512: return "avx512";
  }
  return "unknown";
}

Result<CpuVariant> parse_cpu_variant(std::string_view text) {
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "scalar") return CpuVariant::kScalar;
  if (lower == "avx2") return CpuVariant::kAvx2;
  if (lower == "avx512") return CpuVariant::kAvx512;
  return make_error(ErrorKind::kInvalidArgument,
                    "unknown CPU variant '" + std::string(text) + "' (expected scalar, avx2 or avx512)");
}

bool cpu_variant_supported(CpuVariant v) { return missing_for(v).empty(); }

CpuVariant best_cpu_variant() {
  if (cpu_variant_supported(CpuVariant::kAvx512)) return CpuVariant::kAvx512;
  if (cpu_variant_supported(CpuVariant::kAvx2)) return CpuVariant::kAvx2;
  return CpuVariant::kScalar;
}

std::vector<CpuVariant> supported_cpu_variants() {
  std::vector<CpuVariant> out;
  for (CpuVariant v : {CpuVariant::kScalar, CpuVariant::kAvx2, CpuVariant::kAvx512}) {
    if (cpu_variant_supported(v)) out.push_back(v);
  }
  return out;
}

Result<CpuVariant> cpu_variant_from_env() {
  const std::optional<std::string> env = env_setting("HEARTH_CPU");
  if (!env || env->empty()) return best_cpu_variant();
  auto parsed = parse_cpu_variant(*env);
  if (!parsed.ok()) return parsed.error().with_context("HEARTH_CPU");
  const std::string missing = missing_for(*parsed);
  if (!missing.empty()) {
    return make_error(ErrorKind::kUnsupported, "HEARTH_CPU=" + *env +
                                                   " is not supported by this CPU (missing: " + missing + ")");
  }
  return *parsed;
}

Status init_cpu_variant() {
  HEARTH_ASSIGN(CpuVariant v, cpu_variant_from_env());
  g_active.store(static_cast<int>(v));
  log_debug("kernels selected", {{"cpu", std::string(cpu_variant_name(v))}});
  return ok_status();
}

CpuVariant active_cpu_variant() {
  int v = g_active.load(std::memory_order_acquire);
  if (v >= 0) return static_cast<CpuVariant>(v);
  std::call_once(g_default_once, [] {
    if (g_active.load() >= 0) return;
    auto chosen = cpu_variant_from_env();
    CpuVariant pick = best_cpu_variant();
    if (chosen.ok()) {
      pick = *chosen;
    } else {
      log_warn("ignoring HEARTH_CPU", {{"error", chosen.error().to_string()}});
    }
    int expected = -1;
    g_active.compare_exchange_strong(expected, static_cast<int>(pick));
  });
  return static_cast<CpuVariant>(g_active.load(std::memory_order_acquire));
}

Status set_cpu_variant_for_testing(CpuVariant v) {
  const std::string missing = missing_for(v);
  if (!missing.empty()) {
    return make_error(ErrorKind::kUnsupported, "CPU variant " + std::string(cpu_variant_name(v)) +
                                                   " is not supported by this CPU (missing: " + missing + ")");
  }
  g_active.store(static_cast<int>(v));
  return ok_status();
}

bool avx512_bf16_in_use() {
  return cpu_features().avx512bf16 && g_bf16_off.load(std::memory_order_relaxed) == 0;
}

Status set_avx512_bf16_for_testing(bool use) {
  if (use && !cpu_features().avx512bf16) {
    return make_error(ErrorKind::kUnsupported, "this CPU has no AVX512_BF16");
  }
  g_bf16_off.store(use ? 0 : 1);
  return ok_status();
}

}  // namespace hearth::kernels
