// Structured output over HTTP against the scripted engine: each dialect's field (ollama
// `format`, OpenAI `response_format`, Responses `text.format`, llama-server `grammar` and
// `json_schema`) reaches the engine request as the expected GBNF, and a grammar that does not
// compile is a 400 in the dialect's error shape, streamed or not.
#include <gtest/gtest.h>

#include "sampler/grammar/json_schema_grammar.h"
#include "server_fixture.h"

namespace hearth::test {
namespace {

using api::Json;

using StructuredOutput = ServerTest;

const char* const kSchema = R"({"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]})";

std::string schema_gbnf() {
  auto g = sampler::json_schema_to_gbnf(Json::parse(kSchema));
  EXPECT_TRUE(g.ok());
  return g.ok() ? *g : "";
}

TEST_F(StructuredOutput, EachDialectsFieldReachesTheEngine) {
  const std::string user = R"("messages":[{"role":"user","content":"Hi"}])";
  struct Case {
    std::string path;
    std::string body;
    std::string grammar;
  };
  const Case cases[] = {
      {"/api/generate", R"({"model":"scripted","prompt":"Hi","stream":false,"format":"json"})", sampler::json_object_gbnf()},
      {"/api/chat", R"({"model":"scripted",)" + user + R"(,"stream":false,"format":)" + kSchema + "}", schema_gbnf()},
      {"/v1/chat/completions", "{" + user + R"(,"response_format":{"type":"json_schema","json_schema":{"name":"r","strict":true,"schema":)" +
                                   kSchema + "}}}", schema_gbnf()},
      {"/v1/chat/completions", "{" + user + R"(,"response_format":{"type":"json_object"}})", sampler::json_object_gbnf()},
      {"/v1/completions", R"({"prompt":"Hi","grammar":"root ::= \"yes\" | \"no\""})", "root ::= \"yes\" | \"no\""},
      {"/v1/completions", R"({"prompt":"Hi","json_schema":)" + std::string(kSchema) + "}", schema_gbnf()},
      {"/v1/responses", R"({"input":"Hi","text":{"format":{"type":"json_schema","name":"r","schema":)" + std::string(kSchema) + "}}}",
       schema_gbnf()},
      {"/v1/chat/completions", "{" + user + R"(,"response_format":{"type":"text"}})", ""},
  };
  size_t n = 0;
  for (const auto& c : cases) {
    auto r = post(c.path, c.body);
    ASSERT_EQ(r.status, 200) << c.path << " " << c.body << "\n" << r.body;
    ASSERT_TRUE(backend_->wait_for_records(++n, std::chrono::seconds(2)));
    EXPECT_EQ(backend_->records()[n - 1]->request.grammar, c.grammar) << c.body;
  }
}

TEST_F(StructuredOutput, GrammarThatDoesNotCompileIsA400) {
  auto whole = post("/v1/completions", R"({"prompt":"Hi","grammar":"root ::= missing"})");
  EXPECT_EQ(whole.status, 400);
  EXPECT_NE(whole.json()["error"]["message"].get<std::string>().find("missing"), std::string::npos) << whole.body;
  auto streamed = post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"Hi"}],"stream":true,"grammar":"root ::= (\"a\""})");
  EXPECT_EQ(streamed.status, 400) << streamed.body;
  EXPECT_TRUE(streamed.json()["error"]["message"].is_string()) << streamed.body;
  auto schema = post("/api/chat", R"({"model":"scripted","messages":[{"role":"user","content":"Hi"}],"format":{"type":"array","contains":{}}})");
  EXPECT_EQ(schema.status, 400);
  EXPECT_NE(schema.json()["error"].get<std::string>().find("unsupported keyword 'contains'"), std::string::npos) << schema.body;
}

}  // namespace
}  // namespace hearth::test
