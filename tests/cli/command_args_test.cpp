// Argument parsing of `hearth run` and `hearth create`, without running anything.
#include <gtest/gtest.h>

#include <map>

#include "cli/commands.h"

namespace hearth::cli {
namespace {

EnvLookup no_env() {
  return [](const std::string&) { return std::optional<std::string>(); };
}

TEST(RunArgs, ModelPromptAndFlags) {
  auto r = parse_run_args({"qwen3", "why", "is", "the", "sky", "blue?", "--verbose", "--format", "json", "--keepalive", "10m",
                           "--nowordwrap", "--hidethinking", "--insecure"},
                          no_env());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->session.model, "qwen3");
  EXPECT_EQ(r->prompt, "why is the sky blue?");
  EXPECT_TRUE(r->session.verbose);
  EXPECT_EQ(r->session.format, "json");
  EXPECT_EQ(r->session.keep_alive, "10m");
  EXPECT_FALSE(r->session.word_wrap);
  EXPECT_TRUE(r->session.hide_thinking);
  EXPECT_TRUE(r->session.insecure);
  EXPECT_TRUE(r->session.think.is_null());  // not sent unless asked
  const nlohmann::json body = session_request(r->session);
  EXPECT_EQ(body, (nlohmann::json{{"model", "qwen3"}, {"stream", true}, {"format", "json"}, {"keep_alive", "10m"}}));
}

TEST(RunArgs, ThinkTakesAnOptionalValue) {
  auto bare = parse_run_args({"m", "--think"}, no_env());
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->session.think, true);
  EXPECT_EQ(parse_run_args({"m", "--think=false"}, no_env())->session.think, false);
  EXPECT_EQ(parse_run_args({"m", "--think=high"}, no_env())->session.think, "high");
  auto high_as_prompt = parse_run_args({"m", "--think", "high"}, no_env());  // like ollama: a word after is the prompt
  EXPECT_EQ(high_as_prompt->session.think, true);
  EXPECT_EQ(high_as_prompt->prompt, "high");
}

TEST(RunArgs, BadUsageIsAnError) {
  EXPECT_FALSE(parse_run_args({}, no_env()).ok());
  EXPECT_FALSE(parse_run_args({"m", "--format", "xml"}, no_env()).ok());
  EXPECT_FALSE(parse_run_args({"m", "--think=very"}, no_env()).ok());
  EXPECT_FALSE(parse_run_args({"m", "--bogus"}, no_env()).ok());
  auto help = parse_run_args({"--help"}, no_env());
  ASSERT_TRUE(help.ok());
  EXPECT_NE(help->help_text.find("--keepalive"), std::string::npos);
}

TEST(RunArgs, ServerAddressFromHostFlagOrVariables) {
  EXPECT_EQ(parse_run_args({"m"}, no_env())->server.address.to_string(), "127.0.0.1:11434");
  auto env = [](std::map<std::string, std::string> vars) -> EnvLookup {
    return [vars](const std::string& name) {
      auto it = vars.find(name);
      return it == vars.end() ? std::optional<std::string>() : std::optional<std::string>(it->second);
    };
  };
  EXPECT_EQ(parse_run_args({"m"}, env({{"OLLAMA_HOST", "0.0.0.0:8080"}}))->server.address.to_string(), "0.0.0.0:8080");
  EXPECT_EQ(parse_run_args({"m"}, env({{"OLLAMA_HOST", "a:1"}, {"HEARTH_HOST", "b:2"}}))->server.address.to_string(), "b:2");
  EXPECT_EQ(parse_run_args({"m", "--host", "[::1]:3"}, env({{"HEARTH_HOST", "b:2"}}))->server.address.to_string(), "[::1]:3");
  EXPECT_EQ(parse_run_args({"m"}, env({{"HEARTH_API_KEY", "k1"}}))->server.api_key, "k1");
  auto bad = parse_run_args({"m"}, env({{"HEARTH_HOST", "https://x"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("HEARTH_HOST"), std::string::npos) << bad.error().message;
}

TEST(CreateArgs, NameFileAndQuantize) {
  auto c = parse_create_args({"mine", "-f", "dir/Modelfile", "-q", "q4_K_M"}, no_env());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->name, "mine");
  EXPECT_EQ(c->modelfile, "dir/Modelfile");
  EXPECT_EQ(c->quantize, "q4_K_M");
  EXPECT_EQ(parse_create_args({"mine"}, no_env())->modelfile, "Modelfile");
  // --from names a GGUF the server registers in place: made absolute here, checked to exist.
  auto from = parse_create_args({"mine", "--from", "/proc/self/../self/status"}, no_env());
  ASSERT_TRUE(from.ok()) << from.error().message;
  EXPECT_EQ(from->from_file, "/proc/self/status");
  EXPECT_FALSE(parse_create_args({"mine", "--from", "/nonexistent/x.gguf"}, no_env()).ok());
  EXPECT_FALSE(parse_create_args({"mine", "--from", "/proc/self/status", "-f", "Modelfile"}, no_env()).ok());
  EXPECT_FALSE(parse_create_args({}, no_env()).ok());
  EXPECT_FALSE(parse_create_args({"a", "b"}, no_env()).ok());
  // The name is checked by the store's rules before anything is uploaded.
  EXPECT_TRUE(parse_create_args({"me/mine:v1"}, no_env()).ok());
  for (const char* bad : {"../etc/passwd", "a/../../b", "a b"}) {
    auto r = parse_create_args({bad}, no_env());
    EXPECT_FALSE(r.ok()) << bad;
  }
}

}  // namespace
}  // namespace hearth::cli
