// Structured-output fields → the request's output constraint → the engine side's grammar, per
// dialect: the GBNF each field must produce (the any-object grammar, or the schema's grammar
// from the sampler's converter, or the user's GBNF as is), and that text output stays
// unconstrained. Refusals are in the bad-body table of
// request_translation_test.cpp.
#include <gtest/gtest.h>

#include "api/ollama.h"
#include "api/openai.h"
#include "engine/prompt_preparation.h"
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
  if (!job.ok()) return "<error>";
  auto gbnf = engine::constraint_grammar(job->request.constraint);
  EXPECT_TRUE(gbnf.ok()) << text;
  return gbnf.ok() ? *gbnf : "<error>";
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

// A schema the grammar cannot enforce passes the translator (it is well-formed JSON) and is
// refused on the engine side, where the schema becomes a grammar; the error names the field.
TEST(StructuredOutput, SchemaErrorsNameTheirField) {
  auto error_of = [](auto parse, const std::string& text) -> std::string {
    auto body = parse_json_object(text);
    EXPECT_TRUE(body.ok()) << text;
    auto job = parse(*body);
    EXPECT_TRUE(job.ok()) << text;
    if (!body.ok() || !job.ok()) return "<bad body>";
    auto gbnf = engine::constraint_grammar(job->request.constraint);
    return gbnf.ok() ? "<accepted>" : gbnf.error().message;
  };
  const std::string msgs = R"("messages":[{"role":"user","content":"hi"}])";
  EXPECT_EQ(error_of(parse_openai_chat, "{" + msgs + R"(,"response_format":{"type":"json_schema","json_schema":{"schema":{"type":"integer","minimum":1}}}})")
                .rfind("'response_format.json_schema.schema': json schema: unsupported keyword 'minimum' at #", 0),
            0u);
  EXPECT_EQ(error_of(parse_openai_completion, R"({"prompt":"a","json_schema":{"type":"strin"}})")
                .rfind("'json_schema': json schema: #/type: unknown type 'strin'", 0),
            0u);
  EXPECT_EQ(error_of(parse_ollama_chat, R"({"model":"m","messages":[{"role":"user","content":"hi"}],"format":{"type":"object","properties":{"a":{"not":{}}}}})")
                .rfind("'format': json schema: unsupported keyword 'not' at #/properties/a", 0),
            0u);
}

}  // namespace
}  // namespace hearth::api
