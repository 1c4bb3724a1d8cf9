// Real templates of the tool-call families that have no golden yet (gpt-oss, Granite 3.3,
// Kimi-K2; see corpus/README.md): they load, and a conversation with tools, an assistant tool
// call and its result renders with the family's own call syntax (gpt-oss, Kimi-K2), the syntax the output parser reads back from the model.
#include <gtest/gtest.h>

#include <string>

#include "common/test_paths.h"
#include "template/chat_render.h"
#include "util/file_io.h"

namespace hearth {
namespace {

using Json = nlohmann::ordered_json;

Json tool_conversation() {
  Json tool = {{"type", "function"},
               {"function",
                {{"name", "get_weather"},
                 {"description", "Weather of a city"},
                 {"parameters", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}, {"required", {"city"}}}}}}};
  Json call = {{"id", "functions.get_weather:0"}, {"type", "function"}, {"function", {{"name", "get_weather"}, {"arguments", {{"city", "Paris"}}}}}};
  return Json{{"messages",
               {{{"role", "user"}, {"content", "Weather in Paris?"}},
                {{"role", "assistant"}, {"content", ""}, {"tool_calls", {call}}},
                {{"role", "tool"}, {"tool_call_id", "functions.get_weather:0"}, {"content", "{\"temp\": 21}"}}}},
              {"tools", {tool}},
              {"add_generation_prompt", true}};
}

std::string render(const std::string& name) {
  auto source = read_file(test::source_dir() + "/tests/template/corpus/" + name + ".jinja");
  EXPECT_TRUE(source.ok()) << name;
  if (!source.ok()) return {};
  auto tmpl = ChatTemplate::create(*source, "<|startoftext|>", "<|endoftext|>", name + ".jinja");
  EXPECT_TRUE(tmpl.ok()) << name << ": " << (tmpl.ok() ? "" : tmpl.error().message);
  if (!tmpl.ok()) return {};
  auto text = tmpl->render(tool_conversation());
  EXPECT_TRUE(text.ok()) << name << ": " << (text.ok() ? "" : text.error().message);
  return text.ok() ? *text : std::string();
}

TEST(FamilyTemplates, GptOssRendersHarmonyCalls) {
  const std::string text = render("openai-gpt-oss-120b");
  EXPECT_NE(text.find("<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\"}<|call|>"),
            std::string::npos) << text;
  EXPECT_NE(text.find("<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>"), std::string::npos) << text;
  const std::string prompt_end = "<|start|>assistant";
  EXPECT_EQ(text.substr(text.size() - prompt_end.size()), prompt_end) << text;
  EXPECT_EQ(text.find("Respond in JSON format"), std::string::npos) << "gpt-oss has its own call syntax";
}

TEST(FamilyTemplates, GraniteRendersWithoutTheGenericJsonLine) {
  // Granite 3.3 renders neither the tools nor past calls the way the probes look for them, so
  // they are polyfilled; the reply syntax is its own (<|tool_call|>), never the generic JSON.
  const std::string text = render("ibm-granite-granite-3.3-2B-Instruct");
  EXPECT_NE(text.find("\"get_weather\""), std::string::npos) << text;
  EXPECT_EQ(text.find("Respond in JSON format"), std::string::npos) << "Granite has its own call syntax";
}

TEST(FamilyTemplates, KimiRendersCallSection) {
  const std::string text = render("moonshotai-Kimi-K2-Instruct");
  EXPECT_NE(text.find("<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"),
            std::string::npos) << text;
}

}  // namespace
}  // namespace hearth
