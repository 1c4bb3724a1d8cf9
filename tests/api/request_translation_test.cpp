// Request bodies of every dialect → jobs: the fields that must land in the engine request, and
// a table of bad bodies that must be refused with a message naming the problem.
#include <gtest/gtest.h>

#include "api/anthropic.h"
#include "api/ollama.h"
#include "api/openai.h"

namespace hearth::api {
namespace {

enum class Route { kOpenAiChat, kOpenAiCompletion, kOpenAiEmbeddings, kOpenAiResponses, kOllamaGenerate, kOllamaChat,
                   kOllamaEmbed, kAnthropic };

Status translate(Route route, const std::string& text) {
  auto body = parse_json_object(text);
  if (!body.ok()) return body.error();
  switch (route) {
    case Route::kOpenAiChat: { auto r = parse_openai_chat(*body); return r.ok() ? ok_status() : Status(r.error()); }
    case Route::kOpenAiCompletion: { auto r = parse_openai_completion(*body); return r.ok() ? ok_status() : Status(r.error()); }
    case Route::kOpenAiEmbeddings: { auto r = parse_openai_embeddings(*body); return r.ok() ? ok_status() : Status(r.error()); }
    case Route::kOpenAiResponses: { auto r = parse_openai_responses(*body); return r.ok() ? ok_status() : Status(r.error()); }
    case Route::kOllamaGenerate: { auto r = parse_ollama_generate(*body); return r.ok() ? ok_status() : Status(r.error()); }
    case Route::kOllamaChat: { auto r = parse_ollama_chat(*body); return r.ok() ? ok_status() : Status(r.error()); }
    case Route::kOllamaEmbed: { auto r = parse_ollama_embed(*body, false); return r.ok() ? ok_status() : Status(r.error()); }
    case Route::kAnthropic: { auto r = parse_anthropic_messages(*body); return r.ok() ? ok_status() : Status(r.error()); }
  }
  return ok_status();
}

TEST(RequestTranslation, BadBodiesAreRefusedWithTheirReason) {
  struct Case {
    Route route;
    std::string body;
    std::string expect;  // substring of the message
  };
  const std::string msgs = R"("messages":[{"role":"user","content":"hi"}])";
  const Case cases[] = {
      {Route::kOpenAiChat, "{}", "'messages' must be a non-empty array"},
      {Route::kOpenAiChat, R"({"messages":[]})", "'messages' must be a non-empty array"},
      {Route::kOpenAiChat, R"({"messages":"hi"})", "'messages' must be an array, got string"},
      {Route::kOpenAiChat, R"({"messages":[{"content":"x"}]})", "'messages[0].role' must be a string"},
      {Route::kOpenAiChat, R"({"messages":[{"role":"wizard","content":"x"}]})", "must be one of"},
      {Route::kOpenAiChat, R"({"messages":[{"role":"user"}]})", "'messages[0].content' is required"},
      {Route::kOpenAiChat, R"({"messages":[{"role":"user","content":5}]})", "content' must be a string"},
      {Route::kOpenAiChat, R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]})", "cannot read images"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"temperature":"hot"})", "'temperature' must be a number, got string"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"max_tokens":0})", "'max_tokens' must be between 1"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"max_completion_tokens":-5})", "'max_completion_tokens' must be between"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"n":0})", "'n' must be between 1 and 16"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"top_logprobs":50})", "'top_logprobs' must be between 0 and 20"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"stop":[1,2]})", "'stop' must be a string or an array of strings"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"logit_bias":{"abc":1}})", "keys must be token ids"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"logit_bias":{"5":"x"}})", "values must be numbers"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"stream":"yes"})", "'stream' must be a boolean"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"response_format":{"type":"xml"}})", "'response_format.type' must be 'text', 'json_object' or 'json_schema'"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"response_format":{"type":"json_schema","json_schema":{"name":"x"}}})", "'response_format.json_schema.schema' is required"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"response_format":{"type":"json_object"},"grammar":"root ::= \"x\""})", "'response_format' and 'grammar' both constrain the output"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"json_schema":"{}"})", "'json_schema' must be a JSON schema object, got string"},
      {Route::kOpenAiCompletion, R"({"prompt":"a","grammar":5})", "'grammar' must be a string"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"model":7})", "'model' must be a string"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"stream_options":{"include_usage":1}})", "'stream_options.include_usage' must be a boolean"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"samplers":["top_k","warp"]})", "samplers"},
      {Route::kOpenAiCompletion, "{}", "'prompt' is required"},
      {Route::kOpenAiCompletion, R"({"prompt":[]})", "'prompt' must not be empty"},
      {Route::kOpenAiCompletion, R"({"prompt":{"a":1}})", "'prompt' must be a string"},
      {Route::kOpenAiCompletion, R"({"prompt":[1,-2]})", "token ids must be non-negative"},
      {Route::kOpenAiCompletion, R"({"prompt":["a",[1]]})", "mixes strings and token arrays"},
      {Route::kOpenAiCompletion, R"({"prompt":"a","best_of":3})", "best_of"},
      {Route::kOpenAiCompletion, R"({"prompt":"a","logprobs":true})", "'logprobs' must be an integer"},
      {Route::kOpenAiEmbeddings, "{}", "'input' is required"},
      {Route::kOpenAiEmbeddings, R"({"input":""})", "empty strings"},
      {Route::kOpenAiEmbeddings, R"({"input":"a","encoding_format":"hex"})", "'encoding_format' must be"},
      {Route::kOpenAiEmbeddings, R"({"input":"a","dimensions":0})", "'dimensions' must be between"},
      {Route::kOpenAiResponses, "{}", "'input' is required"},
      {Route::kOpenAiResponses, R"({"input":"hi","text":{"format":{"type":"json_schema","name":"x"}}})", "'text.format.schema' is required"},
      {Route::kOpenAiResponses, R"({"input":"hi","previous_response_id":"resp_1"})", "stateless"},
      {Route::kOpenAiResponses, R"({"input":[{"role":"user","content":[{"type":"input_image","image_url":"x"}]}]})", "cannot read images"},
      {Route::kOpenAiResponses, R"({"input":[{"type":"item_reference","id":"x"}]})", "item_reference"},
      {Route::kOllamaGenerate, R"({"prompt":"hi"})", "model is required"},
      {Route::kOllamaGenerate, R"({"model":"m","prompt":"hi","images":["aGk="]})", "cannot read images"},
      {Route::kOllamaGenerate, R"({"model":"m","prompt":"hi","format":"yaml"})", "'format' must be \"json\" or a JSON schema object"},
      {Route::kOllamaGenerate, R"({"model":"m","prompt":"hi","format":7})", "'format' must be a JSON schema object, got number"},
      {Route::kOllamaGenerate, R"({"model":"m","prompt":"hi","options":{"temperature":"warm"}})", "'options.temperature' must be a number"},
      {Route::kOllamaGenerate, R"({"model":"m","prompt":"hi","options":{"num_ctx":"big"}})", "'options.num_ctx'"},
      {Route::kOllamaGenerate, R"({"model":"m","prompt":"hi","options":{"num_predict":-3}})", "'options.num_predict' must be >= -2"},
      {Route::kOllamaGenerate, R"({"model":"m","prompt":"hi","context":["a"]})", "'context' must be an array of token ids"},
      {Route::kOllamaGenerate, R"({"model":"m","prompt":"hi","keep_alive":[]})", "keep_alive"},
      {Route::kOllamaChat, R"({"model":"m","messages":[{"role":"user","content":"hi","images":["aGk="]}]})", "cannot read images"},
      {Route::kOllamaChat, R"({"model":"m","messages":[{"role":"robot","content":"hi"}]})", "role' must be"},
      {Route::kOllamaChat, R"({"model":"m","messages":[{"role":"user","content":["hi"]}]})", "'messages[0].content' must be a string"},
      {Route::kOllamaChat, R"({"model":"m","messages":{"role":"user"}})", "'messages' must be an array"},
      {Route::kOllamaEmbed, R"({"input":"x"})", "model is required"},
      {Route::kOllamaEmbed, R"({"model":"m","input":[1]})", "'input' must be a string or an array of strings"},
      {Route::kAnthropic, "{" + msgs + "}", "'max_tokens' is required"},
      {Route::kAnthropic, R"({"max_tokens":10,"messages":[]})", "'messages' must be a non-empty array"},
      {Route::kAnthropic, R"({"max_tokens":10,"messages":[{"role":"system","content":"x"}]})", "'user' or 'assistant'"},
      {Route::kAnthropic, R"({"max_tokens":10,"system":5,)" + msgs + "}", "'system' must be a string"},
      {Route::kAnthropic, R"({"max_tokens":10,"messages":[{"role":"user","content":[{"type":"image","source":{}}]}]})", "reads text only"},
      {Route::kAnthropic, R"({"max_tokens":10,"top_k":"5",)" + msgs + "}", "'top_k' must be an integer"},
      {Route::kAnthropic, R"({"max_tokens":10,"stop_sequences":"x",)" + msgs + "}", "'stop_sequences' must be an array of strings"},
      {Route::kAnthropic, R"({"max_tokens":10,"stop_sequences":[1],)" + msgs + "}", "'stop_sequences' must be an array of strings"},
      {Route::kOllamaChat, R"({"model":"m","messages":[{"role":"user","content":"hi"}],"stream":"no"})", "'stream' must be a boolean"},
  };
  for (const auto& c : cases) {
    Status s = translate(c.route, c.body);
    EXPECT_FALSE(s.ok()) << c.body;
    if (s.ok()) continue;
    EXPECT_TRUE(s.error().kind == ErrorKind::kInvalidArgument || s.error().kind == ErrorKind::kUnsupported) << c.body;
    EXPECT_NE(s.error().message.find(c.expect), std::string::npos) << c.body << "\n  got: " << s.error().message;
  }
}

