// Tests for parse_byte_size: units, spacing, fractions, case, and clear errors.
#include "util/byte_size.h"

#include <gtest/gtest.h>

namespace hearth {
namespace {

TEST(ByteSize, ParsesUnits) {
  EXPECT_EQ(*parse_byte_size("0"), 0u);
  EXPECT_EQ(*parse_byte_size("4096"), 4096u);
  EXPECT_EQ(*parse_byte_size("12B"), 12u);
  EXPECT_EQ(*parse_byte_size("2k"), 2048u);
  EXPECT_EQ(*parse_byte_size("512MiB"), 512ull << 20);
  EXPECT_EQ(*parse_byte_size("512 MB"), 512ull << 20);
  EXPECT_EQ(*parse_byte_size("2G"), 2ull << 30);
  EXPECT_EQ(*parse_byte_size("1.5gib"), 3ull << 29);
  EXPECT_EQ(*parse_byte_size(" 3T "), 3ull << 40);
  EXPECT_EQ(*parse_byte_size("0.5K"), 512u);
}

TEST(ByteSize, RejectsWhatIsNotASize) {
  for (const char* bad : {"", "MiB", "-1G", "12 apples", "1.2.3G", "1G extra", ".", "0x10"}) {
    auto r = parse_byte_size(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().kind, ErrorKind::kInvalidArgument) << bad;
    EXPECT_NE(r.error().message.find("512MiB"), std::string::npos) << r.error().message;
  }
}

TEST(ByteSize, RejectsOverflow) {
  EXPECT_EQ(parse_byte_size("99999999999999999999999").error().kind, ErrorKind::kOutOfRange);
  EXPECT_EQ(parse_byte_size("17000000T").error().kind, ErrorKind::kOutOfRange);
  EXPECT_EQ(*parse_byte_size("18446744073709551615"), UINT64_MAX);
}

}  // namespace
}  // namespace hearth
