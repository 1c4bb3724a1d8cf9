// Tests for the key=value log line format and level filtering.
#include "util/log.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hearth {
namespace {

std::vector<std::string>& captured() {
  static std::vector<std::string> lines;
  return lines;
}
void capture(const std::string& line) { captured().push_back(line); }

TEST(Log, FormatsFieldsAndQuotesWhenNeeded) {
  std::string line = format_log_line(LogLevel::kInfo, "model loaded", {{"model", "llama"}, {"ms", 41}, {"path", "a b"}});
  EXPECT_EQ(line, "level=info msg=\"model loaded\" model=llama ms=41 path=\"a b\"");
  EXPECT_EQ(format_log_line(LogLevel::kWarn, "x", {{"q", "say \"hi\"\n"}}), "level=warn msg=x q=\"say \\\"hi\\\"\\n\"");
}

TEST(Log, FiltersBelowLevel) {
  LogLevel saved = log_level();
  set_log_sink(capture);
  captured().clear();
  set_log_level(LogLevel::kWarn);
  log_info("hidden");
  log_warn("shown", {{"slot", 1}});
  set_log_level(saved);
  set_log_sink(nullptr);
  ASSERT_EQ(captured().size(), 1u);
  EXPECT_EQ(captured()[0], "level=warn msg=shown slot=1");
}

TEST(Log, ParsesLevelNames) {
  LogLevel l;
  EXPECT_TRUE(parse_log_level("debug", &l));
  EXPECT_EQ(l, LogLevel::kDebug);
  EXPECT_FALSE(parse_log_level("loud", &l));
}

}  // namespace
}  // namespace hearth