TEST(RequestTranslation, OpenAiChatFieldsReachTheEngineRequest) {
  auto body = parse_json_object(R"({
    "model": "whatever", "messages": [{"role": "developer", "content": "Be terse."}, {"role": "user", "content": "Hi"}],
    "max_completion_tokens": 12, "temperature": 0, "top_k": 5, "min_p": 0.1, "repeat_penalty": 1.2, "seed": 42,
    "stop": "END", "logprobs": true, "top_logprobs": 3, "logit_bias": {"7": -100}, "n": 2,
    "stream": true, "stream_options": {"include_usage": true}})");
  ASSERT_TRUE(body.ok());
  auto job = parse_openai_chat(*body);
  ASSERT_TRUE(job.ok()) << job.error().message;
  EXPECT_EQ(job->request.model, "whatever");
  EXPECT_EQ(job->request.n_predict, 12);
  EXPECT_EQ(job->request.sampling.temperature, 0.0f);
  EXPECT_EQ(job->request.sampling.top_k, 5);
  EXPECT_FLOAT_EQ(job->request.sampling.min_p, 0.1f);
  EXPECT_FLOAT_EQ(job->request.sampling.repeat_penalty, 1.2f);
  EXPECT_EQ(job->request.sampling.seed, 42u);
  EXPECT_EQ(job->request.stop, std::vector<std::string>{"END"});
  EXPECT_TRUE(job->request.logprobs);
  EXPECT_EQ(job->request.top_logprobs, 3);
  ASSERT_EQ(job->request.sampling.logit_bias.size(), 1u);
  EXPECT_EQ(job->request.sampling.logit_bias[0].first, 7);
  EXPECT_EQ(job->request.sampling.logit_bias[0].second, -100.0f);
  EXPECT_EQ(job->request.n_choices, 2);
  EXPECT_TRUE(job->stream);
  EXPECT_TRUE(job->include_usage);
  ASSERT_EQ(job->request.prompts.size(), 1u);
  EXPECT_EQ(job->request.prompts[0].kind, PromptSource::Kind::kChat);
  EXPECT_EQ(job->request.prompts[0].chat["messages"][0]["role"], "system");  // developer → system
}

