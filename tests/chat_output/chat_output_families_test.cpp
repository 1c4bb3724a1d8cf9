// ChatOutputParser on hand-written outputs of the families beyond Hermes/Llama/Mistral/DeepSeek:
// gpt-oss harmony, Command R7B, Functionary v3.1 and v3.2, Firefunction v2, Granite, Kimi-K2 and
// the generic JSON reply, each cut at every byte; and family detection on real templates.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "chat_output/chat_output_parser.h"
#include "common/test_paths.h"
#include "parse_every_way.h"

namespace hearth {
namespace {

constexpr auto kGptOss = ChatOutputFamily::kGptOss;

TEST(ChatOutputFamilies, HarmonyAnalysisThenFinal) {
  Parsed p = parse_every_way(tools_format(kGptOss, true),
                             "<|channel|>analysis<|message|>User greets. Reply.<|end|><|start|>assistant<|channel|>final<|message|>Hello there!");
  EXPECT_EQ(p.reasoning, "User greets. Reply.");
  EXPECT_EQ(p.content, "Hello there!");
  EXPECT_TRUE(p.calls.empty());
  // Without tools the channels are split all the same.
  Parsed no_tools = parse_every_way(ChatOutputFormat{kGptOss, false, true, false, {}},
                                    "<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>final<|message|>b<|return|>");
  EXPECT_EQ(no_tools.reasoning, "a");
  EXPECT_EQ(no_tools.content, "b");
}

TEST(ChatOutputFamilies, HarmonyToolCalls) {
  Parsed p = parse_every_way(tools_format(kGptOss, true),
                             "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary "
                             "to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>");
  EXPECT_EQ(p.reasoning, "Need weather.");
  EXPECT_EQ(p.content, "");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, "{\"city\":\"Paris\"}");
  // The recipient may come before the channel; the call may end the text without <|call|>
  // (an end-of-generation token the engine does not print).
  Parsed first = parse_every_way(tools_format(kGptOss, true),
                                 " to=functions.lookup<|channel|>commentary json<|message|>{\"q\": [1, 2]}");
  ASSERT_EQ(first.calls.size(), 1u);
  EXPECT_EQ(first.calls[0].name, "lookup");
  EXPECT_EQ(first.calls[0].arguments, "{\"q\":[1,2]}");
  // A commentary message without a recipient is a preamble for the user.
  Parsed preamble = parse_every_way(tools_format(kGptOss, true),
                                    "<|channel|>commentary<|message|>Checking.<|end|><|start|>assistant<|channel|>commentary to=functions.f "
                                    "<|constrain|>json<|message|>{}");
  EXPECT_EQ(preamble.content, "Checking.");
  ASSERT_EQ(preamble.calls.size(), 1u);
}

TEST(ChatOutputFamilies, HarmonyMalformedIsText) {
  const std::string broken = "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"a\": ";
  Parsed p = parse_every_way(tools_format(kGptOss, true), broken);
  EXPECT_TRUE(p.calls.empty());
  EXPECT_EQ(p.content, broken);
  Parsed plain = parse_every_way(tools_format(kGptOss, true), "No channels here, just words.");
  EXPECT_EQ(plain.content, "No channels here, just words.");
  std::string long_text(400, 'x');
  Parsed long_plain = parse_every_way(tools_format(kGptOss, true), long_text + "<|message|>y");
  EXPECT_EQ(long_plain.content, long_text + "<|message|>y");
}

TEST(ChatOutputFamilies, CommandR7B) {
  Parsed p = parse_every_way(tools_format(ChatOutputFamily::kCommandR7B, true),
                             "<|START_THINKING|>I will look it up.<|END_THINKING|><|START_ACTION|>[\n"
                             "    {\"tool_call_id\": \"0\", \"tool_name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}},\n"
                             "    {\"tool_call_id\": \"1\", \"tool_name\": \"now\", \"parameters\": {}}\n]<|END_ACTION|>");
  EXPECT_EQ(p.reasoning, "I will look it up.");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].id, "0");
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, "{\"city\":\"Paris\"}");
  EXPECT_EQ(p.calls[1].name, "now");
  Parsed answer = parse_every_way(tools_format(ChatOutputFamily::kCommandR7B, true),
                                  "<|START_THINKING|>Easy.<|END_THINKING|><|START_RESPONSE|>It is sunny.<|END_RESPONSE|>");
  EXPECT_EQ(answer.reasoning, "Easy.");
  EXPECT_EQ(answer.content, "It is sunny.");
  Parsed wrong_keys = parse_every_way(tools_format(ChatOutputFamily::kCommandR7B),
                                      "<|START_ACTION|>[{\"name\": \"f\"}]<|END_ACTION|>");
  EXPECT_TRUE(wrong_keys.calls.empty());
  EXPECT_EQ(wrong_keys.content, "<|START_ACTION|>[{\"name\": \"f\"}]<|END_ACTION|>");
}

