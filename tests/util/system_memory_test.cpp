// Tests for reading MemAvailable from /proc/meminfo text and for the byte formatting the
// start-up memory check prints.
#include "util/system_memory.h"

#include <gtest/gtest.h>

namespace hearth {
namespace {

TEST(SystemMemory, MemAvailableIsReadInBytes) {
  const std::string text = "MemTotal:       16303912 kB\nMemFree:         1022520 kB\nMemAvailable:   10000000 kB\n";
  EXPECT_EQ(parse_meminfo_available(text), std::optional<uint64_t>(10000000ull * 1024));
  EXPECT_EQ(parse_meminfo_available("MemTotal: 5 kB\n"), std::nullopt);
  EXPECT_EQ(parse_meminfo_available("MemAvailable: lots\n"), std::nullopt);
#ifdef __linux__
  EXPECT_TRUE(memory_available_bytes().has_value());
#endif
}

TEST(SystemMemory, BytesAreShownInBinaryUnits) {
  EXPECT_EQ(format_bytes(45ull << 30), "45.0 GiB");
  EXPECT_EQ(format_bytes(512ull << 20), "512.0 MiB");
  EXPECT_EQ(format_bytes(2048), "2 KiB");
}

}  // namespace
}  // namespace hearth