TEST(RequestTranslation, OpenAiDefaultsAreLlamaServers) {
  auto job = parse_openai_chat(*parse_json_object(R"({"messages":[{"role":"user","content":"x"}]})"));
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->request.n_predict, -1);
  EXPECT_FLOAT_EQ(job->request.sampling.top_p, 0.95f);
  EXPECT_FLOAT_EQ(job->request.sampling.min_p, 0.05f);
  EXPECT_FALSE(job->stream);
}

TEST(RequestTranslation, OpenAiCompletionPromptForms) {
  auto many = parse_openai_completion(*parse_json_object(R"({"prompt":["a","b"],"n":2,"echo":true,"logprobs":2})"));
  ASSERT_TRUE(many.ok()) << many.error().message;
  ASSERT_EQ(many->request.prompts.size(), 2u);
  EXPECT_EQ(many->request.prompts[1].text, "b");
  EXPECT_TRUE(many->echo);
  EXPECT_TRUE(many->request.logprobs);
  EXPECT_EQ(many->request.top_logprobs, 2);
  auto tokens = parse_openai_completion(*parse_json_object(R"({"prompt":[[1,2],[3]]})"));
  ASSERT_TRUE(tokens.ok());
  ASSERT_EQ(tokens->request.prompts.size(), 2u);
  EXPECT_EQ(tokens->request.prompts[0].kind, PromptSource::Kind::kTokens);
  EXPECT_EQ(tokens->request.prompts[0].tokens, (std::vector<int32_t>{1, 2}));
  auto fim = parse_openai_completion(*parse_json_object(R"({"prompt":"def f(","suffix":"\n  return x"})"));
  ASSERT_TRUE(fim.ok());
  EXPECT_TRUE(fim->request.prompts[0].fill_in_middle);
}

TEST(RequestTranslation, OllamaGenerateShapes) {
  auto load = parse_ollama_generate(*parse_json_object(R"({"model":"m"})"));
  ASSERT_TRUE(load.ok());
  EXPECT_TRUE(load->load_only);
  EXPECT_FALSE(load->unload);
  for (const char* zero : {R"(0)", R"("0")", R"("0s")", R"("0m")", R"("0h")", R"(0.0)"}) {
    auto unload = parse_ollama_generate(*parse_json_object(std::string(R"({"model":"m","keep_alive":)") + zero + "}"));
    ASSERT_TRUE(unload.ok());
    EXPECT_TRUE(unload->unload) << zero;
  }
  for (const char* kept : {R"(300)", R"("5m")", R"(-1)", R"(null)"}) {
    auto keep = parse_ollama_generate(*parse_json_object(std::string(R"({"model":"m","keep_alive":)") + kept + "}"));
    ASSERT_TRUE(keep.ok());
    EXPECT_FALSE(keep->unload) << kept;
  }

  auto chat = parse_ollama_generate(*parse_json_object(
      R"({"model":"m","prompt":"Why?","system":"S","options":{"num_predict":5,"temperature":0,"seed":3,"stop":["x"],"num_keep":2}})"));
  ASSERT_TRUE(chat.ok()) << chat.error().message;
  EXPECT_TRUE(chat->stream);  // ollama streams unless told not to
  EXPECT_EQ(chat->request.n_predict, 5);
  EXPECT_EQ(chat->request.n_keep, 2);
  EXPECT_EQ(chat->request.sampling.seed, 3u);
  EXPECT_FLOAT_EQ(chat->request.sampling.repeat_penalty, 1.1f);  // ollama default
  EXPECT_EQ(chat->request.prompts[0].kind, PromptSource::Kind::kChat);
  EXPECT_EQ(chat->request.prompts[0].chat["messages"].size(), 2u);

  auto raw = parse_ollama_generate(*parse_json_object(R"({"model":"m","prompt":"Once","raw":true,"stream":false,"context":[1,5]})"));
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw->request.prompts[0].kind, PromptSource::Kind::kText);
  EXPECT_EQ(raw->request.prompts[0].text, "Once");
  EXPECT_EQ(raw->request.prompts[0].prefix_tokens, (std::vector<int32_t>{1, 5}));
  EXPECT_FALSE(raw->request.prompts[0].add_special);

  auto templ = parse_ollama_generate(*parse_json_object(
      R"J({"model":"m","prompt":"P","system":"S","template":"[{{ .System }}]({{ .Prompt }})"})J"));
  ASSERT_TRUE(templ.ok());
  // The Go template is rendered on the engine side (template/go_template.h).
  EXPECT_EQ(templ->request.prompts[0].kind, PromptSource::Kind::kGoTemplate);
  EXPECT_EQ(templ->request.prompts[0].text, "[{{ .System }}]({{ .Prompt }})");
  EXPECT_EQ(templ->request.prompts[0].template_fields.at("System"), "S");
  EXPECT_EQ(templ->request.prompts[0].template_fields.at("Prompt"), "P");
}

