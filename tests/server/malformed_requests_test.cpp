// A table of malformed requests across every route: each must get its documented 4xx status
// in its dialect's error shape, and the server must stay healthy and keep answering. Plus the
// edge checks: API key, CORS origins and preflight, body size limit, unknown routes and methods.
#include <gtest/gtest.h>

#include "server_fixture.h"

namespace hearth::test {
namespace {

using api::Json;

enum class Shape { kOllama, kOpenAI, kAnthropic };

struct Bad {
  std::string method;
  std::string path;
  std::string body;
  int status;
  Shape shape;
  std::string expect = "";  // when given, a fragment of the error message
};

std::string error_message(const HttpReply& r, Shape shape) {
  Json j = r.json();
  if (!j.is_object() || !j.contains("error")) return "";
  if (shape == Shape::kOllama) return j["error"].is_string() ? j["error"].get<std::string>() : "";
  return j["error"].is_object() ? api::string_field(j["error"], "message") : "";
}

void expect_shape(const HttpReply& r, Shape shape, const std::string& what) {
  Json j = r.json();
  switch (shape) {
    case Shape::kOllama:
      ASSERT_TRUE(j.is_object() && j.size() == 1 && j["error"].is_string()) << what << ": " << r.body;
      EXPECT_FALSE(j["error"].get<std::string>().empty()) << what;
      break;
    case Shape::kOpenAI:
      ASSERT_TRUE(j.is_object() && j["error"].is_object()) << what << ": " << r.body;
      EXPECT_TRUE(j["error"]["message"].is_string()) << what;
      EXPECT_TRUE(j["error"]["type"].is_string()) << what;
      EXPECT_EQ(j["error"]["code"], r.status) << what;
      break;
    case Shape::kAnthropic:
      ASSERT_TRUE(j.is_object()) << what << ": " << r.body;
      EXPECT_EQ(j["type"], "error") << what;
      EXPECT_TRUE(j["error"]["type"].is_string()) << what;
      EXPECT_TRUE(j["error"]["message"].is_string()) << what;
      break;
  }
}

using Malformed = ServerTest;

TEST_F(Malformed, EveryRouteAnswersBadInputWithA4xx) {
  const std::string user = R"({"role":"user","content":"hi"})";
  const std::string bad_utf8 = std::string("{\"model\":\"scripted\",\"prompt\":\"\xff\xfe\"}");
  const std::vector<Bad> cases = {
      // ollama
      {"POST", "/api/generate", "", 400, Shape::kOllama},
      {"POST", "/api/generate", "{", 400, Shape::kOllama},
      {"POST", "/api/generate", "[]", 400, Shape::kOllama},
      {"POST", "/api/generate", bad_utf8, 400, Shape::kOllama},
      {"POST", "/api/generate", R"({"prompt":"hi"})", 400, Shape::kOllama},
      {"POST", "/api/generate", R"({"model":5,"prompt":"hi"})", 400, Shape::kOllama},
      {"POST", "/api/generate", R"({"model":"gpt-9","prompt":"hi"})", 404, Shape::kOllama},
      {"POST", "/api/generate", R"({"model":"scripted","prompt":7})", 400, Shape::kOllama},
      {"POST", "/api/generate", R"({"model":"scripted","prompt":"hi","options":[]})", 400, Shape::kOllama},
      {"POST", "/api/generate", R"({"model":"scripted","prompt":"hi","options":{"top_k":"x"}})", 400, Shape::kOllama},
      {"POST", "/api/generate", R"({"model":"scripted","prompt":"hi","options":{"top_p":7}})", 400, Shape::kOllama},
      {"POST", "/api/generate", R"({"model":"scripted","prompt":"hi","template":"{{ range .Messages }}{{ end }}"})", 400, Shape::kOllama},
      {"POST", "/api/generate", R"({"model":"scripted","prompt":"hi","images":["aGk="]})", 400, Shape::kOllama},
      {"POST", "/api/generate", R"({"model":"scripted","prompt":"hi","format":"yaml"})", 400, Shape::kOllama},
      {"POST", "/api/generate", R"({"model":"scripted","prompt":"hi","suffix":"x"})", 400, Shape::kOllama},
      {"POST", "/api/generate", R"({"model":"scripted","prompt":"hi","context":[999999]})", 400, Shape::kOllama},
      {"POST", "/api/generate", R"({"model":"scripted","prompt":"hi","template":"{{ .Messages }}"})", 400, Shape::kOllama},
      {"POST", "/api/generate", R"({"model":"scripted","prompt":"hi","format":{"type":"integer","maximum":5}})", 400, Shape::kOllama},
      {"POST", "/api/chat", R"({"model":"scripted","messages":"hi"})", 400, Shape::kOllama},
      {"POST", "/api/chat", R"({"model":"scripted","messages":[5]})", 400, Shape::kOllama},
      {"POST", "/api/chat", R"({"model":"scripted","messages":[{"role":"user","content":"x","images":["aGk="]}]})", 400, Shape::kOllama},
      {"POST", "/api/chat", R"({"model":"scripted","messages":[{"role":"alien","content":"x"}]})", 400, Shape::kOllama},
      {"POST", "/api/chat", R"({"model":"scripted","messages":[)" + user + R"(],"options":{"seed":"x"}})", 400, Shape::kOllama},
      {"POST", "/api/chat", R"({"model":"nope","messages":[)" + user + "]}", 404, Shape::kOllama},
      {"POST", "/api/embed", R"({"model":"scripted","input":5})", 400, Shape::kOllama},
      {"POST", "/api/embed", R"({"model":"scripted","input":[""]})", 400, Shape::kOllama},
      {"POST", "/api/embeddings", R"({"model":"scripted","prompt":[1]})", 400, Shape::kOllama},
      {"POST", "/api/generate", R"({"model":"scripted","prompt":"hi","options":{"num_ctx":-1}})", 400, Shape::kOllama, "'options.num_ctx' must be between 1 and 16777216"},
      {"POST", "/api/generate", R"({"model":"scripted","prompt":"hi","options":{"num_ctx":1e9}})", 400, Shape::kOllama, "'options.num_ctx' must be between 1 and 16777216"},
      {"POST", "/api/generate", R"({"model":"scripted","prompt":"hi","options":{"temperature":-1}})", 400, Shape::kOllama, "'options.temperature' must be 0 or more"},
      {"POST", "/api/generate", R"({"model":"scripted","prompt":"hi","keep_alive":"bogus"})", 400, Shape::kOllama, R"('keep_alive': expected a number in duration "bogus")"},
      {"POST", "/api/chat", R"({"model":"scripted","messages":[],"keep_alive":"5parsecs"})", 400, Shape::kOllama, "unknown unit"},
      {"POST", "/api/chat", R"({"model":"scripted","messages":[)" + user + R"(],"tools":[{"type":"function"}]})", 400, Shape::kOllama, "'tools[0].function' is required"},
      {"POST", "/api/show", R"({})", 400, Shape::kOllama},
      {"POST", "/api/show", R"({"model":"other"})", 404, Shape::kOllama},
      {"POST", "/api/show", "not json", 400, Shape::kOllama},
      {"GET", "/api/nothing", "", 404, Shape::kOllama},
      {"POST", "/api/tags", "{}", 405, Shape::kOllama},
      // OpenAI
      {"POST", "/v1/chat/completions", "", 400, Shape::kOpenAI},
      {"POST", "/v1/chat/completions", "{\"messages\":", 400, Shape::kOpenAI},
      {"POST", "/v1/chat/completions", "{}", 400, Shape::kOpenAI},
      {"POST", "/v1/chat/completions", R"({"messages":[]})", 400, Shape::kOpenAI},
      {"POST", "/v1/chat/completions", R"({"messages":[{"role":"user","content":{"a":1}}]})", 400, Shape::kOpenAI},
      {"POST", "/v1/chat/completions", R"({"messages":[)" + user + R"(],"max_tokens":"ten"})", 400, Shape::kOpenAI},
      {"POST", "/v1/chat/completions", R"({"messages":[)" + user + R"(],"n":100})", 400, Shape::kOpenAI},
      {"POST", "/v1/chat/completions", R"({"messages":[)" + user + R"(],"logit_bias":{"99999":1}})", 400, Shape::kOpenAI},
      {"POST", "/v1/chat/completions", R"({"messages":[)" + user + R"(],"mirostat":3})", 400, Shape::kOpenAI},
      {"POST", "/v1/chat/completions", R"({"messages":[)" + user + R"(],"response_format":{"type":"json_schema"}})", 400, Shape::kOpenAI},
      {"POST", "/v1/chat/completions", R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:"}}]}]})", 400, Shape::kOpenAI},
      {"POST", "/v1/chat/completions", std::string("{\"messages\":[{\"role\":\"user\",\"content\":\"\xc0\xaf\"}]}"), 400, Shape::kOpenAI},
      {"POST", "/v1/chat/completions", R"({"messages":[)" + user + R"(]})", 400, Shape::kOpenAI},  // conversation id below
      {"POST", "/v1/chat/completions", R"({"messages":[)" + user + R"(],"tool_choice":5})", 400, Shape::kOpenAI, "'tool_choice' must be"},
      {"POST", "/v1/chat/completions", R"({"messages":[)" + user + R"(],"tools":[{"type":"function"}]})", 400, Shape::kOpenAI, "'tools[0].function' is required"},
      {"POST", "/v1/chat/completions", R"({"messages":[)" + user + R"(],"tools":[{"type":"function","function":{"description":"d"}}]})", 400, Shape::kOpenAI, "'tools[0].function.name' is required"},
      {"POST", "/v1/chat/completions", R"({"messages":[)" + user + R"(],"tool_choice":"required"})", 400, Shape::kOpenAI, "but no 'tools' are given"},
      {"POST", "/v1/chat/completions", R"({"messages":[)" + user + R"(],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"x"}}})", 400, Shape::kOpenAI, "'tool_choice' names function 'x', which is not in 'tools'"},
      {"POST", "/v1/chat/completions", R"({"messages":[)" + user + R"(],"temperature":2.5})", 400, Shape::kOpenAI, "'temperature' must be between 0 and 2"},
      {"POST", "/v1/completions", R"({"prompt":"x","grammar":""})", 400, Shape::kOpenAI, "'grammar' is empty"},
      {"POST", "/v1/responses", R"({"input":"x","tools":[{"type":"function"}]})", 400, Shape::kOpenAI, "'tools[0].name' is required"},
      {"POST", "/v1/responses", R"({"input":"x","tool_choice":"required"})", 400, Shape::kOpenAI, "but no 'tools' are given"},
      {"POST", "/v1/completions", R"({"prompt":"x","grammar":"root ::= undefined-rule"})", 400, Shape::kOpenAI},
      {"POST", "/v1/completions", R"({"prompt":"x","json_schema":{"$ref":"#/nowhere"}})", 400, Shape::kOpenAI},
      {"POST", "/v1/completions", R"({"prompt":null})", 400, Shape::kOpenAI},
      {"POST", "/v1/completions", R"({"prompt":[100000]})", 400, Shape::kOpenAI},
      {"POST", "/v1/completions", R"({"prompt":"x","suffix":"y"})", 400, Shape::kOpenAI},
      {"POST", "/v1/completions", R"({"prompt":"x","stop":{"a":1}})", 400, Shape::kOpenAI},
      {"POST", "/v1/embeddings", R"({"input":[]})", 400, Shape::kOpenAI},
      {"POST", "/v1/embeddings", R"({"input":[[1,2],[99999]]})", 400, Shape::kOpenAI},
      {"POST", "/v1/responses", R"({"input":5})", 400, Shape::kOpenAI},
      {"POST", "/v1/responses", R"({"input":"x","previous_response_id":"resp_1"})", 400, Shape::kOpenAI},
      {"POST", "/v1/responses", R"({"input":"x","text":{"format":{"type":"json_schema"}}})", 400, Shape::kOpenAI},
      {"GET", "/v1/chat/completions", "", 405, Shape::kOpenAI},
      {"GET", "/v1/nothing", "", 404, Shape::kOpenAI},
      {"POST", "/tokenize", R"({"content":5})", 400, Shape::kOpenAI},
      {"POST", "/tokenize", R"({})", 400, Shape::kOpenAI},
      {"POST", "/detokenize", R"({"tokens":["a"]})", 400, Shape::kOpenAI},
      {"POST", "/detokenize", R"({"tokens":[-1]})", 400, Shape::kOpenAI},
      {"POST", "/apply-template", R"({"messages":[]})", 400, Shape::kOpenAI},
      {"GET", "/v1/stream/unknown-id", "", 404, Shape::kOpenAI},
      {"GET", "/v1/stream/x?from=abc", "", 400, Shape::kOpenAI},
      {"DELETE", "/v1/stream/unknown-id", "", 404, Shape::kOpenAI},
      {"POST", "/v1/streams/lookup", R"({"conversation_ids":"a"})", 400, Shape::kOpenAI},
      {"POST", "/v1/streams/lookup", R"({"conversation_ids":[1]})", 400, Shape::kOpenAI},
      // Anthropic
      {"POST", "/v1/messages", "", 400, Shape::kAnthropic},
      {"POST", "/v1/messages", R"({"messages":[)" + user + "]}", 400, Shape::kAnthropic},
      {"POST", "/v1/messages", R"({"max_tokens":0,"messages":[)" + user + "]}", 400, Shape::kAnthropic},
      {"POST", "/v1/messages", R"({"max_tokens":5,"messages":[]})", 400, Shape::kAnthropic},
      {"POST", "/v1/messages", R"({"max_tokens":5,"messages":[{"role":"user","content":[{"type":"image"}]}]})", 400, Shape::kAnthropic},
      {"POST", "/v1/messages", R"({"max_tokens":5,"temperature":"hot","messages":[)" + user + "]}", 400, Shape::kAnthropic},
      {"POST", "/v1/messages", R"({"max_tokens":5,"system":[{"type":"image"}],"messages":[)" + user + "]}", 400, Shape::kAnthropic},
      {"POST", "/v1/messages", R"({"max_tokens":5,"messages":[{"role":"user","content":[]}]})", 400, Shape::kAnthropic, "'messages[0].content' must not be empty"},
      {"POST", "/v1/messages", R"({"max_tokens":5,"temperature":5,"messages":[)" + user + "]}", 400, Shape::kAnthropic, "'temperature' must be between 0 and 1, got 5"},
      {"POST", "/v1/messages", R"({"max_tokens":5,"tools":[{"name":"f","input_schema":{}}],"tool_choice":{"type":"tool","name":"x"},"messages":[)" + user + "]}", 400, Shape::kAnthropic, "'tool_choice' names function 'x'"},
      {"POST", "/v1/messages", R"({"max_tokens":5,"tool_choice":{"type":"any"},"messages":[)" + user + "]}", 400, Shape::kAnthropic, R"('tool_choice' is "any" but no 'tools' are given)"},
      {"POST", "/v1/messages", R"({"max_tokens":5,"tool_choice":5,"messages":[)" + user + "]}", 400, Shape::kAnthropic, "'tool_choice' must be an object"},
      {"POST", "/v1/messages", R"({"max_tokens":5,"tools":[{"input_schema":{}}],"messages":[)" + user + "]}", 400, Shape::kAnthropic, "'tools[0].name' is required"},
      {"POST", "/v1/messages/count_tokens", R"({"temperature":5,"messages":[)" + user + "]}", 400, Shape::kAnthropic, "'temperature' must be between 0 and 1"},
      {"POST", "/v1/messages/count_tokens", R"({"messages":5})", 400, Shape::kAnthropic},
      {"GET", "/v1/messages", "", 405, Shape::kAnthropic},
  };
  ASSERT_GE(cases.size(), 50u);
  for (size_t i = 0; i < cases.size(); ++i) {
    const Bad& c = cases[i];
    httplib::Headers headers;
    // The one well-formed chat body is refused for its conversation id.
    if (c.path == "/v1/chat/completions" && c.body == R"({"messages":[)" + user + R"(]})") {
      headers.emplace("X-Conversation-Id", "not a valid id!");
    }
    HttpReply r = request(c.method, c.path, c.body, headers);
    const std::string what = "case " + std::to_string(i) + ": " + c.method + " " + c.path + " " + c.body;
    ASSERT_TRUE(r.sent) << what;
    EXPECT_EQ(r.status, c.status) << what << "\n  body: " << r.body;
    EXPECT_EQ(r.header("Content-Type"), "application/json") << what;
    expect_shape(r, c.shape, what);
    if (!c.expect.empty()) {
      EXPECT_NE(error_message(r, c.shape).find(c.expect), std::string::npos) << what << "\n  body: " << r.body;
    }
  }
  EXPECT_EQ(get("/health").status, 200);
  auto ok = post("/api/generate", R"({"model":"scripted","prompt":"still fine?","stream":false,"options":{"num_predict":2}})");
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.json()["eval_count"], 2);
}

// The valid forms beside the refusals above are served, in every dialect.
TEST_F(Malformed, ValidToolChoicesAndKeepAliveAreServed) {
  backend_->set_n_ctx_slot(2048);  // a tool definition renders to a few hundred tokens
  const std::string user = R"({"role":"user","content":"hi"})";
  const std::string tools = R"("tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}])";
  const std::pair<std::string, std::string> cases[] = {
      {"/v1/chat/completions", R"({"max_tokens":2,"messages":[)" + user + "]," + tools + R"(,"tool_choice":{"type":"function","function":{"name":"f"}}})"},
      {"/v1/chat/completions", R"({"max_tokens":2,"messages":[)" + user + "]," + tools + R"(,"tool_choice":"required"})"},
      {"/v1/chat/completions", R"({"max_tokens":2,"messages":[)" + user + R"(],"tool_choice":"none","temperature":2})"},
      {"/v1/responses", R"({"max_output_tokens":2,"input":"hi","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"f"}})"},
      {"/v1/messages", R"({"max_tokens":2,"temperature":1,"messages":[)" + user + R"(],"tools":[{"name":"f","input_schema":{}}],"tool_choice":{"type":"tool","name":"f"}})"},
      {"/api/chat", R"({"model":"scripted","stream":false,"keep_alive":"1h30m","options":{"num_predict":2,"num_ctx":4096},"messages":[)" + user + "]," + tools + "}"},
      {"/api/generate", R"({"model":"scripted","stream":false,"keep_alive":-1,"prompt":"hi","options":{"num_predict":2}})"},
      {"/api/generate", R"({"model":"scripted","stream":false,"keep_alive":"300ms","prompt":"hi","options":{"num_predict":2}})"},
  };
  for (const auto& [path, body] : cases) {
    auto r = post(path, body);
    EXPECT_EQ(r.status, 200) << path << " " << body << "\n  " << r.body;
  }
}