TEST(ChatOutputFamilies, FunctionaryV31) {
  Parsed p = parse_every_way(tools_format(ChatOutputFamily::kFunctionaryV31),
                             "Sure. <function=get_weather>{\"city\": \"Paris\"}</function><function=now>{}</function>");
  EXPECT_EQ(p.content, "Sure. ");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, "{\"city\":\"Paris\"}");
  EXPECT_EQ(p.calls[1].name, "now");
  Parsed code = parse_every_way(tools_format(ChatOutputFamily::kFunctionaryV31), "<|python_tag|>print(2)");
  ASSERT_EQ(code.calls.size(), 1u);
  EXPECT_EQ(code.calls[0].arguments, "{\"code\":\"print(2)\"}");
  Parsed bad = parse_every_way(tools_format(ChatOutputFamily::kFunctionaryV31), "<function=a b>{}</function>");
  EXPECT_TRUE(bad.calls.empty());
  EXPECT_EQ(bad.content, "<function=a b>{}</function>");
}

TEST(ChatOutputFamilies, FunctionaryV32) {
  Parsed p = parse_every_way(tools_format(ChatOutputFamily::kFunctionaryV32),
                             "all\nLet me check.>>>get_weather\n{\"city\": \"Paris\"}>>>now\n{}");
  EXPECT_EQ(p.content, "Let me check.");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, "{\"city\":\"Paris\"}");
  EXPECT_EQ(p.calls[1].name, "now");
  Parsed first = parse_every_way(tools_format(ChatOutputFamily::kFunctionaryV32), "get_weather\n{\"city\": \"Rome\"}");
  ASSERT_EQ(first.calls.size(), 1u);
  EXPECT_EQ(first.content, "");
  Parsed code = parse_every_way(tools_format(ChatOutputFamily::kFunctionaryV32), "python\nimport os");
  ASSERT_EQ(code.calls.size(), 1u);
  EXPECT_EQ(code.calls[0].arguments, "{\"code\":\"import os\"}");
  Parsed text = parse_every_way(tools_format(ChatOutputFamily::kFunctionaryV32), "all\nJust text, a >>> b.");
  EXPECT_TRUE(text.calls.empty());
  EXPECT_EQ(text.content, "Just text, a >>> b.");
  const std::string long_name(80, 'n');
  Parsed not_a_name = parse_every_way(tools_format(ChatOutputFamily::kFunctionaryV32), long_name + "\n{}");
  EXPECT_TRUE(not_a_name.calls.empty());
  EXPECT_EQ(not_a_name.content, long_name + "\n{}");
  // Found by fuzz_chat_output: a recipient followed by text is answer text, and a later
  // recipient still opens a call, however the text is cut.
  Parsed not_json = parse_every_way(tools_format(ChatOutputFamily::kFunctionaryV32), "al1l\nhi>>>f\n{\"a\": 1}");
  EXPECT_EQ(not_json.content, "al1l\nhi");
  ASSERT_EQ(not_json.calls.size(), 1u);
  EXPECT_EQ(not_json.calls[0].name, "f");
  Parsed mistral_text = parse_every_way(tools_format(ChatOutputFamily::kMistral), "[TOOL_CALLS] oops [TOOL_CALLS][{\"name\": \"f\"}]");
  EXPECT_EQ(mistral_text.content, "[TOOL_CALLS] oops ");
  ASSERT_EQ(mistral_text.calls.size(), 1u);
  Parsed broken = parse_every_way(tools_format(ChatOutputFamily::kFunctionaryV32), "f\n{\"a\": ");
  EXPECT_TRUE(broken.calls.empty());
  EXPECT_EQ(broken.content, "f\n{\"a\": ");
}

