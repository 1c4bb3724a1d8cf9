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

TEST(SystemMemory, SizesAreParsedWithBinaryUnits) {
  EXPECT_EQ(parse_byte_size("0").value(), 0u);
  EXPECT_EQ(parse_byte_size("4096").value(), 4096u);
  EXPECT_EQ(parse_byte_size("256MiB").value(), 256ull << 20);
  EXPECT_EQ(parse_byte_size("256m").value(), 256ull << 20);
  EXPECT_EQ(parse_byte_size("1.5GiB").value(), 3ull << 29);
  EXPECT_EQ(parse_byte_size("2 GB").value(), 2ull << 30);
  EXPECT_EQ(parse_byte_size("1T").value(), 1ull << 40);
  for (const char* bad : {"", "MiB", "-1", "12 parsecs", "1.2.3M", "99999999999999999999999G"}) {
    auto r = parse_byte_size(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().kind, ErrorKind::kInvalidArgument);
    EXPECT_NE(r.error().message.find("is not a size"), std::string::npos);
  }
}

}  // namespace
}  // namespace hearth
