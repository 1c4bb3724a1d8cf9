// forced_tool_call_grammar in every family's syntax: a call written the way the family writes it
// matches the grammar, the parser reads that same text back as the call, and a call to a
// function the grammar does not allow, or with arguments outside the schema, does not match.
#include <gtest/gtest.h>

#include <string>

#include "chat_output/chat_output_parser.h"
#include "engine/tool_call_grammar.h"
#include "sampler/grammar/compiled_grammar.h"
#include "sampler/grammar/grammar_matcher.h"

namespace hearth::engine {
namespace {

using Json = nlohmann::ordered_json;

Json chat_with_tools(const Json& tool_choice) {
  Json weather = {{"type", "function"},
                  {"function",
                   {{"name", "get_weather"},
                    {"parameters", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}, {"required", {"city"}}}}}}};
  Json now = {{"type", "function"}, {"function", {{"name", "now"}, {"parameters", {{"type", "object"}, {"properties", Json::object()}}}}}};
  return Json{{"messages", Json::array()}, {"tools", {weather, now}}, {"tool_choice", tool_choice}};
}

bool matches(const std::string& gbnf, const std::string& text) {
  auto compiled = sampler::compile_gbnf(gbnf);
  EXPECT_TRUE(compiled.ok()) << (compiled.ok() ? "" : compiled.error().message) << "\n" << gbnf;
  if (!compiled.ok()) return false;
  sampler::GrammarMatcher m(*compiled);
  return m.accept_bytes(text) && m.is_complete();
}

struct Case {
  ChatOutputFamily family;
  std::string call;     // one call to get_weather(city: Paris), as the family writes it
  std::string other;    // a call to `now` (the named-function grammar must refuse it)
};

TEST(ToolCallGrammar, EveryFamilyForcesItsOwnSyntax) {
  const Case cases[] = {
      {ChatOutputFamily::kHermes, "<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}\n</tool_call>",
       "<tool_call>\n{\"name\":\"now\",\"arguments\":{}}\n</tool_call>"},
      {ChatOutputFamily::kLlama3, "{\"name\":\"get_weather\",\"parameters\":{\"city\":\"Paris\"}}", "{\"name\":\"now\",\"parameters\":{}}"},
      {ChatOutputFamily::kMistral, "[TOOL_CALLS][{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}]",
       "[TOOL_CALLS][{\"name\":\"now\",\"arguments\":{}}]"},
      {ChatOutputFamily::kCommandR7B,
       "<|START_ACTION|>[{\"tool_call_id\":\"0\",\"tool_name\":\"get_weather\",\"parameters\":{\"city\":\"Paris\"}}]<|END_ACTION|>",
       "<|START_ACTION|>[{\"tool_call_id\":\"0\",\"tool_name\":\"now\",\"parameters\":{}}]<|END_ACTION|>"},
      {ChatOutputFamily::kFunctionaryV31, "<function=get_weather>{\"city\":\"Paris\"}</function>", "<function=now>{}</function>"},
      {ChatOutputFamily::kFunctionaryV32, "get_weather\n{\"city\":\"Paris\"}", "now\n{}"},
      {ChatOutputFamily::kFirefunction, " functools[{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}]",
       " functools[{\"name\":\"now\",\"arguments\":{}}]"},
      {ChatOutputFamily::kGranite, "<|tool_call|>[{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}]",
       "<|tool_call|>[{\"name\":\"now\",\"arguments\":{}}]"},
      {ChatOutputFamily::kKimiK2,
       "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\":\"Paris\"}"
       "<|tool_call_end|><|tool_calls_section_end|>",
       "<|tool_calls_section_begin|><|tool_call_begin|>functions.now:0<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>"},
      {ChatOutputFamily::kGptOss, "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}",
       "<|channel|>commentary to=functions.now <|constrain|>json<|message|>{}"},
      {ChatOutputFamily::kDeepSeekR1,
       "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\":\"Paris\"}\n```<｜tool▁call▁end｜>"
       "<｜tool▁calls▁end｜>",
       "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>now\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"},
      {ChatOutputFamily::kGeneric, "{\"tool_calls\": [{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}]}",
       "{\"tool_calls\": [{\"name\":\"now\",\"arguments\":{}}]}"},
  };
  for (const auto& c : cases) {
    const std::string family = chat_output_family_name(c.family);
    auto required = forced_tool_call_grammar(c.family, chat_with_tools("required"));
    ASSERT_TRUE(required.ok()) << family << ": " << required.error().message;
    EXPECT_TRUE(matches(*required, c.call)) << family << "\n" << *required;
    EXPECT_TRUE(matches(*required, c.other)) << family;
    auto named = forced_tool_call_grammar(c.family, chat_with_tools(Json{{"type", "function"}, {"function", {{"name", "get_weather"}}}, {"name", "get_weather"}}));
    ASSERT_TRUE(named.ok()) << family;
    EXPECT_TRUE(matches(*named, c.call)) << family;
    EXPECT_FALSE(matches(*named, c.other)) << family << ": the named function only";
    std::string wrong_args = c.call;
    wrong_args.replace(wrong_args.find("\"Paris\""), 7, "42");
    EXPECT_FALSE(matches(*required, wrong_args)) << family << ": arguments outside the schema";

    ChatOutputParser parser(ChatOutputFormat{c.family, true, true, false, {}});
    ChatOutputDelta d = parser.feed(c.call);
    ChatOutputDelta end = parser.finish();
    d.tool_calls.insert(d.tool_calls.end(), end.tool_calls.begin(), end.tool_calls.end());
    ASSERT_EQ(d.tool_calls.size(), 1u) << family;
    EXPECT_EQ(d.tool_calls[0].name, "get_weather") << family;
    EXPECT_EQ(d.tool_calls[0].arguments, "{\"city\":\"Paris\"}") << family;
    EXPECT_EQ(d.content + end.content, "") << family;
  }
}

