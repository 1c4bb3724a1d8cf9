// Tests for the settings table: precedence flag > env > default, errors, help text.
#include "util/settings.h"

#include <gtest/gtest.h>

#include <map>

namespace hearth {
namespace {

std::vector<SettingSpec> specs() {
  return {
      {"model", 'm', SettingType::kString, "", "model file", "HEARTH_MODEL"},
      {"num_ctx", 'c', SettingType::kInt, "2048", "context size", "HEARTH_NUM_CTX"},
      {"temp", 0, SettingType::kFloat, "0.8", "temperature", ""},
      {"json", 0, SettingType::kBool, "false", "print JSON", ""},
      {"stop", 0, SettingType::kString, "", "stop string", "", true},
  };
}

EnvLookup env_of(std::map<std::string, std::string> m) {
  return [m](const std::string& k) -> std::optional<std::string> {
    auto it = m.find(k);
    if (it == m.end()) return std::nullopt;
    return it->second;
  };
}

TEST(Settings, DefaultsEnvAndFlagsInOrder) {
  Settings s(specs());
  ASSERT_TRUE(s.parse({}, env_of({})).ok());
  EXPECT_EQ(s.get_int("num_ctx"), 2048);
  EXPECT_FALSE(s.is_set("num_ctx"));
  ASSERT_TRUE(s.parse({}, env_of({{"HEARTH_NUM_CTX", "4096"}})).ok());
  EXPECT_EQ(s.get_int("num_ctx"), 4096);
  EXPECT_TRUE(s.is_set("num_ctx"));
  ASSERT_TRUE(s.parse({"--num-ctx", "512"}, env_of({{"HEARTH_NUM_CTX", "4096"}})).ok());
  EXPECT_EQ(s.get_int("num_ctx"), 512);
  ASSERT_TRUE(s.parse({"-c8", "-m", "x.gguf", "--temp=0.5", "--json", "word", "--", "--json"}, env_of({})).ok());
  EXPECT_EQ(s.get_int("num_ctx"), 8);
  EXPECT_EQ(s.get_string("model"), "x.gguf");
  EXPECT_DOUBLE_EQ(s.get_float("temp"), 0.5);
  EXPECT_TRUE(s.get_bool("json"));
  EXPECT_EQ(s.positionals(), (std::vector<std::string>{"word", "--json"}));
}

TEST(Settings, RepeatableAndHelp) {
  Settings s(specs());
  ASSERT_TRUE(s.parse({"--stop", "a", "--stop", "b", "-h"}, env_of({})).ok());
  EXPECT_EQ(s.get_list("stop"), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(s.help_requested());
  std::string help = s.help_text("hearth x [options]");
  EXPECT_NE(help.find("-m, --model TEXT"), std::string::npos) << help;
  EXPECT_NE(help.find("[env HEARTH_NUM_CTX]"), std::string::npos);
  EXPECT_NE(help.find("(default: 2048)"), std::string::npos);
  EXPECT_NE(s.markdown_table().find("`HEARTH_MODEL`"), std::string::npos);
}

TEST(Settings, BadInputIsAClearError) {
  Settings s(specs());
  auto r = s.parse({"--num-ctx", "many"}, env_of({}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("not a valid integer"), std::string::npos);
  r = s.parse({"--bogus"}, env_of({}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("unknown option '--bogus'"), std::string::npos);
  r = s.parse({"-m"}, env_of({}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("needs a value"), std::string::npos);
  r = s.parse({}, env_of({{"HEARTH_NUM_CTX", "x"}}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("HEARTH_NUM_CTX"), std::string::npos);
}

}  // namespace
}  // namespace hearth
