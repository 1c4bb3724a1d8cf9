// Shared helpers for the kernel tests: the CPU variants to run (every supported one, or only
// HEARTH_CPU's when set), a scope that switches variant, and seeded random data.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"

namespace hearth::kernels::test {

inline std::vector<CpuVariant> variants_under_test() {
  const char* env = std::getenv("HEARTH_CPU");
  if (env != nullptr && *env != '\0') {
    auto v = parse_cpu_variant(env);
    if (v.ok() && cpu_variant_supported(*v)) return {*v};
    return {};
  }
  return supported_cpu_variants();
}

// Switches the active variant for the lifetime of the scope.
class VariantScope {
 public:
  explicit VariantScope(CpuVariant v) : saved_(active_cpu_variant()) {
    EXPECT_TRUE(set_cpu_variant_for_testing(v).ok());
  }
  ~VariantScope() { (void)set_cpu_variant_for_testing(saved_); }

 private:
  CpuVariant saved_;
};

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

inline std::string variant_label(CpuVariant v) { return std::string(cpu_variant_name(v)); }

}  // namespace hearth::kernels::test

namespace hearth::kernels::test {

// Restores an environment variable when the scope ends.
class EnvGuard {
 public:
  explicit EnvGuard(const char* name) : name_(name) {
    const char* v = std::getenv(name);
    had_ = v != nullptr;
    if (had_) value_ = v;
  }
  ~EnvGuard() {
    if (had_) {
      setenv(name_, value_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string value_;
};

}  // namespace hearth::kernels::test
