// The device layer on whatever Vulkan device the machine has (lavapipe in CI): discovery
// order and HEARTH_GPU choice, discovery in a child process that leaves nothing mapped, buffers
// (round trips, accounting, the allocation limit used to inject a device that runs out of
// memory midway), and a compute dispatch with a fence.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <fstream>
#include <string>
#include <numeric>
#include <vector>

#include "common/test_device.h"
#include "device/device.h"

namespace hearth::device {
namespace {

DeviceInfo dev(std::string name, DeviceKind kind, uint64_t free_bytes) {
  DeviceInfo d;
  d.name = std::move(name);
  d.kind = kind;
  d.total_bytes = free_bytes * 2;
  d.free_bytes = free_bytes;
  return d;
}

TEST(DeviceChoice, AutomaticSkipsCpuDevicesAndNoneMeansCpu) {
  const std::vector<DeviceInfo> only_cpu = {dev("llvmpipe (LLVM 15.0.6, 256 bits)", DeviceKind::kCpu, 100)};
  auto c = choose_device(only_cpu, "");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->has_value());
  const std::vector<DeviceInfo> mixed = {dev("Radeon RX 7900", DeviceKind::kDiscrete, 10),
                                         dev("llvmpipe", DeviceKind::kCpu, 100)};
  c = choose_device(mixed, "");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->value(), 0u);
  c = choose_device(mixed, "none");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->has_value());
}

TEST(DeviceChoice, IndexAndNameChooseAndBadOnesListTheDevices) {
  const std::vector<DeviceInfo> devs = {dev("NVIDIA GeForce RTX 4090", DeviceKind::kDiscrete, 20),
                                        dev("llvmpipe", DeviceKind::kCpu, 100)};
  auto c = choose_device(devs, "1");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->value(), 1u);
  c = choose_device(devs, "LLVMpipe");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->value(), 1u);
  c = choose_device(devs, "rtx 4090");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->value(), 0u);
  auto bad = choose_device(devs, "7");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("llvmpipe"), std::string::npos) << bad.error().message;
  bad = choose_device(devs, "arc a770");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ErrorKind::kInvalidArgument);
}

TEST(DeviceDiscovery, ListsDevicesInOrderWithMemory) {
  auto devices = list_devices();
  if (!devices.ok() || devices->empty()) {
    if (hearth::test::running_in_ci()) FAIL() << "no Vulkan device in CI";
    GTEST_SKIP() << "no Vulkan device";
  }
  for (size_t i = 0; i < devices->size(); ++i) {
    const DeviceInfo& d = (*devices)[i];
    std::cout << "[ device   ] " << describe_device(i, d) << "\n";
    EXPECT_FALSE(d.name.empty());
    EXPECT_FALSE(d.driver.empty());
    EXPECT_GT(d.total_bytes, 0u);
    EXPECT_LE(d.free_bytes, d.total_bytes);
    if (i > 0 && (*devices)[i - 1].kind == d.kind) {
      EXPECT_GE((*devices)[i - 1].free_bytes, d.free_bytes);
    }
  }
}

// Whether this process has the Vulkan loader mapped.
bool vulkan_loader_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("libvulkan") != std::string::npos) return true;
  }
  return false;
}

// The router's discovery: the child's answer is the in-process one, and the caller maps none of
// the loader. The mapping check runs in a fresh process (the death test's threadsafe style
// re-runs this test binary), with in-process discovery after it as the control that the check
// sees the loader when it is there.
TEST(DeviceDiscovery, AChildProcessFindsTheSameDevicesAndLeavesNothingMapped) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        if (vulkan_loader_mapped()) std::_Exit(3);
        (void)list_devices_in_child();
        if (vulkan_loader_mapped()) std::_Exit(1);
        if (list_devices().ok() && !vulkan_loader_mapped()) std::_Exit(2);
        std::_Exit(0);
      },
      testing::ExitedWithCode(0), "");
  auto child = list_devices_in_child();
  auto here = list_devices();
  ASSERT_EQ(child.ok(), here.ok()) << (child.ok() ? here.error().to_string() : child.error().to_string());
  if (!here.ok()) {
    EXPECT_EQ(child.error().message, here.error().message);
    EXPECT_EQ(child.error().kind, here.error().kind);
    return;
  }
  ASSERT_EQ(child->size(), here->size());
  for (size_t i = 0; i < here->size(); ++i) {
    const DeviceInfo &a = (*child)[i], &b = (*here)[i];
    EXPECT_EQ(a.physical_index, b.physical_index);
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.vendor, b.vendor);
    EXPECT_EQ(a.driver, b.driver);
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.total_bytes, b.total_bytes);
    EXPECT_EQ(a.budget_known, b.budget_known);
    EXPECT_EQ(a.subgroup_size, b.subgroup_size);
    EXPECT_EQ(a.subgroup_arithmetic, b.subgroup_arithmetic);
  }
}

