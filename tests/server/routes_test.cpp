// Every route over real HTTP against the scripted engine: response shapes per dialect,
// streaming framing, options reaching the engine, and the extras.
#include <gtest/gtest.h>

#include "api/openai.h"
#include "prometheus_check.h"
#include "server_fixture.h"

namespace hearth::test {
namespace {

using api::Json;

std::vector<Json> ndjson(const std::string& body) {
  std::vector<Json> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t nl = body.find('\n', pos);
    if (nl == std::string::npos) nl = body.size();
    out.push_back(Json::parse(body.substr(pos, nl - pos), nullptr, false));
    pos = nl + 1;
  }
  return out;
}

// "data:" payloads of an SSE body (event names dropped).
std::vector<std::string> sse_data(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    size_t end = body.find("\n\n", pos);
    out.push_back(body.substr(pos + 6, end - pos - 6));
    pos = end;
  }
  return out;
}

TEST(ServerHealth, Returns503UntilTheModelIsSet) {
  HEARTH_REQUIRE_FILE(scripted_model_path());
  server::ServerOptions o;
  o.port = 0;
  server::HttpServer server(o);
  ASSERT_TRUE(server.bind().ok());
  server.start();
  httplib::Client cli("127.0.0.1", server.port());
  auto health = cli.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503);
  auto chat = cli.Post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}]})", "application/json");
  ASSERT_TRUE(chat);
  EXPECT_EQ(chat->status, 503);
  EXPECT_EQ(Json::parse(chat->body)["error"]["type"], "unavailable_error");
  auto backend = ScriptedBackend::create(scripted_model_path(), "hi");
  server.set_backend(backend);
  health = cli.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(Json::parse(health->body)["status"], "ok");
  server.stop();
}

using Routes = ServerTest;

TEST_F(Routes, OllamaGenerateBody) {
  auto r = post("/api/generate", R"({"model":"scripted","prompt":"Hi","stream":false,"options":{"num_predict":3,"seed":7}})");
  ASSERT_EQ(r.status, 200) << r.body;
  Json j = r.json();
  EXPECT_EQ(j["model"], "scripted");
  EXPECT_EQ(j["response"], scripted_text(3));
  EXPECT_EQ(j["done"], true);
  EXPECT_EQ(j["done_reason"], "length");
  EXPECT_EQ(j["eval_count"], 3);
  ASSERT_TRUE(backend_->wait_for_records(1, std::chrono::seconds(1)));
  const auto& req = backend_->records()[0]->request;
  EXPECT_EQ(req.sampling.seed, 7u);
  EXPECT_EQ(req.n_predict, 3);
  EXPECT_EQ(j["context"].size(), req.prompt.size() + 3);
  EXPECT_EQ(j["prompt_eval_count"], req.prompt.size());
  // The scripted model has no chat template of its own: generate continues the bare prompt
  // (ollama's default template), while chat uses the ChatML fallback.
  std::string prompt = backend_->tokenizer().decode(req.prompt, true);
  EXPECT_EQ(prompt.find("<|im_start|>"), std::string::npos) << prompt;
  EXPECT_EQ(prompt.substr(prompt.size() - 2), "Hi") << prompt;

  auto c = post("/api/chat", R"({"model":"scripted","messages":[{"role":"user","content":"Hi"}],"stream":false,"options":{"num_predict":1}})");
  ASSERT_EQ(c.status, 200) << c.body;
  ASSERT_TRUE(backend_->wait_for_records(2, std::chrono::seconds(1)));
  std::string chat_prompt = backend_->tokenizer().decode(backend_->records()[1]->request.prompt, true);
  EXPECT_NE(chat_prompt.find("<|im_start|>user\nHi<|im_end|>"), std::string::npos) << chat_prompt;
}

TEST_F(Routes, OllamaChatStreamsNdjson) {
  auto r = post("/api/chat", R"({"model":"scripted:latest","messages":[{"role":"user","content":"Hello"}]})");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.header("Content-Type"), "application/x-ndjson");
  auto lines = ndjson(r.body);
  ASSERT_GE(lines.size(), 2u);
  std::string text;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    EXPECT_EQ(lines[i]["done"], false);
    EXPECT_EQ(lines[i]["message"]["role"], "assistant");
    text += lines[i]["message"]["content"].get<std::string>();
  }
  EXPECT_EQ(text, scripted_text());
  EXPECT_EQ(lines.back()["done"], true);
  EXPECT_EQ(lines.back()["done_reason"], "stop");
  EXPECT_TRUE(lines.back().contains("eval_duration"));
  EXPECT_EQ(lines.back()["model"], "scripted:latest");
}