TEST(ChatOutputFamilies, FirefunctionAndGranite) {
  Parsed p = parse_every_way(tools_format(ChatOutputFamily::kFirefunction),
                             " functools[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"now\", \"arguments\": {}}]");
  EXPECT_EQ(p.content, "");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[1].name, "now");
  Parsed bare = parse_every_way(tools_format(ChatOutputFamily::kFirefunction), "functools[{\"name\": \"f\", \"arguments\": {}}]");
  ASSERT_EQ(bare.calls.size(), 1u);
  EXPECT_EQ(bare.content, "");
  Parsed inside = parse_every_way(tools_format(ChatOutputFamily::kFirefunction), "myfunctools[{\"name\": \"f\", \"arguments\": {}}]");
  EXPECT_TRUE(inside.calls.empty());
  Parsed g = parse_every_way(tools_format(ChatOutputFamily::kGranite, true),
                             "<think>Weather needed.</think><|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}]");
  EXPECT_EQ(g.reasoning, "Weather needed.");
  ASSERT_EQ(g.calls.size(), 1u);
  EXPECT_EQ(g.calls[0].arguments, "{\"city\":\"Oslo\"}");
  Parsed answer = parse_every_way(tools_format(ChatOutputFamily::kGranite, true), "<think>Hm.</think><response>Hi!</response>");
  EXPECT_EQ(answer.reasoning, "Hm.");
  EXPECT_EQ(answer.content, "Hi!");
}

TEST(ChatOutputFamilies, KimiK2) {
  Parsed p = parse_every_way(tools_format(ChatOutputFamily::kKimiK2, true),
                             "<think>x</think>Sure.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
                             "<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|><|tool_call_begin|>functions.now:1"
                             "<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>");
  EXPECT_EQ(p.reasoning, "x");
  EXPECT_EQ(p.content, "Sure.");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].id, "functions.get_weather:0");
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, "{\"city\":\"Paris\"}");
  EXPECT_EQ(p.calls[1].name, "now");
}

TEST(ChatOutputFamilies, GenericJsonReply) {
  const auto f = tools_format(ChatOutputFamily::kGeneric);
  Parsed one = parse_every_way(f, "{\"tool_call\": {\"name\": \"f\", \"arguments\": {\"a\": 1}}}");
  ASSERT_EQ(one.calls.size(), 1u);
  EXPECT_EQ(one.calls[0].arguments, "{\"a\":1}");
  Parsed many = parse_every_way(f, " {\"tool_calls\": [{\"name\": \"f\", \"arguments\": {}, \"id\": \"c1\"}, {\"name\": \"g\", \"arguments\": {}}]}");
  ASSERT_EQ(many.calls.size(), 2u);
  EXPECT_EQ(many.calls[0].id, "c1");
  Parsed response = parse_every_way(f, "{\"response\": \"Hello \\\"you\\\"\"}");
  EXPECT_TRUE(response.calls.empty());
  EXPECT_EQ(response.content, "Hello \"you\"");
  Parsed text = parse_every_way(f, "Plain words {\"tool_call\": {}}");
  EXPECT_EQ(text.content, "Plain words {\"tool_call\": {}}");
  Parsed other = parse_every_way(f, "{\"answer\": 1}");
  EXPECT_EQ(other.content, "{\"answer\": 1}");
}

TEST(ChatOutputFamilies, GenericReplyCutOffInsideTheAnswerIsItsText) {
  const auto f = tools_format(ChatOutputFamily::kGeneric);
  // max_tokens reached inside the response string: its text so far, unescaped.
  Parsed cut = parse_every_way(f, "{\"response\": \"Hello \\\"wor");
  EXPECT_TRUE(cut.calls.empty());
  EXPECT_EQ(cut.content, "Hello \"wor");
  EXPECT_EQ(parse_every_way(f, "{ \"response\" : \"caf\\u00e9 \\u00").content, "caf\u00e9 ");  // a cut \u escape is left out
  EXPECT_EQ(parse_every_way(f, "{\"response\": \"a\\nb\\").content, "a\nb");
  EXPECT_EQ(parse_every_way(f, "{\"response\": \"done\"").content, "done");  // only the brace missing
  EXPECT_EQ(parse_every_way(f, "{\"response\": \"").content, "");
  // A cut-off call is not an answer: it stays the raw text.
  EXPECT_EQ(parse_every_way(f, "{\"tool_calls\": [{\"name\": \"f\"").content, "{\"tool_calls\": [{\"name\": \"f\"");
}

