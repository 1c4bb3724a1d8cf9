// A reply whose start the prompt already holds (an assistant prefill): the parser reads the
// prefill first, so a call whose opener was prefilled comes back as a tool call in every family
// that has an opener, and bytes the prefill left held back are never released again.
#include <gtest/gtest.h>

#include <string>

#include "parse_every_way.h"

namespace hearth {
namespace {

// The rest of one get_weather(city: Paris) call after the family's opener, from its syntax.
std::string call_after_opener(const ToolCallSyntax& s) {
  const std::string args = "{\"city\": \"Paris\"}";
  std::string call;
  if (s.name_key.empty()) {
    call = "get_weather" + s.name_after + args;
  } else {
    call = "{";
    if (!s.id_key.empty()) call += "\"" + s.id_key + "\": \"0\", ";
    call += "\"" + s.name_key + "\": \"get_weather\", \"" + s.arguments_key + "\": " + args + "}";
  }
  return call + s.after_call + s.after_calls;
}

TEST(ChatOutputPrefill, ACallWhoseOpenerWasPrefilledIsACall) {
  int tested = 0;
  for (int f = 0; f < kChatOutputFamilyCount; ++f) {
    const auto family = static_cast<ChatOutputFamily>(f);
    ToolCallSyntax syntax;
    ASSERT_TRUE(tool_call_syntax(family, syntax)) << chat_output_family_name(family);
    const std::string opener = syntax.before_calls + syntax.before_call;
    if (opener.empty()) continue;  // Llama 3, Functionary v3.2: the call has no opener to prefill
    if (family == ChatOutputFamily::kGeneric) continue;  // its whole reply is one JSON value
    ChatOutputFormat format = tools_format(family);
    format.prefilled = opener;
    Parsed p = parse_every_way(format, call_after_opener(syntax));
    ASSERT_EQ(p.calls.size(), 1u) << chat_output_family_name(family) << ": " << describe(p);
    EXPECT_EQ(p.calls[0].name, "get_weather") << chat_output_family_name(family);
    EXPECT_EQ(p.calls[0].arguments, "{\"city\":\"Paris\"}") << chat_output_family_name(family);
    EXPECT_EQ(p.content, "") << chat_output_family_name(family);
    // Without the prefill the same text is not a call (the opener is what makes it one).
    Parsed bare = parse_every_way(tools_format(family), call_after_opener(syntax));
    EXPECT_TRUE(bare.calls.empty()) << chat_output_family_name(family) << ": " << describe(bare);
    ++tested;
  }
  EXPECT_GE(tested, 9);
}

TEST(ChatOutputPrefill, PrefilledTextIsNotReleasedAgain) {
  ChatOutputFormat format = tools_format(ChatOutputFamily::kHermes);
  format.prefilled = "Sure, <tool";  // "<tool" may begin <tool_call>: held back
  Parsed text = parse_every_way(format, "s are fun");
  EXPECT_EQ(text.content, "s are fun");
  EXPECT_TRUE(text.calls.empty());
  Parsed call = parse_every_way(format, "_call>{\"name\": \"f\", \"arguments\": {}}</tool_call> done");
  ASSERT_EQ(call.calls.size(), 1u) << describe(call);
  EXPECT_EQ(call.content, "done");
  // Reasoning the prefill opened goes on as reasoning, its own text not repeated.
  ChatOutputFormat thinking = tools_format(ChatOutputFamily::kHermes, /*reasoning=*/true);
  thinking.prefilled = "<think>Let me see</thi";
  Parsed r = parse_every_way(thinking, "nk>Paris.");
  EXPECT_EQ(r.reasoning, "");
  EXPECT_EQ(r.content, "Paris.");
  Parsed r2 = parse_every_way(thinking, "s over</think>Paris.");
  EXPECT_EQ(r2.reasoning, "s over");  // "</thi" was the prefill's
  EXPECT_EQ(r2.content, "Paris.");
}

}  // namespace
}  // namespace hearth
