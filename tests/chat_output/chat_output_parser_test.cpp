// ChatOutputParser on hand-written model outputs of each family: the answer, reasoning and tool
// calls come out the same whether the text arrives whole, cut in two at every byte position, or
// byte by byte (streaming), and malformed calls come back as answer text.
#include <gtest/gtest.h>

#include <string>

#include "chat_output/chat_output_parser.h"
#include "parse_every_way.h"

namespace hearth {
namespace {

TEST(ChatOutputParser, HermesParallelCallsAfterText) {
  Parsed p = parse_every_way(tools_format(ChatOutputFamily::kHermes),
                             "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
                             "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>");
  EXPECT_EQ(p.content, "Let me check.\n");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, "{\"city\":\"Paris\"}");
  EXPECT_EQ(p.calls[1].arguments, "{\"city\":\"Rome\"}");
}

TEST(ChatOutputParser, Qwen3ThinkingThenCall) {
  Parsed p = parse_every_way(tools_format(ChatOutputFamily::kHermes, true),
                             "<think>\nThe user wants weather. </think>\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}\n</tool_call>");
  EXPECT_EQ(p.reasoning, "\nThe user wants weather. ");
  EXPECT_EQ(p.content, "");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, "{\"a\":1}");
}

TEST(ChatOutputParser, ReasoningOpenedByThePrompt) {
  ChatOutputFormat f{ChatOutputFamily::kDeepSeekR1, false, true, true, {}};
  Parsed p = parse_every_way(f, "Two plus two is four.\n</think>\n\nThe answer is 4.");
  EXPECT_EQ(p.reasoning, "Two plus two is four.\n");
  EXPECT_EQ(p.content, "The answer is 4.");
  Parsed unfinished = parse_every_way(f, "still thinking <");
  EXPECT_EQ(unfinished.reasoning, "still thinking <");
}

TEST(ChatOutputParser, MalformedCallIsAnswerText) {
  const std::string broken = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": }\n</tool_call> after";
  Parsed p = parse_every_way(tools_format(ChatOutputFamily::kHermes), broken);
  EXPECT_TRUE(p.calls.empty());
  EXPECT_EQ(p.content, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": }\n</tool_call>after");
  Parsed unclosed = parse_every_way(tools_format(ChatOutputFamily::kHermes), "x <tool_call>{\"name\": \"f\"");
  EXPECT_TRUE(unclosed.calls.empty());
  EXPECT_EQ(unclosed.content, "x <tool_call>{\"name\": \"f\"");
  Parsed no_name = parse_every_way(tools_format(ChatOutputFamily::kMistral), "[TOOL_CALLS][{\"arguments\": {}}]");
  EXPECT_TRUE(no_name.calls.empty());
  EXPECT_EQ(no_name.content, "[TOOL_CALLS][{\"arguments\": {}}]");
}

TEST(ChatOutputParser, CallNestedDeeperThanTheJsonLimitIsAnswerText) {
  // Printing arguments recurses once per level: a model's bracket storm must not become a call.
  const std::string deep = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": " + std::string(200, '[') +
                           std::string(200, ']') + "}}\n</tool_call>";
  Parsed p = parse_every_way(tools_format(ChatOutputFamily::kHermes), deep);
  EXPECT_TRUE(p.calls.empty());
  EXPECT_EQ(p.content, deep);
  const std::string fine = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": " + std::string(100, '[') +
                           std::string(100, ']') + "}}\n</tool_call>";
  EXPECT_EQ(parse_every_way(tools_format(ChatOutputFamily::kHermes), fine).calls.size(), 1u);
}

