// Helpers the Vulkan kernel tests share: float buffers up and down, the reduction modes the
// device offers, the largest difference between two results.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "device/device.h"

namespace hearth::kernels::vulkan {

inline device::Buffer upload_floats(device::Context& ctx, const std::vector<float>& v) {
  auto b = ctx.alloc(std::max<size_t>(v.size(), 1) * sizeof(float));
  EXPECT_TRUE(b.ok());
  if (!v.empty()) {
    EXPECT_TRUE(ctx.upload(*b, 0, v.data(), v.size() * sizeof(float)).ok());
  }
  return std::move(*b);
}

inline std::vector<float> download_floats(device::Context& ctx, const device::Buffer& b, size_t n) {
  std::vector<float> v(n);
  EXPECT_TRUE(ctx.download(b, 0, v.data(), n * sizeof(float)).ok());
  return v;
}

// The reductions to test: the fallback always, subgroups where the device has them.
inline std::vector<bool> reduction_modes(const device::Context& ctx) {
  std::vector<bool> modes = {false};
  if (ctx.info().subgroup_arithmetic) modes.push_back(true);
  return modes;
}

inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

}  // namespace hearth::kernels::vulkan