TEST_F(Malformed, DeeplyNestedJsonIsHarmless) {
  // Refused before parsing, whichever field holds it: copying or printing such a value recursed
  // once per level, and an assistant message's tool-call arguments took the server down.
  const std::string deep = std::string(50000, '[') + std::string(50000, ']');
  const Bad cases[] = {
      {"POST", "/v1/chat/completions", R"({"max_tokens":1,"messages":[{"role":"user","content":"hi"}],"metadata":)" + deep + "}",
       400, Shape::kOpenAI, "deeper than 128 levels"},
      {"POST", "/v1/completions", R"({"prompt":)" + deep + "}", 400, Shape::kOpenAI, "deeper than 128 levels"},
      {"POST", "/v1/messages", R"({"max_tokens":1,"messages":[{"role":"user","content":)" + deep + "}]}", 400,
       Shape::kAnthropic, "deeper than 128 levels"},
      {"POST", "/api/chat", std::string(100000, '['), 400, Shape::kOllama, "deeper than 128 levels"},
      {"POST", "/api/chat",
       R"({"model":"scripted","stream":false,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"",)"
       R"("tool_calls":[{"function":{"name":"f","arguments":{"a":)" + deep + "}}}]},{\"role\":\"tool\",\"content\":\"ok\"}]}",
       400, Shape::kOllama, "deeper than 128 levels"},
      {"POST", "/v1/chat/completions",
       R"({"max_tokens":1,"tools":[{"type":"function","function":{"name":"f","parameters":)" + deep + "}}],"
       R"("messages":[{"role":"user","content":"hi"}]})",
       400, Shape::kOpenAI, "deeper than 128 levels"},
  };
  for (const auto& c : cases) {
    auto r = post(c.path, c.body);
    EXPECT_EQ(r.status, c.status) << c.path << " " << r.body.substr(0, 200);
    expect_shape(r, c.shape, c.path);
    EXPECT_NE(error_message(r, c.shape).find(c.expect), std::string::npos) << r.body.substr(0, 200);
  }
  // As deep as a real schema gets is served.
  std::string schema = R"({"type":"string"})";
  for (int i = 0; i < 40; ++i) schema = R"({"type":"array","items":)" + schema + "}";
  auto served = post("/v1/chat/completions", R"({"max_tokens":1,"messages":[{"role":"user","content":"hi"}],"metadata":{"s":)" +
                                                 schema + "}}");
  EXPECT_EQ(served.status, 200) << served.body.substr(0, 200);
  EXPECT_EQ(get("/health").status, 200);
}

