// Tests for the settings table's compatibility features: other runtimes' flag spellings as
// aliases (one-dash words like -np before any short-flag reading), value choices, OLLAMA_*
// fallbacks behind HEARTH_* variables, refused flags for missing features, and range notes.
#include <gtest/gtest.h>

#include <map>

#include "util/settings.h"

namespace hearth {
namespace {

EnvLookup env_of(std::map<std::string, std::string> m) {
  return [m](const std::string& k) -> std::optional<std::string> {
    auto it = m.find(k);
    if (it == m.end()) return std::nullopt;
    return it->second;
  };
}

std::vector<SettingSpec> specs() {
  return {
      {"ctx_size", 'c', SettingType::kInt, "0", "context", "HEARTH_CTX_SIZE", SettingRange::at_least(0)},
      SettingSpec{"parallel", 0, SettingType::kInt, "4", "slots", "HEARTH_PARALLEL", SettingRange::between(1, 256)}
          .with_aliases({"-np", "--n-parallel"})
          .with_env_fallback("OLLAMA_NUM_PARALLEL"),
      SettingSpec{"host", 0, SettingType::kString, "127.0.0.1", "address", "HEARTH_HOST"}.with_env_fallback("OLLAMA_HOST"),
      SettingSpec{"kv_type", 0, SettingType::kString, "f16", "KV type", ""}.with_aliases({"-ctk"}).with_choices({"f16", "f32", "q8_0"}),
      SettingSpec{"n_gpu_layers", 0, SettingType::kInt, "0", "GPU layers", "", SettingRange::between(0, 0)}
          .with_aliases({"-ngl"})
          .with_range_note("no GPU backend yet"),
      SettingSpec{"jinja", 0, SettingType::kBool, "", "no-op", ""},
      unsupported_setting("lora", {"--lora-scaled"}, "LoRA adapters are not supported"),
  };
}

TEST(SettingsAlias, OneDashWordsAreAliasesNotShortFlags) {
  Settings s(specs());
  ASSERT_TRUE(s.parse({"-np", "8", "-c", "4096", "-ctk", "q8_0", "--jinja", "-ngl", "0"}, env_of({})).ok());
  EXPECT_EQ(s.get_int("parallel"), 8);
  EXPECT_EQ(s.get_int("ctx_size"), 4096);
  EXPECT_EQ(s.get_string("kv_type"), "q8_0");
  EXPECT_TRUE(s.get_bool("jinja"));
  ASSERT_TRUE(s.parse({"--n-parallel=3"}, env_of({})).ok());
  EXPECT_EQ(s.get_int("parallel"), 3);
}

TEST(SettingsAlias, ChoicesAndRangeNotesNameWhatIsSupported) {
  Settings s(specs());
  auto bad = s.parse({"-ctk", "q4_0"}, env_of({}));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "option -ctk (--kv-type): 'q4_0' is not supported (supported: f16, f32, q8_0)");
  auto gpu = s.parse({"-ngl", "99"}, env_of({}));
  ASSERT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.error().message, "option -ngl (--n-gpu-layers): 99 is out of range (allowed: 0 to 0); no GPU backend yet");
}

TEST(SettingsAlias, UnsupportedFlagsAreRefusedByName) {
  Settings s(specs());
  auto lora = s.parse({"--lora", "x.gguf"}, env_of({}));
  ASSERT_FALSE(lora.ok());
  EXPECT_EQ(lora.error().message, "option --lora is not supported: LoRA adapters are not supported");
  auto scaled = s.parse({"--lora-scaled", "x.gguf", "0.5"}, env_of({}));
  ASSERT_FALSE(scaled.ok());
  EXPECT_NE(scaled.error().message.find("option --lora-scaled is not supported"), std::string::npos);
  auto unknown = s.parse({"--frobnicate"}, env_of({}));
  EXPECT_NE(unknown.error().message.find("unknown option '--frobnicate'"), std::string::npos);
  std::string help = s.help_text("x");
  EXPECT_NE(help.find("also -np, --n-parallel"), std::string::npos) << help;
  EXPECT_NE(help.find("[env HEARTH_HOST, OLLAMA_HOST]"), std::string::npos) << help;
  EXPECT_NE(help.find("--lora, --lora-scaled: LoRA adapters are not supported"), std::string::npos) << help;
}

TEST(SettingsAlias, OllamaVariablesAreFallbacksForHearthOnes) {
  Settings s(specs());
  ASSERT_TRUE(s.parse({}, env_of({{"OLLAMA_HOST", "0.0.0.0:11500"}, {"OLLAMA_NUM_PARALLEL", "2"}})).ok());
  EXPECT_EQ(s.get_string("host"), "0.0.0.0:11500");
  EXPECT_EQ(s.get_int("parallel"), 2);
  ASSERT_TRUE(s.parse({}, env_of({{"OLLAMA_HOST", "0.0.0.0:11500"}, {"HEARTH_HOST", "127.0.0.1:9"}})).ok());
  EXPECT_EQ(s.get_string("host"), "127.0.0.1:9");
  ASSERT_TRUE(s.parse({"--host", "::1"}, env_of({{"OLLAMA_HOST", "0.0.0.0"}})).ok());
  EXPECT_EQ(s.get_string("host"), "::1");
  auto bad = s.parse({}, env_of({{"OLLAMA_NUM_PARALLEL", "0"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "environment variable OLLAMA_NUM_PARALLEL (--parallel): 0 is out of range (allowed: 1 to 256)");
}

}  // namespace
}  // namespace hearth
