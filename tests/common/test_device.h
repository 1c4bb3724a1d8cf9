// The Vulkan device the GPU tests run on: the one HEARTH_GPU names, else the first listed
// (a CPU implementation such as lavapipe included, unlike automatic selection). The device
// is printed when first opened. No device: a failure under CI=true, a skip elsewhere.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "common/test_paths.h"
#include "device/device.h"

namespace hearth::test {

inline std::unique_ptr<device::Context> open_device_for_tests(std::string* why_not) {
  auto devices = device::list_devices();
  if (!devices.ok()) {
    *why_not = devices.error().to_string();
    return nullptr;
  }
  if (devices->empty()) {
    *why_not = "Vulkan reports no device (install mesa-vulkan-drivers for lavapipe)";
    return nullptr;
  }
  size_t pick = 0;
  const char* env = std::getenv("HEARTH_GPU");
  if (env != nullptr && *env != '\0') {
    auto c = device::choose_device(*devices, env);
    if (!c.ok() || !c->has_value()) {
      *why_not = c.ok() ? "HEARTH_GPU=none" : c.error().to_string();
      return nullptr;
    }
    pick = **c;
  }
  auto ctx = device::Context::open(pick);
  if (!ctx.ok()) {
    *why_not = ctx.error().to_string();
    return nullptr;
  }
  std::cout << "[ device   ] " << device::describe_device(pick, (*ctx)->info()) << "\n";
  return std::move(*ctx);
}

// One context for the whole test process: lavapipe compiles each pipeline on first use, so
// sharing the context keeps the tests fast. Tests that change its allocation limit put it back.
inline device::Context* open_test_device(std::string* why_not) {
  static std::string why;
  static std::unique_ptr<device::Context> ctx = open_device_for_tests(&why);
  *why_not = why;
  return ctx.get();
}

}  // namespace hearth::test

// Opens the test device into `var` (a std::unique_ptr<device::Context>): fails under CI,
// skips elsewhere when there is none.
#define HEARTH_REQUIRE_DEVICE(var)                                                             \
  std::string var##_why;                                                                       \
  auto var = ::hearth::test::open_test_device(&var##_why);                                     \
  if (!var) {                                                                                  \
    if (::hearth::test::running_in_ci()) FAIL() << "no Vulkan device: " << var##_why;          \
    GTEST_SKIP() << "no Vulkan device: " << var##_why;                                         \
  }