TEST(RequestTranslation, OllamaChatConvertsToolCalls) {
  auto job = parse_ollama_chat(*parse_json_object(R"({"model":"m","messages":[
      {"role":"user","content":"weather?"},
      {"role":"assistant","content":"","tool_calls":[{"function":{"name":"get","arguments":{"city":"Oslo"}}}]},
      {"role":"tool","content":"cold","tool_name":"get"}]})"));
  ASSERT_TRUE(job.ok()) << job.error().message;
  const Json& m = job->request.prompts[0].chat["messages"];
  EXPECT_EQ(m[1]["tool_calls"][0]["function"]["arguments"]["city"], "Oslo");
  EXPECT_EQ(m[2]["name"], "get");
  auto empty = parse_ollama_chat(*parse_json_object(R"({"model":"m","messages":[]})"));
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->load_only);
}

TEST(RequestTranslation, AnthropicBlocksBecomeChat) {
  auto job = parse_anthropic_messages(*parse_json_object(R"({"model":"claude","max_tokens":20,
      "system":[{"type":"text","text":"A"},{"type":"text","text":"B"}],
      "stop_sequences":["\n\nHuman:"], "temperature":0.5, "top_k":3,
      "messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"text","text":" there"}]},
                  {"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{"a":1}}]},
                  {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"42"}]}]})"));
  ASSERT_TRUE(job.ok()) << job.error().message;
  EXPECT_EQ(job->request.n_predict, 20);
  EXPECT_EQ(job->request.stop, std::vector<std::string>{"\n\nHuman:"});
  EXPECT_EQ(job->request.sampling.top_k, 3);
  const Json& m = job->request.prompts[0].chat["messages"];
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0]["role"], "system");
  EXPECT_EQ(m[0]["content"], "A\n\nB");
  EXPECT_EQ(m[1]["content"][1]["text"], " there");
  EXPECT_EQ(m[2]["tool_calls"][0]["function"]["name"], "f");
  EXPECT_EQ(m[3]["role"], "tool");
  EXPECT_EQ(m[3]["content"], "42");
}

