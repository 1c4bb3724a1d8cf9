// The nesting scan that guards every JSON parse of outside text.
#include <gtest/gtest.h>

#include <string>

#include "util/json_nesting.h"

namespace hearth {
namespace {

std::string nested(int depth, char open = '[', char close = ']') {
  return std::string(static_cast<size_t>(depth), open) + std::string(static_cast<size_t>(depth), close);
}

TEST(JsonNesting, CountsArraysAndObjectsUpToTheLimit) {
  EXPECT_TRUE(json_nesting_within(nested(kMaxJsonNesting)));
  EXPECT_FALSE(json_nesting_within(nested(kMaxJsonNesting + 1)));
  EXPECT_FALSE(json_nesting_within(std::string(1000000, '{')));
  EXPECT_TRUE(json_nesting_within(R"({"a": [{"b": [1, 2]}, {"c": {}}]})", 4));
  EXPECT_FALSE(json_nesting_within(R"({"a": [{"b": [1, 2]}, {"c": {}}]})", 3));
  // Depth, not count: many siblings at one level are fine.
  std::string wide = "[";
  for (int i = 0; i < 10000; ++i) wide += "[],";
  wide += "[]]";
  EXPECT_TRUE(json_nesting_within(wide, 2));
}

TEST(JsonNesting, BracketsInsideStringsDoNotCount) {
  EXPECT_TRUE(json_nesting_within("{\"s\": \"" + std::string(1000, '[') + "\"}", 1));
  // An escaped quote does not end the string; an escaped backslash before a quote does.
  EXPECT_TRUE(json_nesting_within(R"(["a\"[[[[", "b"])", 1));
  EXPECT_FALSE(json_nesting_within(R"(["a\\", [[1]]])", 2));
}

}  // namespace
}  // namespace hearth