TEST(ToolCallGrammar, ParallelCallsInNameFirstFamilies) {
  auto g = forced_tool_call_grammar(ChatOutputFamily::kFunctionaryV32, chat_with_tools("required"));
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(matches(*g, "get_weather\n{\"city\":\"Rome\"}>>>now\n{}"));
  Json one = chat_with_tools("required");
  one["parallel_tool_calls"] = false;
  auto single = forced_tool_call_grammar(ChatOutputFamily::kFunctionaryV32, one);
  ASSERT_TRUE(single.ok());
  EXPECT_FALSE(matches(*single, "get_weather\n{\"city\":\"Rome\"}>>>now\n{}"));
  // gpt-oss writes one call per turn.
  auto harmony = forced_tool_call_grammar(ChatOutputFamily::kGptOss, chat_with_tools("required"));
  ASSERT_TRUE(harmony.ok());
  EXPECT_FALSE(matches(*harmony, "<|channel|>commentary to=functions.now <|constrain|>json<|message|>{}<|channel|>commentary to=functions.now "
                                 "<|constrain|>json<|message|>{}"));
  auto missing = forced_tool_call_grammar(ChatOutputFamily::kKimiK2, chat_with_tools(Json{{"type", "function"}, {"function", {{"name", "nope"}}}, {"name", "nope"}}));
  EXPECT_FALSE(missing.ok());
}

TEST(ToolCallGrammar, GenericReplyIsACallOrAResponse) {
  Json chat = chat_with_tools("auto");
  auto g = generic_reply_grammar(chat);
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_TRUE(matches(*g, "{\"response\": \"It is sunny.\"}"));
  EXPECT_TRUE(matches(*g, "{\"tool_calls\": [{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}]}"));
  EXPECT_FALSE(matches(*g, "{\"tool_calls\": [{\"name\":\"get_weather\",\"arguments\":{}}]}")) << "city is required";
  EXPECT_FALSE(matches(*g, "It is sunny."));
  chat.erase("tool_choice");
  EXPECT_TRUE(generic_reply_grammar(chat).ok());
  EXPECT_EQ(*generic_reply_grammar(chat_with_tools("none")), "");
  ChatOutputParser parser(ChatOutputFormat{ChatOutputFamily::kGeneric, true, false, false, {}});
  ChatOutputDelta d = parser.feed("{\"response\": \"It is sunny.\"}");
  ChatOutputDelta end = parser.finish();
  EXPECT_EQ(d.content + end.content, "It is sunny.");
}

}  // namespace
}  // namespace hearth::engine