TEST(RequestTranslation, ResponsesApiInputItems) {
  auto job = parse_openai_responses(*parse_json_object(R"({"input":[
      {"role":"user","content":[{"type":"input_text","text":"hi"}]},
      {"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},
      {"type":"function_call_output","call_id":"c1","output":"ok"}],
      "instructions":"Be nice","max_output_tokens":9})"));
  ASSERT_TRUE(job.ok()) << job.error().message;
  const Json& m = job->request.prompts[0].chat["messages"];
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0]["role"], "system");
  EXPECT_EQ(m[2]["tool_calls"][0]["id"], "c1");
  EXPECT_EQ(m[3]["role"], "tool");
  EXPECT_EQ(job->request.n_predict, 9);
}

TEST(RequestTranslation, EmbeddingInputs) {
  auto openai = parse_openai_embeddings(*parse_json_object(R"({"input":["a","b"],"encoding_format":"base64"})"));
  ASSERT_TRUE(openai.ok());
  EXPECT_EQ(openai->request.texts.size(), 2u);
  EXPECT_TRUE(openai->base64);
  auto legacy = parse_ollama_embed(*parse_json_object(R"({"model":"m","prompt":"x"})"), true);
  ASSERT_TRUE(legacy.ok());
  EXPECT_FALSE(legacy->request.normalize);
  EXPECT_EQ(legacy->request.texts, std::vector<std::string>{"x"});
}

TEST(RequestTranslation, Base64FloatsAreLittleEndianFloat32) {
  // 1.0f = 00 00 80 3f, 2.0f = 00 00 00 40 → base64 of those 8 bytes.
  EXPECT_EQ(base64_floats({1.0f, 2.0f}), "AACAPwAAAEA=");
  EXPECT_EQ(base64_floats({1.0f}), "AACAPw==");
  EXPECT_EQ(base64_floats({}), "");
}

TEST(ModelInfoNames, AnswersToNameAliasesAndLatestTag) {
  protocol::ModelInfo card;
  card.name = "stories";
  card.aliases = {"llama", "stories260k-llama-f32"};
  EXPECT_TRUE(card.answers_to(""));
  EXPECT_TRUE(card.answers_to("stories"));
  EXPECT_TRUE(card.answers_to("Stories:latest"));
  EXPECT_TRUE(card.answers_to("stories260K-llama-f32"));
  EXPECT_FALSE(card.answers_to("stories:7b"));
  EXPECT_FALSE(card.answers_to("gpt-4"));
  EXPECT_EQ(card.tagged_name(), "stories:latest");
}

}  // namespace
}  // namespace hearth::api