TEST(ChatOutputParser, Llama3BareJsonAndPythonTag) {
  Parsed p = parse_every_way(tools_format(ChatOutputFamily::kLlama3),
                             " {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, "{\"city\":\"Oslo\"}");
  EXPECT_EQ(p.content, "");
  Parsed tagged = parse_every_way(tools_format(ChatOutputFamily::kLlama3),
                                  "<|python_tag|>{\"name\": \"f\", \"parameters\": {}}");
  ASSERT_EQ(tagged.calls.size(), 1u);
  EXPECT_EQ(tagged.calls[0].name, "f");
  Parsed code = parse_every_way(tools_format(ChatOutputFamily::kLlama3), "<|python_tag|>print(1)");
  ASSERT_EQ(code.calls.size(), 1u);
  EXPECT_EQ(code.calls[0].name, "python");
  EXPECT_EQ(code.calls[0].arguments, "{\"code\":\"print(1)\"}");
  Parsed bad_utf8 = parse_every_way(tools_format(ChatOutputFamily::kLlama3), "<|python_tag|>x = '\xff'");
  ASSERT_EQ(bad_utf8.calls.size(), 1u);  // found by fuzz_chat_output: invalid UTF-8 is replaced, never thrown
  EXPECT_EQ(bad_utf8.calls[0].arguments, "{\"code\":\"x = '\xef\xbf\xbd'\"}");
  Parsed text = parse_every_way(tools_format(ChatOutputFamily::kLlama3), "{not json} and text");
  EXPECT_TRUE(text.calls.empty());
  EXPECT_EQ(text.content, "{not json} and text");
  Parsed prose = parse_every_way(tools_format(ChatOutputFamily::kLlama3), "Hello {\"name\": \"f\"}");
  EXPECT_TRUE(prose.calls.empty());
}

TEST(ChatOutputParser, MistralArrayWithIds) {
  Parsed p = parse_every_way(tools_format(ChatOutputFamily::kMistral),
                             "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"s\": \"]}\\\"\"}, \"id\": \"abcdefghi\"}, {\"name\": \"b\", \"arguments\": {}}]");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].id, "abcdefghi");
  EXPECT_EQ(p.calls[0].arguments, "{\"s\":\"]}\\\"\"}");
  EXPECT_EQ(p.calls[1].name, "b");
  EXPECT_EQ(p.content, "");
}

TEST(ChatOutputParser, DeepSeekR1Calls) {
  Parsed p = parse_every_way(
      tools_format(ChatOutputFamily::kDeepSeekR1, true),
      "<think>hmm</think>\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```"
      "<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>now\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>");
  EXPECT_EQ(p.reasoning, "hmm");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[1].name, "now");
  EXPECT_EQ(p.content, "");
}

TEST(ChatOutputParser, WithoutToolsMarkersAreText) {
  ChatOutputFormat plain{ChatOutputFamily::kHermes, false, false, false, {}};
  Parsed p = parse_every_way(plain, "<think>x</think><tool_call>{}</tool_call>");
  EXPECT_EQ(p.content, "<think>x</think><tool_call>{}</tool_call>");
}

TEST(ChatOutputParser, DetectsFamilyFromTemplate) {
  EXPECT_EQ(detect_chat_output_family("{{ '<tool_call>' }}"), ChatOutputFamily::kHermes);
  EXPECT_EQ(detect_chat_output_family("<|start_header_id|>ipython<|end_header_id|>"), ChatOutputFamily::kLlama3);
  EXPECT_EQ(detect_chat_output_family("[TOOL_CALLS]"), ChatOutputFamily::kMistral);
  EXPECT_EQ(detect_chat_output_family("<｜tool▁calls▁begin｜>"), ChatOutputFamily::kDeepSeekR1);
  EXPECT_EQ(detect_chat_output_family("{{ messages }}"), ChatOutputFamily::kPlain);
  ChatOutputFamily f;
  ASSERT_TRUE(chat_output_family_from_name(chat_output_family_name(ChatOutputFamily::kMistral), f));
  EXPECT_EQ(f, ChatOutputFamily::kMistral);
  EXPECT_FALSE(chat_output_family_from_name("nope", f));
}

}  // namespace
}  // namespace hearth
