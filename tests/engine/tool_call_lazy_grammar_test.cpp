// tool_call_grammar for each family: forced choices hold from the first token; "auto" is
// the same grammar made lazy with the family's trigger, and the trigger text is where the
// grammar's match begins (so a reply that writes it continues as a schema-valid call).
#include <gtest/gtest.h>

#include "engine/tool_call_grammar.h"
#include "sampler/grammar/grammar_matcher.h"

namespace hearth::engine {
namespace {

using Json = nlohmann::ordered_json;

Json chat_with_tools() {
  return Json::parse(R"({"messages":[{"role":"user","content":"hi"}],"tools":[
    {"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
      "properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["c","f"]}},
      "required":["city","unit"],"additionalProperties":false}}}]})");
}

bool grammar_accepts(const std::string& gbnf, const std::string& text, bool complete) {
  auto g = sampler::compile_gbnf(gbnf);
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : g.error().message) << "\n" << gbnf;
  if (!g.ok()) return false;
  sampler::GrammarMatcher m(*g);
  return m.accept_bytes(text) && (!complete || m.is_complete());
}

struct FamilyCase {
  ChatOutputFamily family;
  std::string trigger;
  bool at_start;
  std::string call;  // a whole valid reply in the family's syntax
};

TEST(ToolCallLazyGrammar, AutoIsLazyFromTheFamilysTrigger) {
  const std::vector<FamilyCase> cases = {
      {ChatOutputFamily::kHermes, "<tool_call>", false,
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"unit\": \"c\"}}\n</tool_call>"},
      {ChatOutputFamily::kPlain, "<tool_call>", false,
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"unit\": \"f\"}}\n</tool_call>"},
      {ChatOutputFamily::kMistral, "[TOOL_CALLS][", false,
       "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"unit\": \"c\"}}]"},
      {ChatOutputFamily::kLlama3, "{\"name\"", true,
       "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\", \"unit\": \"c\"}}"},
      // Families that write the name outside the JSON.
      {ChatOutputFamily::kFunctionaryV31, "<function=", false, "<function=get_weather>{\"city\": \"Oslo\", \"unit\": \"c\"}</function>"},
      {ChatOutputFamily::kGptOss, "<|channel|>commentary to=functions.", false,
       "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Oslo\", \"unit\": \"c\"}"},
      {ChatOutputFamily::kDeepSeekR1, "<｜tool▁calls▁begin｜>", false,
       "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Oslo\", \"unit\": \"c\"}"
       "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(chat_output_family_name(c.family));
    auto g = tool_call_grammar(c.family, chat_with_tools());
    ASSERT_TRUE(g.ok()) << g.error().message;
    ASSERT_EQ(g->triggers.size(), 1u);
    EXPECT_EQ(g->triggers[0].text, c.trigger);
    EXPECT_EQ(g->triggers[0].at_start, c.at_start);
    // The trigger alone is a valid start, a whole call completes, and arguments outside the
    // schema are rejected.
    EXPECT_TRUE(grammar_accepts(g->gbnf, c.trigger, false));
    EXPECT_TRUE(grammar_accepts(g->gbnf, c.call, true)) << c.call;
    std::string bad = c.call;
    bad.replace(bad.find("\"Oslo\""), 6, "42");
    EXPECT_FALSE(grammar_accepts(g->gbnf, bad, false)) << bad;
  }
}

TEST(ToolCallLazyGrammar, APrefillThatOpensACallIsContinuedUnderTheGrammar) {
  Json chat = chat_with_tools();
  chat["messages"].push_back(Json{{"role", "assistant"}, {"content", "Checking. <tool_call>"}});
  auto g = tool_call_grammar(ChatOutputFamily::kHermes, chat);
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(g->triggers.empty());  // on from the first token
  const std::string rest = "\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"unit\": \"c\"}}\n</tool_call>";
  EXPECT_TRUE(grammar_accepts(g->gbnf, rest, true));
  EXPECT_FALSE(grammar_accepts(g->gbnf, "<tool_call>" + rest, false));
  // A prefill whose call is already closed, or plain text, leaves the grammar lazy.
  chat["messages"].back()["content"] = "<tool_call>\n{}\n</tool_call> and";
  auto closed = tool_call_grammar(ChatOutputFamily::kHermes, chat);
  ASSERT_TRUE(closed.ok());
  EXPECT_EQ(closed->triggers.size(), 1u);
}

// Every family with a call opener: a prefill that wrote the opener gets a grammar for the rest
// of the call from the first token, with tool_choice "auto" and forced alike, and the parser
// given the same prefill reads that rest as the call.
TEST(ToolCallLazyGrammar, APrefilledOpenerInEveryFamily) {
  int tested = 0;
  for (int f = 0; f < kChatOutputFamilyCount; ++f) {
    const auto family = static_cast<ChatOutputFamily>(f);
    SCOPED_TRACE(chat_output_family_name(family));
    ToolCallSyntax syntax;
    ASSERT_TRUE(tool_call_syntax(family, syntax));
    const std::string opener = syntax.before_calls + syntax.before_call;
    if (opener.empty() || family == ChatOutputFamily::kGeneric) continue;
    const std::string args = "{\"city\": \"Oslo\", \"unit\": \"c\"}";
    std::string rest = syntax.name_key.empty()
                           ? "get_weather" + syntax.name_after + args
                           : "{" + (syntax.id_key.empty() ? std::string() : "\"" + syntax.id_key + "\": \"0\", ") + "\"" +
                                 syntax.name_key + "\": \"get_weather\", \"" + syntax.arguments_key + "\": " + args + "}";
    rest += syntax.after_call + syntax.after_calls;
    Json chat = chat_with_tools();
    chat["messages"].push_back(Json{{"role", "assistant"}, {"content", opener}});
    for (const Json& choice : {Json(), Json("required")}) {
      Json c = chat;
      if (!choice.is_null()) c["tool_choice"] = choice;
      auto g = tool_call_grammar(family, c);
      ASSERT_TRUE(g.ok()) << g.error().message;
      EXPECT_TRUE(g->triggers.empty());
      EXPECT_TRUE(grammar_accepts(g->gbnf, rest, true)) << rest << "\n" << g->gbnf;
      EXPECT_FALSE(grammar_accepts(g->gbnf, opener + rest, true)) << "the opener is not written twice";
    }
    ChatOutputParser parser(ChatOutputFormat{family, true, false, false, opener});
    ChatOutputDelta d = parser.feed(rest);
    ChatOutputDelta end = parser.finish();
    d.tool_calls.insert(d.tool_calls.end(), end.tool_calls.begin(), end.tool_calls.end());
    ASSERT_EQ(d.tool_calls.size(), 1u);
    EXPECT_EQ(d.tool_calls[0].arguments, "{\"city\":\"Oslo\",\"unit\":\"c\"}");
    EXPECT_EQ(d.content + end.content, "");
    ++tested;
  }
  EXPECT_GE(tested, 9);
}

TEST(ToolCallLazyGrammar, ForcedChoicesHoldFromTheFirstToken) {
  Json chat = chat_with_tools();
  chat["tool_choice"] = "required";
  auto g = tool_call_grammar(ChatOutputFamily::kHermes, chat);
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(g->triggers.empty());
  EXPECT_FALSE(g->gbnf.empty());
  EXPECT_FALSE(grammar_accepts(g->gbnf, "Sure! <tool_call>", false));
}

TEST(ToolCallLazyGrammar, NoToolsMeansNoGrammar) {
  Json chat = chat_with_tools();
  chat.erase("tools");
  auto none = tool_call_grammar(ChatOutputFamily::kHermes, chat);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->gbnf.empty());
}

}  // namespace
}  // namespace hearth::engine