TEST_F(Routes, OllamaModelNamesAndListings) {
  auto unknown = post("/api/chat", R"({"model":"llama3","messages":[{"role":"user","content":"Hello"}]})");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.json(), Json::parse(R"({"error":"model 'llama3' not found"})"));
  EXPECT_EQ(post("/api/show", R"({"model":"nope"})").status, 404);
  EXPECT_EQ(post("/api/embed", R"({"model":"nope","input":"x"})").status, 404);

  auto alias = post("/api/generate", R"({"model":"stories260K-llama-f32","prompt":"x","stream":false,"options":{"num_predict":1}})");
  EXPECT_EQ(alias.status, 200);
  auto load = post("/api/generate", R"({"model":"scripted"})");
  ASSERT_EQ(load.status, 200);
  EXPECT_EQ(load.json()["done_reason"], "load");
  auto unload = post("/api/chat", R"({"model":"scripted","messages":[],"keep_alive":0})");
  EXPECT_EQ(unload.json()["done_reason"], "unload");
  EXPECT_EQ(unload.json()["message"]["content"], "");

  Json tags = get("/api/tags").json();
  EXPECT_EQ(tags["models"][0]["name"], "scripted:latest");
  EXPECT_EQ(tags["models"][0]["details"]["format"], "gguf");
  EXPECT_EQ(tags["models"][0]["details"]["quantization_level"], "F32");
  Json show = post("/api/show", R"({"model":"scripted"})").json();
  EXPECT_EQ(show["capabilities"][0], "completion");
  EXPECT_EQ(show["model_info"]["general.architecture"], "llama");
  EXPECT_FALSE(show["template"].get<std::string>().empty());
  EXPECT_EQ(get("/api/ps").json()["models"][0]["context_length"], 256);
  EXPECT_EQ(get("/api/version").json()["version"], "9.9.9");
  auto root = get("/");
  EXPECT_EQ(root.status, 200);
  EXPECT_NE(root.body.find("Hearth is running"), std::string::npos);  // no web UI in this server: web_ui_test.cpp
}

TEST_F(Routes, OpenAiChatStreamWithUsage) {
  auto r = post("/v1/chat/completions", R"({"model":"gpt-4o","messages":[{"role":"user","content":"Hi"}],
      "stream":true,"stream_options":{"include_usage":true},"max_tokens":4,"top_k":3,"repeat_penalty":1.3})");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.header("Content-Type"), "text/event-stream");
  auto frames = sse_data(r.body);
  ASSERT_GE(frames.size(), 4u);
  EXPECT_EQ(frames.back(), "[DONE]");
  std::string text;
  std::string id;
  for (size_t i = 0; i + 1 < frames.size(); ++i) {
    Json c = Json::parse(frames[i]);
    if (id.empty()) id = c["id"];
    EXPECT_EQ(c["id"], id);
    EXPECT_EQ(c["model"], "gpt-4o");  // the name the request used
    if (!c["choices"].empty() && c["choices"][0]["delta"].contains("content")) text += c["choices"][0]["delta"]["content"];
  }
  EXPECT_EQ(id.rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(text, scripted_text(4));
  Json usage = Json::parse(frames[frames.size() - 2]);
  EXPECT_EQ(usage["usage"]["completion_tokens"], 4);
  const auto& req = backend_->records()[0]->request;
  EXPECT_EQ(req.sampling.top_k, 3);
  EXPECT_FLOAT_EQ(req.sampling.repeat_penalty, 1.3f);
}

TEST_F(Routes, OpenAiChatChoicesLogprobsAndSeeds) {
  auto r = post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"Hi"}],"n":2,"seed":11,
      "logprobs":true,"top_logprobs":2,"max_completion_tokens":2})");
  ASSERT_EQ(r.status, 200) << r.body;
  Json j = r.json();
  ASSERT_EQ(j["choices"].size(), 2u);
  EXPECT_EQ(j["choices"][1]["index"], 1);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["choices"][0]["logprobs"]["content"].size(), 2u);
  EXPECT_EQ(j["choices"][0]["logprobs"]["content"][0]["top_logprobs"].size(), 2u);
  EXPECT_EQ(j["usage"]["completion_tokens"], 4);
  auto records = backend_->records();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0]->request.sampling.seed, 11u);
  EXPECT_EQ(records[1]->request.sampling.seed, 12u);
  EXPECT_EQ(records[0]->request.top_logprobs, 2);
}

