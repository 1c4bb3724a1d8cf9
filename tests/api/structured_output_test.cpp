// Structured-output fields → engine grammar, per dialect: the GBNF each field must produce
// (the any-object grammar, or the schema's grammar from the sampler's converter, or the user's
// GBNF as is), and that text output stays unconstrained. Refusals are in the bad-body table of
// request_translation_test.cpp.
#include <gtest/gtest.h>

#include "api/ollama.h"
#include "api/openai.h"
#include "sampler/grammar/json_schema_grammar.h"

namespace hearth::api {
namespace {

const char* const kSchema = R"({"type":"object","properties":{"name":{"type":"string"},"n":{"type":"integer"}},"required":["name"]})";

std::string schema_gbnf() {
  auto g = sampler::json_schema_to_gbnf(Json::parse(kSchema));
  EXPECT_TRUE(g.ok());
  return g.ok() ? *g : "";
}

template <typename Parse>
std::string grammar_of(Parse parse, const std::string& text) {
  auto body = parse_json_object(text);
  EXPECT_TRUE(body.ok()) << text;
  if (!body.ok()) return "<bad body>";
  auto job = parse(*body);
  EXPECT_TRUE(job.ok()) << text << ": " << job.error().message;
  return job.ok() ? job->request.grammar : "<error>";
}

TEST(StructuredOutput, OllamaFormat) {
  const std::string chat = R"("model":"m","messages":[{"role":"user","content":"hi"}])";
  EXPECT_EQ(grammar_of(parse_ollama_generate, R"({"model":"m","prompt":"hi","format":"json"})"), sampler::json_object_gbnf());
  EXPECT_EQ(grammar_of(parse_ollama_chat, "{" + chat + R"(,"format":)" + kSchema + "}"), schema_gbnf());
  EXPECT_EQ(grammar_of(parse_ollama_chat, "{" + chat + R"(,"format":""})"), "");
  EXPECT_EQ(grammar_of(parse_ollama_chat, "{" + chat + R"(,"format":null})"), "");
  EXPECT_EQ(grammar_of(parse_ollama_chat, "{" + chat + "}"), "");
}

TEST(StructuredOutput, OpenAiResponseFormat) {
  const std::string msgs = R"("messages":[{"role":"user","content":"hi"}])";
  EXPECT_EQ(grammar_of(parse_openai_chat, "{" + msgs + R"(,"response_format":{"type":"text"}})"), "");
  EXPECT_EQ(grammar_of(parse_openai_chat, "{" + msgs + R"(,"response_format":{"type":"json_object"}})"), sampler::json_object_gbnf());
  EXPECT_EQ(grammar_of(parse_openai_chat, "{" + msgs + R"(,"response_format":{"type":"json_schema","json_schema":{"name":"p","strict":true,"schema":)" +
                                              kSchema + "}}}"),
            schema_gbnf());
  // llama-server: a schema beside json_object, and schema directly in response_format.
  EXPECT_EQ(grammar_of(parse_openai_chat, "{" + msgs + R"(,"response_format":{"type":"json_object","schema":)" + kSchema + "}}"), schema_gbnf());
  EXPECT_EQ(grammar_of(parse_openai_completion, R"({"prompt":"x","response_format":{"type":"json_schema","schema":)" + std::string(kSchema) + "}}"),
            schema_gbnf());
}

TEST(StructuredOutput, LlamaServerGrammarAndJsonSchema) {
  EXPECT_EQ(grammar_of(parse_openai_completion, R"({"prompt":"x","grammar":"root ::= [0-9]+"})"), "root ::= [0-9]+");
  EXPECT_EQ(grammar_of(parse_openai_completion, R"({"prompt":"x","json_schema":)" + std::string(kSchema) + "}"), schema_gbnf());
  EXPECT_EQ(grammar_of(parse_openai_chat, R"({"messages":[{"role":"user","content":"hi"}],"grammar":"root ::= \"a\""})"), "root ::= \"a\"");
  // Several sources at once are refused rather than one silently winning.
  auto body = parse_json_object(R"({"prompt":"x","grammar":"root ::= \"a\"","json_schema":{}})");
  ASSERT_TRUE(body.ok());
  auto job = parse_openai_completion(*body);
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.error().message.find("'grammar' and 'json_schema' both constrain"), std::string::npos) << job.error().message;
}

TEST(StructuredOutput, ResponsesTextFormat) {
  EXPECT_EQ(grammar_of(parse_openai_responses, R"({"input":"hi","text":{"format":{"type":"text"}}})"), "");
  EXPECT_EQ(grammar_of(parse_openai_responses, R"({"input":"hi","text":{"format":{"type":"json_object"}}})"), sampler::json_object_gbnf());
  EXPECT_EQ(grammar_of(parse_openai_responses, R"({"input":"hi","text":{"format":{"type":"json_schema","name":"p","strict":true,"schema":)" +
                                                   std::string(kSchema) + "}}}"),
            schema_gbnf());
}

}  // namespace
}  // namespace hearth::api
