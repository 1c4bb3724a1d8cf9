// Tests for error values and the TRY/ASSIGN helpers.
#include "util/result.h"

#include <gtest/gtest.h>

namespace hearth {
namespace {

Result<int> parse_positive(int x) {
  if (x <= 0) return make_error(ErrorKind::kInvalidArgument, "must be positive");
  return x;
}

Result<int> doubled(int x) {
  HEARTH_ASSIGN(int v, parse_positive(x));
  return v * 2;
}

Status check(int x) {
  HEARTH_TRY(parse_positive(x));
  return ok_status();
}

TEST(Result, CarriesValueOrError) {
  auto ok = doubled(4);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 8);
  auto bad = doubled(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_EQ(bad.error().to_string(), "invalid argument: must be positive");
  EXPECT_TRUE(check(1).ok());
  EXPECT_FALSE(check(0).ok());
}

TEST(Result, WithContextPrefixesMessage) {
  Error e = make_error(ErrorKind::kCorrupt, "bad magic");
  EXPECT_EQ(e.with_context("model.gguf").message, "model.gguf: bad magic");
  EXPECT_EQ(e.with_context("model.gguf").kind, ErrorKind::kCorrupt);
}

}  // namespace
}  // namespace hearth