TEST_F(Routes, OpenAiCompletionStopString) {
  auto r = post("/v1/completions", R"({"prompt":"Once","stop":["time"],"echo":true})");
  ASSERT_EQ(r.status, 200) << r.body;
  Json j = r.json();
  std::string full = scripted_text();
  std::string expected = "Once" + full.substr(0, full.find("time"));
  EXPECT_EQ(j["choices"][0]["text"], expected);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["object"], "text_completion");
  // Token-id prompts are passed through as they are.
  auto ids = post("/v1/completions", R"({"prompt":[1,50,60],"max_tokens":1})");
  ASSERT_EQ(ids.status, 200);
  EXPECT_EQ(backend_->records().back()->request.prompt, (std::vector<int32_t>{1, 50, 60}));
}

TEST_F(Routes, Embeddings) {
  auto f = post("/v1/embeddings", R"({"input":["a b","c"],"model":"text-embedding-3-small"})");
  ASSERT_EQ(f.status, 200) << f.body;
  Json j = f.json();
  EXPECT_EQ(j["object"], "list");
  ASSERT_EQ(j["data"].size(), 2u);
  EXPECT_EQ(j["data"][1]["index"], 1);
  EXPECT_EQ(j["data"][0]["embedding"].size(), 8u);
  auto b = post("/v1/embeddings", R"({"input":["a b","c"],"encoding_format":"base64"})");
  EXPECT_EQ(b.json()["data"][0]["embedding"], api::base64_floats(j["data"][0]["embedding"].get<std::vector<float>>()));
  auto dims = post("/v1/embeddings", R"({"input":"a b","dimensions":3})");
  Json v = dims.json()["data"][0]["embedding"];
  ASSERT_EQ(v.size(), 3u);
  double norm = 0;
  for (const auto& x : v) norm += x.get<double>() * x.get<double>();
  EXPECT_NEAR(norm, 1.0, 1e-5);

  auto o = post("/api/embed", R"({"model":"scripted","input":["a b","c"]})");
  ASSERT_EQ(o.status, 200);
  EXPECT_EQ(o.json()["embeddings"].size(), 2u);
  EXPECT_EQ(o.json()["embeddings"][0], j["data"][0]["embedding"]);
  auto legacy = post("/api/embeddings", R"({"model":"scripted","prompt":"a b"})");
  ASSERT_EQ(legacy.status, 200);
  EXPECT_EQ(legacy.json()["embedding"].size(), 8u);
}

TEST_F(Routes, AnthropicMessages) {
  auto r = post("/v1/messages", R"({"model":"claude-3-5-sonnet","max_tokens":5,"system":"Be kind.",
      "messages":[{"role":"user","content":"Hi"}]})", {{"anthropic-version", "2023-06-01"}});
  ASSERT_EQ(r.status, 200) << r.body;
  Json j = r.json();
  EXPECT_EQ(j["type"], "message");
  EXPECT_EQ(j["content"][0]["text"], scripted_text(5));
  EXPECT_EQ(j["stop_reason"], "max_tokens");
  EXPECT_EQ(j["id"].get<std::string>().rfind("msg_", 0), 0u);
  auto s = post("/v1/messages", R"({"max_tokens":50,"stream":true,"stop_sequences":["little"],
      "messages":[{"role":"user","content":"Hi"}]})");
  ASSERT_EQ(s.status, 200);
  EXPECT_NE(s.body.find("event: message_start\n"), std::string::npos);
  EXPECT_NE(s.body.find("event: ping\n"), std::string::npos);
  EXPECT_NE(s.body.find("\"stop_reason\":\"stop_sequence\",\"stop_sequence\":\"little\""), std::string::npos) << s.body;
  const std::string last = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
  ASSERT_GT(s.body.size(), last.size());
  EXPECT_EQ(s.body.substr(s.body.size() - last.size()), last);
  auto count = post("/v1/messages/count_tokens", R"({"model":"x","messages":[{"role":"user","content":"Hi"}]})");
  ASSERT_EQ(count.status, 200);
  EXPECT_GT(count.json()["input_tokens"].get<int>(), 3);
}

TEST_F(Routes, ResponsesApi) {
  auto r = post("/v1/responses", R"({"input":"Hi","max_output_tokens":3})");
  ASSERT_EQ(r.status, 200) << r.body;
  Json j = r.json();
  EXPECT_EQ(j["object"], "response");
  EXPECT_EQ(j["status"], "incomplete");
  EXPECT_EQ(j["output"][0]["content"][0]["text"], scripted_text(3));
  auto s = post("/v1/responses", R"({"input":"Hi","stream":true})");
  EXPECT_NE(s.body.find("event: response.completed\n"), std::string::npos);
}

