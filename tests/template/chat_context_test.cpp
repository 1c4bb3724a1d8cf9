// Checks the OpenAI request -> template context translation and the chat-level rendering rules
// (system-role polyfill, bos/eos trimming) on small hand-written templates.
#include <gtest/gtest.h>

#include "template/chat_context.h"
#include "template/chat_render.h"

namespace hearth {
namespace {

using Json = nlohmann::ordered_json;

TEST(ChatContext, JoinsTextPartsAndParsesArguments) {
  Json request = Json::parse(R"({
    "messages": [
      {"role": "user", "content": [{"type": "text", "text": "Hello, "}, {"type": "text", "text": "world"}]},
      {"role": "assistant", "content": null, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"b\": 1, \"a\": [2]}"}},
        {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "not json"}}]},
      {"role": "tool", "tool_call_id": "c1", "name": "f", "content": "42"}],
    "tools": [{"type": "function", "function": {"name": "f"}}],
    "add_generation_prompt": false})");
  auto ctx = build_chat_context(request, {"<B>", "<E>", true, true});
  ASSERT_TRUE(ctx.ok()) << ctx.error().message;
  const Json& c = *ctx;
  EXPECT_EQ(c["messages"][0]["content"], "Hello, world");
  EXPECT_EQ(c["messages"][1]["tool_calls"][0]["function"]["arguments"].dump(), R"({"b":1,"a":[2]})");
  EXPECT_EQ(c["messages"][1]["tool_calls"][1]["function"]["arguments"], "not json");
  EXPECT_EQ(c["messages"][2]["tool_call_id"], "c1");
  EXPECT_EQ(c["messages"][2]["name"], "f");
  EXPECT_EQ(c["tools"][0]["function"]["name"], "f");
  EXPECT_EQ(c["add_generation_prompt"], false);
  EXPECT_EQ(c["bos_token"], "<B>");
  EXPECT_EQ(c["eos_token"], "<E>");
}

TEST(ChatContext, ArgumentsNestedTooDeeplyStayAString) {
  // A JSON string in a request may hold any depth; parsed, it would be printed and converted by
  // recursion, so past the JSON nesting limit it stays the string it was.
  const std::string deep = "{\"a\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  Json request = {{"messages", Json::array({{{"role", "assistant"}, {"content", nullptr},
                                             {"tool_calls", Json::array({{{"function", {{"name", "f"}, {"arguments", deep}}}}})}}})}};
  auto ctx = build_chat_context(request);
  ASSERT_TRUE(ctx.ok()) << ctx.error().message;
  EXPECT_EQ((*ctx)["messages"][0]["tool_calls"][0]["function"]["arguments"], deep);
}

TEST(ChatContext, DefaultsAndOmissions) {
  auto ctx = build_chat_context(Json::parse(R"({"messages": [{"role": "user", "content": "x"}]})"));
  ASSERT_TRUE(ctx.ok());
  EXPECT_FALSE(ctx->contains("tools"));
  EXPECT_EQ((*ctx)["add_generation_prompt"], true);
  EXPECT_EQ((*ctx)["bos_token"], "<s>");
}

TEST(ChatContext, RejectsMalformedRequests) {
  EXPECT_FALSE(build_chat_context(Json::parse("[]")).ok());
  EXPECT_FALSE(build_chat_context(Json::parse(R"({"messages": "hi"})")).ok());
  EXPECT_FALSE(build_chat_context(Json::parse(R"({"messages": [{"content": "no role"}]})")).ok());
  EXPECT_FALSE(build_chat_context(Json::parse(R"({"messages": [{"role": "user", "content": 5}]})")).ok());
  EXPECT_FALSE(build_chat_context(Json::parse(R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})")).ok());
  EXPECT_FALSE(build_chat_context(Json::parse(R"({"messages": [], "tools": {}})")).ok());
  auto bad = build_chat_context(Json::parse(R"({"messages": [{"role": "user", "content": "x"}], "add_generation_prompt": "yes"})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("add_generation_prompt"), std::string::npos);
}

TEST(ChatRender, FoldsSystemIntoFirstUserTurnWhenTemplateLacksSystemRole) {
  const std::string src =
      "{{ bos_token }}{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('no system') }}{% endif %}"
      "[{{ m.role }}:{{ m.content }}]{% endfor %}{{ eos_token }}";
  auto t = ChatTemplate::create(src, "<s>", "</s>", "t.jinja");
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->capabilities().supports_system_role);
  auto out = t->render(Json::parse(R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]})"));
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(*out, "[user:S\nU]");  // leading bos and trailing eos are left to the tokenizer
}

TEST(ChatRender, TemplateErrorsAreValues) {
  auto t = ChatTemplate::create("{{ raise_exception('nope') }}", "<s>", "</s>", "t.jinja");
  ASSERT_TRUE(t.ok());
  auto out = t->render(Json::parse(R"({"messages": []})"));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().message, "t.jinja:1: nope");
  EXPECT_FALSE(ChatTemplate::create("{% for %}", "<s>", "</s>").ok());
}

TEST(ChatRender, AThinkingLevelReachesATemplateThatReadsOne) {
  // gpt-oss's template prints its system header's "Reasoning: " from reasoning_effort.
  const std::string src =
      "Reasoning: {{ reasoning_effort | default('medium') }}|{% for m in messages %}{{ m.content }}{% endfor %}";
  auto t = ChatTemplate::create(src, "<s>", "</s>", "t.jinja");
  ASSERT_TRUE(t.ok());
  auto level = t->render(Json::parse(R"({"messages": [{"role": "user", "content": "U"}], "reasoning_effort": "high"})"));
  ASSERT_TRUE(level.ok()) << level.error().message;
  EXPECT_EQ(*level, "Reasoning: high|U");
  auto none = t->render(Json::parse(R"({"messages": [{"role": "user", "content": "U"}]})"));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, "Reasoning: medium|U");
}

}  // namespace
}  // namespace hearth