TEST(DeviceBuffers, RoundTripAccountingAndLimit) {
  HEARTH_REQUIRE_DEVICE(ctx);
  const uint64_t before = ctx->allocated_bytes();
  {
    auto buf = ctx->alloc(1001);
    ASSERT_TRUE(buf.ok()) << buf.error().to_string();
    EXPECT_EQ(buf->bytes(), 1004u);  // rounded to words
    EXPECT_EQ(ctx->allocated_bytes(), before + 1004);
    std::vector<uint8_t> in(1001), out(1001, 0);
    std::iota(in.begin(), in.end(), uint8_t{7});
    ASSERT_TRUE(ctx->upload(*buf, 0, in.data(), in.size()).ok());
    ASSERT_TRUE(ctx->download(*buf, 0, out.data(), out.size()).ok());
    EXPECT_EQ(in, out);
    // Part of the buffer, at an odd offset.
    ASSERT_TRUE(ctx->download(*buf, 3, out.data(), 10).ok());
    EXPECT_EQ(0, std::memcmp(out.data(), in.data() + 3, 10));
    EXPECT_FALSE(ctx->download(*buf, 1000, out.data(), 10).ok());
    ASSERT_TRUE(ctx->fill_zero(*buf).ok());
    ASSERT_TRUE(ctx->download(*buf, 0, out.data(), out.size()).ok());
    EXPECT_EQ(std::vector<uint8_t>(1001, 0), out);
  }
  EXPECT_EQ(ctx->allocated_bytes(), before);  // freed with the buffer

  ctx->set_allocation_limit(before + 4096);
  auto a = ctx->alloc(3000);
  ASSERT_TRUE(a.ok());
  auto b = ctx->alloc(3000);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().kind, ErrorKind::kUnavailable);
  EXPECT_NE(b.error().message.find("limit"), std::string::npos);
  ctx->set_allocation_limit(0);
}

TEST(DeviceBuffers, LargeTransfersGoThroughStagingInPieces) {
  HEARTH_REQUIRE_DEVICE(ctx);
  const size_t n = (size_t{17} << 20) + 12;  // more than one 16 MiB staging piece
  std::vector<uint8_t> in(n), out(n);
  for (size_t i = 0; i < n; ++i) in[i] = static_cast<uint8_t>(i * 2654435761u >> 24);
  auto buf = ctx->alloc(n);
  ASSERT_TRUE(buf.ok());
  ASSERT_TRUE(ctx->upload(*buf, 0, in.data(), n).ok());
  ASSERT_TRUE(ctx->download(*buf, 0, out.data(), n).ok());
  EXPECT_TRUE(in == out);
}

TEST(DeviceProfile, TimestampsChargeEachCommandOfAList) {
  HEARTH_REQUIRE_DEVICE(shared);  // fails under CI without a device; the profiled one is fresh
  ::setenv("HEARTH_VK_PROFILE", "1", 1);
  std::string why;
  std::unique_ptr<Context> ctx = test::open_device_for_tests(&why);
  ::unsetenv("HEARTH_VK_PROFILE");
  ASSERT_NE(ctx, nullptr) << why;
  EXPECT_EQ(shared->profile_report(), "");  // opened without the variable
  auto a = ctx->alloc(1 << 20);
  auto b = ctx->alloc(1 << 20);
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<uint8_t> in(1 << 20, 7), out(1 << 20, 0);
  for (int list = 0; list < 2; ++list) {
    Recorder rec(*ctx);
    ASSERT_TRUE(rec.upload(*a, 0, in.data(), in.size()).ok());
    Recorder::CopyRegion region{0, 0, in.size()};
    ASSERT_TRUE(rec.copy(*a, *b, {&region, 1}).ok());
    ASSERT_TRUE(rec.download(*b, 0, out.data(), out.size()).ok());
    ASSERT_TRUE(rec.run().ok());
  }
  EXPECT_EQ(out, in);
  const std::string report = ctx->profile_report();
  if (report.find("has no timestamps") != std::string::npos) GTEST_SKIP() << report;
  EXPECT_NE(report.find("2 command lists"), std::string::npos) << report;
  for (const char* command : {"upload", "copy", "download"}) {
    const size_t at = report.find(std::string("  ") + command + " ");
    ASSERT_NE(at, std::string::npos) << command << " missing from\n" << report;
    // Each was charged once per list.
    unsigned long long count = 0;
    ASSERT_EQ(std::sscanf(report.c_str() + at, " %*s %llu", &count), 1) << report;
    EXPECT_EQ(count, 2u) << command;
  }
  std::cout << report;
}

TEST(DeviceRecorder, FlushedPartsRunInOrderUnderOneFence) {
  HEARTH_REQUIRE_DEVICE(ctx);
  auto a = ctx->alloc(4096);
  auto b = ctx->alloc(4096);
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<uint8_t> in(4096), out(4096, 0);
  std::iota(in.begin(), in.end(), uint8_t{3});
  const DeviceCounters before = ctx->counters();
  Recorder rec(*ctx);
  ASSERT_TRUE(rec.upload(*a, 0, in.data(), in.size()).ok());
  ASSERT_TRUE(rec.flush().ok());  // part 1 runs while part 2 is recorded
  Recorder::CopyRegion region{0, 0, in.size()};
  ASSERT_TRUE(rec.copy(*a, *b, {&region, 1}).ok());  // reads what part 1 wrote
  ASSERT_TRUE(rec.flush().ok());
  ASSERT_TRUE(rec.download(*b, 0, out.data(), out.size()).ok());
  ASSERT_TRUE(rec.run().ok());
  EXPECT_EQ(out, in);
  EXPECT_EQ(ctx->counters().submits - before.submits, 3u);
  EXPECT_EQ(ctx->counters().fence_waits - before.fence_waits, 1u);
  EXPECT_FALSE(rec.flush().ok());  // after the submit
}

TEST(DeviceRecorder, EmptySubmitWaitsAndASecondSubmitIsRefused) {
  HEARTH_REQUIRE_DEVICE(ctx);
  Recorder rec(*ctx);
  auto fence = rec.submit();
  ASSERT_TRUE(fence.ok()) << fence.error().to_string();
  EXPECT_TRUE(fence->wait().ok());
  EXPECT_FALSE(rec.submit().ok());  // twice
}

}  // namespace
}  // namespace hearth::device
