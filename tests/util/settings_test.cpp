// Tests for the settings table: precedence flag > env > default, errors, ranges, help text, and
// the table of library-level HEARTH_* variables.
#include "util/settings.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>

namespace hearth {
namespace {

std::vector<SettingSpec> specs() {
  return {
      {"model", 'm', SettingType::kString, "", "model file", "HEARTH_MODEL"},
      {"num_ctx", 'c', SettingType::kInt, "2048", "context size", "HEARTH_NUM_CTX"},
      {"temp", 0, SettingType::kFloat, "0.8", "temperature", ""},
      {"json", 0, SettingType::kBool, "false", "print JSON", ""},
      {"stop", 0, SettingType::kString, "", "stop string", "", {}, true},
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

std::vector<SettingSpec> ranged_specs() {
  return {
      {"n_predict", 'n', SettingType::kInt, "128", "tokens to generate", "", SettingRange::at_least(-1)},
      {"top_p", 0, SettingType::kFloat, "0.9", "top-p", "", SettingRange::between(0, 1)},
      {"repeat_penalty", 0, SettingType::kFloat, "1.0", "repeat penalty", "", SettingRange::above(0)},
      {"port", 0, SettingType::kInt, "-1", "port", "HEARTH_PORT", SettingRange::between(-1, 65535)},
      {"threads", 't', SettingType::kInt, "0", "threads", "HEARTH_THREADS", SettingRange::at_least(0).lowered_above(8)},
      {"stop", 0, SettingType::kString, "", "stop string", "", {}, true},
  };
}

TEST(SettingsRange, ValuesInsideTheRangeAndOnItsBoundsAreAccepted) {
  Settings s(ranged_specs());
  ASSERT_TRUE(s.parse({"-n", "-1", "--top-p", "0", "--repeat-penalty", "0.01", "--port", "65535"}, env_of({})).ok());
  EXPECT_EQ(s.get_int("n_predict"), -1);
  EXPECT_DOUBLE_EQ(s.get_float("top_p"), 0.0);
  EXPECT_EQ(s.get_int("port"), 65535);
  ASSERT_TRUE(s.parse({"--top-p=1"}, env_of({})).ok());
  EXPECT_DOUBLE_EQ(s.get_float("top_p"), 1.0);
  EXPECT_TRUE(s.warnings().empty());
}

TEST(SettingsRange, AFlagOutsideItsRangeNamesFlagValueAndRange) {
  Settings s(ranged_specs());
  auto r = s.parse({"-n", "-5"}, env_of({}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_EQ(r.error().message, "option --n-predict: -5 is out of range (allowed: >= -1)");
  r = s.parse({"--top-p", "1.5"}, env_of({}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "option --top-p: 1.5 is out of range (allowed: 0 to 1)");
  r = s.parse({"--repeat-penalty", "0"}, env_of({}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "option --repeat-penalty: 0 is out of range (allowed: > 0)");
  r = s.parse({"--port=70000"}, env_of({}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "option --port: 70000 is out of range (allowed: -1 to 65535)");
}

TEST(SettingsRange, NonFiniteNumbersAreRefused) {
  Settings s(ranged_specs());
  for (const char* bad : {"nan", "inf", "-inf", "1e999"}) {
    auto r = s.parse({"--top-p", bad}, env_of({}));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("option --top-p"), std::string::npos) << r.error().message;
  }
}

TEST(SettingsRange, AnEnvironmentValueOutsideItsRangeNamesTheVariable) {
  Settings s(ranged_specs());
  auto r = s.parse({}, env_of({{"HEARTH_PORT", "-7"}}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "environment variable HEARTH_PORT (--port): -7 is out of range (allowed: -1 to 65535)");
  // A flag does not rescue a bad environment value: the variable is wrong either way.
  EXPECT_FALSE(s.parse({"--port", "80"}, env_of({{"HEARTH_PORT", "-7"}})).ok());
  ASSERT_TRUE(s.parse({}, env_of({{"HEARTH_PORT", "8080"}})).ok());
  EXPECT_EQ(s.get_int("port"), 8080);
}

TEST(SettingsRange, ASoftMaximumLowersTheValueWithAWarning) {
  Settings s(ranged_specs());
  ASSERT_TRUE(s.parse({"-t", "100000"}, env_of({})).ok());
  EXPECT_EQ(s.get_int("threads"), 8);
  ASSERT_EQ(s.warnings().size(), 1u);
  EXPECT_EQ(s.warnings()[0], "option --threads: 100000 is more than 8; using 8");
  ASSERT_TRUE(s.parse({}, env_of({{"HEARTH_THREADS", "9"}})).ok());
  EXPECT_EQ(s.get_int("threads"), 8);
  EXPECT_NE(s.warnings().at(0).find("HEARTH_THREADS"), std::string::npos);
  ASSERT_TRUE(s.parse({"-t", "8"}, env_of({})).ok());
  EXPECT_EQ(s.get_int("threads"), 8);
  EXPECT_TRUE(s.warnings().empty());
  auto r = s.parse({"-t", "-1"}, env_of({}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "option --threads: -1 is out of range (allowed: >= 0, more than 8 is lowered to 8)");
}

TEST(SettingsRange, HelpAndMarkdownShowTheRange) {
  Settings s(ranged_specs());
  const std::string help = s.help_text("hearth x [options]");
  EXPECT_NE(help.find("tokens to generate (default: 128; range >= -1)"), std::string::npos) << help;
  EXPECT_NE(help.find("top-p (default: 0.9; range 0 to 1)"), std::string::npos) << help;
  EXPECT_NE(help.find("repeat penalty (default: 1.0; range > 0)"), std::string::npos) << help;
  EXPECT_NE(help.find("port (default: -1; range -1 to 65535) [env HEARTH_PORT]"), std::string::npos) << help;
  EXPECT_NE(help.find("range >= 0, more than 8 is lowered to 8"), std::string::npos) << help;
  EXPECT_NE(help.find("stop string\n"), std::string::npos) << help;  // strings have no range
  EXPECT_NE(s.markdown_table().find("| `--top-p` |  | 0.9 | 0 to 1 | top-p |"), std::string::npos) << s.markdown_table();
}

// llama-server's "-fa" alone (or "-fa on") and "-ngl auto" (or a count).
TEST(Settings, ImplicitValuesAndWordsBesideNumbers) {
  const std::vector<SettingSpec> specs = {
      SettingSpec{"flash_attn", 0, SettingType::kString, "auto", "flash", ""}
          .with_aliases({"-fa"})
          .with_choices({"on", "off", "auto"})
          .with_implicit_value("on"),
      SettingSpec{"n_gpu_layers", 0, SettingType::kInt, "0", "layers", "", SettingRange::at_least(-1)}
          .with_aliases({"-ngl"})
          .with_choices({"auto", "all"}),
      {"model", 'm', SettingType::kString, "", "model", ""},
  };
  Settings s(specs);
  auto none = [](const std::string&) { return std::optional<std::string>(); };
  ASSERT_TRUE(s.parse({"-fa", "-m", "x.gguf"}, none).ok());
  EXPECT_EQ(s.get_string("flash_attn"), "on");
  EXPECT_EQ(s.get_string("model"), "x.gguf");
  ASSERT_TRUE(s.parse({"-m", "x.gguf", "--flash-attn"}, none).ok());
  EXPECT_EQ(s.get_string("flash_attn"), "on");
  ASSERT_TRUE(s.parse({"-fa", "off", "positional"}, none).ok());
  EXPECT_EQ(s.get_string("flash_attn"), "off");
  EXPECT_EQ(s.positionals(), std::vector<std::string>{"positional"});
  ASSERT_TRUE(s.parse({"--flash-attn=auto"}, none).ok());
  EXPECT_EQ(s.get_string("flash_attn"), "auto");
  auto bad = s.parse({"--flash-attn=maybe"}, none);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("'maybe' is not supported (supported: on, off, auto)"), std::string::npos);

  ASSERT_TRUE(s.parse({"-ngl", "auto"}, none).ok());
  EXPECT_EQ(s.get_string("n_gpu_layers"), "auto");
  ASSERT_TRUE(s.parse({"-ngl", "99"}, none).ok());
  EXPECT_EQ(s.get_int("n_gpu_layers"), 99);
  ASSERT_TRUE(s.parse({"-ngl", "all"}, none).ok());
  bad = s.parse({"-ngl", "lots"}, none);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "option -ngl (--n-gpu-layers): 'lots' is not a valid integer");
  EXPECT_FALSE(s.parse({"-ngl", "-5"}, none).ok());
  EXPECT_FALSE(s.parse({"-ngl"}, none).ok());  // no implicit value: a count is needed
}

TEST(SettingsRange, DescribeFormatsBounds) {
  EXPECT_EQ(SettingRange().describe(), "");
  EXPECT_TRUE(SettingRange().empty());
  EXPECT_EQ(SettingRange::at_most(2.5).describe(), "<= 2.5");
  EXPECT_EQ(SettingRange::at_least(-1).describe(), ">= -1");
  EXPECT_EQ(SettingRange::between(0, SettingRange::kInt32Max).describe(), "0 to 2147483647");
  EXPECT_TRUE(SettingRange::above(0).contains(1e-9));
  EXPECT_FALSE(SettingRange::above(0).contains(0));
  EXPECT_FALSE(SettingRange::between(0, 1).contains(std::nan("")));
}

TEST(SettingsRange, ThreadCountsAreLoweredToTheHardwareThreads) {
  const SettingRange r = thread_count_range();
  ASSERT_TRUE(r.soft_max().has_value());
  EXPECT_GE(*r.soft_max(), 1.0);
  EXPECT_TRUE(r.contains(0));
  EXPECT_FALSE(r.contains(-1));
}

TEST(EnvSetting, EveryLibraryVariableIsListedAndReadLive) {
  std::vector<std::string> names;
  for (const auto& e : env_setting_specs()) {
    names.push_back(e.name);
    EXPECT_EQ(std::string(e.name).rfind("HEARTH_", 0), 0u) << e.name;
    EXPECT_GT(std::string(e.help).size(), 10u) << e.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"HEARTH_CPU", "HEARTH_LOG_LEVEL", "HEARTH_WEIGHT_LAYOUT", "HEARTH_MODELS",
                                             "HEARTH_REGISTRY", "HEARTH_OLLAMA_MODELS"}));
  const char* saved = std::getenv("HEARTH_WEIGHT_LAYOUT");
  const std::string saved_value = saved ? saved : "";
  setenv("HEARTH_WEIGHT_LAYOUT", "gguf", 1);
  EXPECT_EQ(env_setting("HEARTH_WEIGHT_LAYOUT"), std::optional<std::string>("gguf"));
  unsetenv("HEARTH_WEIGHT_LAYOUT");
  EXPECT_EQ(env_setting("HEARTH_WEIGHT_LAYOUT"), std::nullopt);
  if (saved != nullptr) setenv("HEARTH_WEIGHT_LAYOUT", saved_value.c_str(), 1);
}

TEST(EnvSetting, FallbackVariableIsReadWhenTheOwnIsUnset) {
  const char* own = std::getenv("HEARTH_OLLAMA_MODELS");
  const char* other = std::getenv("OLLAMA_MODELS");
  const std::string own_value = own ? own : "", other_value = other ? other : "";
  unsetenv("HEARTH_OLLAMA_MODELS");
  setenv("OLLAMA_MODELS", "/srv/ollama", 1);
  EXPECT_EQ(env_setting("HEARTH_OLLAMA_MODELS"), std::optional<std::string>("/srv/ollama"));
  setenv("HEARTH_OLLAMA_MODELS", "off", 1);
  EXPECT_EQ(env_setting("HEARTH_OLLAMA_MODELS"), std::optional<std::string>("off"));
  unsetenv("OLLAMA_MODELS");
  unsetenv("HEARTH_OLLAMA_MODELS");
  if (own != nullptr) setenv("HEARTH_OLLAMA_MODELS", own_value.c_str(), 1);
  if (other != nullptr) setenv("OLLAMA_MODELS", other_value.c_str(), 1);
}

}  // namespace
}  // namespace hearth