TEST_F(Malformed, ApiKeyIsRequiredExceptForHealth) {
  server::ServerOptions o;
  o.api_key = "k3y";
  restart(o);
  EXPECT_EQ(get("/health").status, 200);
  auto anon = get("/v1/models");
  EXPECT_EQ(anon.status, 401);
  expect_shape(anon, Shape::kOpenAI, "no key");
  auto anon_ollama = get("/api/tags");
  EXPECT_EQ(anon_ollama.status, 401);
  expect_shape(anon_ollama, Shape::kOllama, "no key");
  auto anon_anthropic = post("/v1/messages", "{}");
  EXPECT_EQ(anon_anthropic.status, 401);
  EXPECT_EQ(anon_anthropic.json()["error"]["type"], "authentication_error");
  EXPECT_EQ(get("/v1/models", {{"Authorization", "Bearer wrong"}}).status, 401);
  EXPECT_EQ(get("/v1/models", {{"Authorization", "Bearer k3y"}}).status, 200);
  EXPECT_EQ(get("/v1/models", {{"x-api-key", "k3y"}}).status, 200);
  EXPECT_EQ(get("/metrics", {{"Authorization", "Bearer k3y"}}).status, 200);
  EXPECT_EQ(get("/metrics").status, 401);
}

TEST_F(Malformed, CorsAllowsListedOriginsOnly) {
  server::ServerOptions o;
  o.origins = {"https://ui.example.org"};
  restart(o);
  auto local = get("/api/version", {{"Origin", "http://localhost:5173"}});
  EXPECT_EQ(local.status, 200);
  EXPECT_EQ(local.header("Access-Control-Allow-Origin"), "http://localhost:5173");
  auto listed = get("/api/version", {{"Origin", "https://ui.example.org"}});
  EXPECT_EQ(listed.header("Access-Control-Allow-Origin"), "https://ui.example.org");
  auto evil = post("/api/generate", R"({"model":"scripted","prompt":"x"})", {{"Origin", "https://evil.example"}});
  EXPECT_EQ(evil.status, 403);
  expect_shape(evil, Shape::kOllama, "evil origin");
  EXPECT_TRUE(backend_->records().empty());  // nothing ran
  auto preflight = request("OPTIONS", "/v1/chat/completions", "",
                           {{"Origin", "https://ui.example.org"},
                            {"Access-Control-Request-Method", "POST"},
                            {"Access-Control-Request-Headers", "authorization, content-type"}});
  EXPECT_EQ(preflight.status, 204);
  EXPECT_EQ(preflight.header("Access-Control-Allow-Headers"), "authorization, content-type");
  EXPECT_NE(preflight.header("Access-Control-Allow-Methods").find("POST"), std::string::npos);
  EXPECT_EQ(request("OPTIONS", "/v1/chat/completions", "", {{"Origin", "https://evil.example"}}).status, 403);
}

TEST_F(Malformed, OversizedBodiesGet413AndTheServerCarriesOn) {
  server::ServerOptions o;
  o.max_body_bytes = 1024;
  restart(o);
  std::string big = R"({"model":"scripted","prompt":")" + std::string(4096, 'a') + R"("})";
  auto r = post("/api/generate", big);
  EXPECT_EQ(r.status, 413);
  expect_shape(r, Shape::kOllama, "too large");
  auto a = post("/v1/messages", big);
  EXPECT_EQ(a.status, 413);
  EXPECT_EQ(a.json()["error"]["type"], "request_too_large");
  EXPECT_EQ(get("/health").status, 200);
}

}  // namespace
}  // namespace hearth::test