TEST_F(Routes, ExtrasTokenizeTemplatePropsSlotsMetrics) {
  auto t = post("/tokenize", R"({"content":"Once upon","with_pieces":true})");
  ASSERT_EQ(t.status, 200);
  Json tokens = t.json()["tokens"];
  ASSERT_FALSE(tokens.empty());
  Json ids = Json::array();
  for (const auto& tok : tokens) ids.push_back(tok["id"]);
  auto d = post("/detokenize", Json{{"tokens", ids}}.dump());
  EXPECT_EQ(d.json()["content"], "Once upon");
  auto a = post("/apply-template", R"({"messages":[{"role":"system","content":"S"},{"role":"user","content":"U"}]})");
  EXPECT_EQ(a.json()["prompt"], "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n");
  Json props = get("/props").json();
  EXPECT_EQ(props["total_slots"], 2);
  EXPECT_EQ(props["default_generation_settings"]["n_ctx"], 256);
  EXPECT_EQ(get("/slots").json().size(), 2u);
  EXPECT_EQ(get("/v1/models").json()["data"][0]["id"], "scripted");
  EXPECT_EQ(get("/v1/models").json()["object"], "list");
  Json anthropic_models = get("/v1/models", {{"anthropic-version", "2023-06-01"}}).json();
  EXPECT_EQ(anthropic_models["data"][0]["type"], "model");
  EXPECT_EQ(anthropic_models["has_more"], false);
  EXPECT_EQ(get("/v1/models/scripted").json()["object"], "model");
  EXPECT_EQ(get("/v1/models/gpt-4").status, 404);

  post("/api/generate", R"({"model":"scripted","prompt":"Hi","stream":false,"options":{"num_predict":2}})");
  auto m = get("/metrics");
  ASSERT_EQ(m.status, 200);
  EXPECT_EQ(m.header("Content-Type").rfind("text/plain; version=0.0.4", 0), 0u);
  auto parsed = parse_prometheus_text(m.body);
  ASSERT_TRUE(parsed.ok) << parsed.error;
  EXPECT_EQ(parsed.samples["hearth_generated_tokens_total"], 2);
  EXPECT_GE(parsed.samples["hearth_http_responses_total{code=\"200\"}"], 1);
}

TEST_F(Routes, EngineErrorsInEachShape) {
  backend_->set_failure_marker("EXPLODE");
  auto whole = post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"EXPLODE"}]})");
  EXPECT_EQ(whole.status, 500);
  EXPECT_EQ(whole.json()["error"]["message"], "scripted engine failure");
  auto streamed = post("/v1/chat/completions", R"({"stream":true,"messages":[{"role":"user","content":"EXPLODE"}]})");
  EXPECT_EQ(streamed.status, 200);  // the stream had started; the error arrives as an event
  EXPECT_NE(streamed.body.find("data: {\"error\":{\"message\":\"scripted engine failure\""), std::string::npos);
  auto ollama = post("/api/chat", R"({"model":"scripted","messages":[{"role":"user","content":"EXPLODE"}]})");
  EXPECT_EQ(ollama.body, "{\"error\":\"scripted engine failure\"}\n");
  auto anthropic = post("/v1/messages", R"({"max_tokens":3,"stream":true,"messages":[{"role":"user","content":"EXPLODE"}]})");
  EXPECT_NE(anthropic.body.find("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\""), std::string::npos);

  backend_->set_overloaded(true);
  auto busy = post("/v1/messages", R"({"max_tokens":3,"messages":[{"role":"user","content":"hi"}]})");
  EXPECT_EQ(busy.status, 503);
  EXPECT_EQ(busy.json()["error"]["type"], "overloaded_error");
  backend_->set_overloaded(false);

  backend_->set_n_ctx_slot(8);
  auto long_prompt = post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"a much longer prompt than eight tokens"}]})");
  EXPECT_EQ(long_prompt.status, 400);
  EXPECT_NE(long_prompt.json()["error"]["message"].get<std::string>().find("tokens long"), std::string::npos);
  // ollama truncates by default, like ollama.
  auto truncated = post("/api/generate", R"({"model":"scripted","prompt":"a much longer prompt than eight tokens","stream":false})");
  EXPECT_EQ(truncated.status, 200);
  EXPECT_TRUE(backend_->records().back()->request.truncate);
}

}  // namespace
}  // namespace hearth::test