TEST(ChatOutputFamilies, FunctionaryV32WithoutToolsDropsTheAllLine) {
  ChatOutputFormat f{ChatOutputFamily::kFunctionaryV32, /*parse_tool_calls=*/false, false, false, {}};
  EXPECT_EQ(parse_every_way(f, "all\nHello there.").content, "Hello there.");
  // No tools offered: another recipient is not a call, and not framing either.
  Parsed named = parse_every_way(f, "get_weather\n{\"city\": \"Rome\"}");
  EXPECT_TRUE(named.calls.empty());
  EXPECT_EQ(named.content, "get_weather\n{\"city\": \"Rome\"}");
  EXPECT_EQ(parse_every_way(f, "Hi >>>all\n").content, "Hi >>>all\n");
  EXPECT_TRUE(family_frames_replies(ChatOutputFamily::kFunctionaryV32));
  EXPECT_FALSE(family_frames_replies(ChatOutputFamily::kHermes));
}

std::string read_template(const std::string& name) {
  std::ifstream in(test::source_dir() + "/tests/template/corpus/" + name + ".jinja");
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_FALSE(s.str().empty()) << name;
  return s.str();
}

TEST(ChatOutputFamilies, DetectsFamiliesOfRealTemplates) {
  const std::pair<const char*, ChatOutputFamily> cases[] = {
      {"CohereForAI-c4ai-command-r7b-12-2024-tool_use", ChatOutputFamily::kCommandR7B},
      {"CohereForAI-c4ai-command-r-plus-tool_use", ChatOutputFamily::kGeneric},
      {"meetkai-functionary-medium-v3.1", ChatOutputFamily::kFunctionaryV31},
      {"meetkai-functionary-medium-v3.2", ChatOutputFamily::kFunctionaryV32},
      {"fireworks-ai-llama-3-firefunction-v2", ChatOutputFamily::kFirefunction},
      {"Qwen-Qwen2.5-7B-Instruct", ChatOutputFamily::kHermes},
      {"meta-llama-Llama-3.1-8B-Instruct", ChatOutputFamily::kLlama3},
      {"mistralai-Mistral-Nemo-Instruct-2407", ChatOutputFamily::kMistral},
      {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", ChatOutputFamily::kDeepSeekR1},
      {"google-gemma-2-2b-it", ChatOutputFamily::kPlain},
      {"openai-gpt-oss-120b", ChatOutputFamily::kGptOss},
      {"ibm-granite-granite-3.3-2B-Instruct", ChatOutputFamily::kGranite},
      {"moonshotai-Kimi-K2-Instruct", ChatOutputFamily::kKimiK2},
  };
  for (const auto& [name, family] : cases) {
    EXPECT_EQ(chat_output_family_name(detect_chat_output_family(read_template(name))), std::string(chat_output_family_name(family))) << name;
  }
  EXPECT_TRUE(template_writes_reasoning(read_template("CohereForAI-c4ai-command-r7b-12-2024-tool_use")));
  EXPECT_TRUE(template_writes_reasoning(read_template("openai-gpt-oss-120b")));
  EXPECT_FALSE(template_writes_reasoning(read_template("Qwen-Qwen2.5-7B-Instruct")));
  for (const auto& f : {"command_r7b", "functionary_v3_1", "functionary_v3_2", "firefunction_v2", "granite", "kimi_k2", "gpt_oss", "generic"}) {
    ChatOutputFamily out;
    ASSERT_TRUE(chat_output_family_from_name(f, out)) << f;
    EXPECT_EQ(std::string(chat_output_family_name(out)), f);
  }
}

}  // namespace
}  // namespace hearth
