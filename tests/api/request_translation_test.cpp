// Request bodies of every dialect → jobs: the fields that must land in the engine request, and
// a table of bad bodies that must be refused with a message naming the problem.
#include <gtest/gtest.h>

#include "api/anthropic.h"
#include "api/keep_alive.h"
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
      // Tool definitions and tool_choice (api/tool_definitions.h), one wording in every dialect.
      {Route::kOpenAiChat, "{" + msgs + R"(,"tool_choice":5})", R"('tool_choice' must be "none", "auto", "required" or {"type": "function", "function": {"name": ...}}; got number)"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"tool_choice":"sometimes"})", R"(; got "sometimes")"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"tools":{"name":"f"}})", "'tools' must be an array, got object"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"tools":[5]})", "'tools[0]' must be an object, got number"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"tools":[{"type":"function"}]})", "'tools[0].function' is required"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"tools":[{"type":"function","function":"f"}]})", "'tools[0].function' must be an object, got string"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"tools":[{"type":"function","function":{"description":"d"}}]})", "'tools[0].function.name' is required"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"tools":[{"type":"function","function":{"name":""}}]})", "'tools[0].function.name' must not be empty"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"tools":[{"type":"function","function":{"name":"f","parameters":"x"}}]})", "'tools[0].function.parameters' must be an object"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"tools":[{"type":"custom","custom":{"name":"f"}}]})", "'tools[0]' has type 'custom'; only tools of type 'function' are supported"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"tool_choice":"required"})", R"('tool_choice' is "required" but no 'tools' are given)"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"tools":[],"tool_choice":"required"})", R"('tool_choice' is "required" but no 'tools' are given)"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"x"}}})", "'tool_choice' names function 'x', which is not in 'tools'"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"tool_choice":{"type":"function"}})", "'tool_choice.function' is required"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"tool_choice":{"type":"allowed_tools"}})", "only function tools can be chosen"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"parallel_tool_calls":"yes"})", "'parallel_tool_calls' must be a boolean"},
      {Route::kOpenAiResponses, R"({"input":"hi","tools":[{"type":"function"}]})", "'tools[0].name' is required"},
      {Route::kOpenAiResponses, R"({"input":"hi","tools":[{"type":"web_search_preview"}]})", "'tools[0]' has type 'web_search_preview'"},
      {Route::kOpenAiResponses, R"({"input":"hi","tools":[{"name":"f"}]})", "'tools[0].type' is required"},
      {Route::kOpenAiResponses, R"({"input":"hi","tool_choice":"required"})", R"('tool_choice' is "required" but no 'tools' are given)"},
      {Route::kOpenAiResponses, R"({"input":"hi","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"g"}})", "'tool_choice' names function 'g'"},
      {Route::kOpenAiResponses, R"({"input":"hi","tool_choice":[]})", R"({"type": "function", "name": ...}; got array)"},
      {Route::kOllamaChat, R"({"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function"}]})", "'tools[0].function' is required"},
      {Route::kOllamaChat, R"({"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"function":{"name":7}}]})", "'tools[0].function.name' must be a string, got number"},
      {Route::kAnthropic, R"({"max_tokens":10,"tools":[{"description":"d","input_schema":{}}],)" + msgs + "}", "'tools[0].name' is required"},
      {Route::kAnthropic, R"({"max_tokens":10,"tools":[{"name":"f","input_schema":"x"}],)" + msgs + "}", "'tools[0].input_schema' must be an object"},
      {Route::kAnthropic, R"({"max_tokens":10,"tools":[{"name":"f"}],"tool_choice":{"type":"tool","name":"x"},)" + msgs + "}", "'tool_choice' names function 'x', which is not in 'tools'"},
      {Route::kAnthropic, R"({"max_tokens":10,"tool_choice":{"type":"any"},)" + msgs + "}", R"('tool_choice' is "any" but no 'tools' are given)"},
      {Route::kAnthropic, R"({"max_tokens":10,"tool_choice":"auto",)" + msgs + "}", "'tool_choice' must be an object, got string"},
      {Route::kAnthropic, R"({"max_tokens":10,"tool_choice":{"type":"sometimes"},)" + msgs + "}", "'tool_choice.type' must be 'auto', 'any', 'tool' or 'none'"},
      {Route::kAnthropic, R"({"max_tokens":10,"tools":[{"name":"f"}],"tool_choice":{"type":"tool"},)" + msgs + "}", "'tool_choice.name' is required"},
      {Route::kAnthropic, R"({"max_tokens":10,"tool_choice":{"type":"auto","disable_parallel_tool_use":1},)" + msgs + "}", "'tool_choice.disable_parallel_tool_use' must be a boolean"},
      // Ranges per API (generation_options.h).
      {Route::kOpenAiChat, "{" + msgs + R"(,"temperature":2.5})", "'temperature' must be between 0 and 2, got 2.5"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"temperature":-1})", "'temperature' must be between 0 and 2, got -1"},
      {Route::kOpenAiCompletion, R"({"prompt":"a","temperature":3})", "'temperature' must be between 0 and 2, got 3"},
      {Route::kOpenAiResponses, R"({"input":"hi","temperature":3})", "'temperature' must be between 0 and 2, got 3"},
      {Route::kOpenAiResponses, R"({"input":"hi","top_logprobs":21})", "'top_logprobs' must be between 0 and 20"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"num_ctx":0})", "'num_ctx' must be between 1 and 16777216, got 0"},
      {Route::kAnthropic, R"({"max_tokens":10,"temperature":5,)" + msgs + "}", "'temperature' must be between 0 and 1, got 5"},
      {Route::kAnthropic, R"({"max_tokens":10,"temperature":1.01,)" + msgs + "}", "'temperature' must be between 0 and 1, got 1.01"},
      {Route::kAnthropic, R"({"max_tokens":10,"top_k":-1,)" + msgs + "}", "'top_k' must be between 0 and 2147483647, got -1"},
      {Route::kAnthropic, R"({"max_tokens":10,"messages":[{"role":"user","content":[]}]})", "'messages[0].content' must not be empty"},
      {Route::kOllamaGenerate, R"({"model":"m","prompt":"hi","options":{"temperature":-0.5}})", "'options.temperature' must be 0 or more, got -0.5"},
      {Route::kOllamaGenerate, R"({"model":"m","prompt":"hi","options":{"num_ctx":-1}})", "'options.num_ctx' must be between 1 and 16777216, got -1"},
      {Route::kOllamaGenerate, R"({"model":"m","prompt":"hi","options":{"num_ctx":1e9}})", "'options.num_ctx' must be between 1 and 16777216, got 1000000000"},
      {Route::kOllamaGenerate, R"({"model":"m","prompt":"hi","options":{"num_ctx":0}})", "'options.num_ctx' must be between 1 and 16777216, got 0"},
      {Route::kOllamaGenerate, R"({"model":"m","prompt":"hi","options":{"num_ctx":2048.5}})", "'options.num_ctx' must be an integer"},
      {Route::kOllamaChat, R"({"model":"m","messages":[{"role":"user","content":"hi"}],"top_logprobs":21})", "'top_logprobs' must be between 0 and 20"},
      // keep_alive (api/keep_alive.h): Go durations or seconds.
      {Route::kOllamaGenerate, R"({"model":"m","prompt":"hi","keep_alive":"bogus"})", R"('keep_alive': expected a number in duration "bogus")"},
      {Route::kOllamaGenerate, R"({"model":"m","prompt":"hi","keep_alive":"5x"})", R"(unknown unit "x" in duration "5x")"},
      {Route::kOllamaGenerate, R"({"model":"m","prompt":"hi","keep_alive":"1h30"})", R"(missing unit in duration "1h30")"},
      {Route::kOllamaGenerate, R"({"model":"m","prompt":"hi","keep_alive":""})", R"(no number in duration "")"},
      {Route::kOllamaGenerate, R"({"model":"m","prompt":"hi","keep_alive":"5 m"})", R"(in duration "5 m")"},
      {Route::kOllamaGenerate, R"({"model":"m","prompt":"hi","keep_alive":"99999999999h"})", R"(out of range in duration)"},
      {Route::kOllamaChat, R"({"model":"m","messages":[],"keep_alive":1e300})", "'keep_alive' is too long"},
      {Route::kOllamaChat, R"({"model":"m","messages":[],"keep_alive":true})", "'keep_alive' must be a duration string or a number of seconds, got boolean"},
      // A grammar field asks for a grammar.
      {Route::kOpenAiCompletion, R"({"prompt":"a","grammar":""})", "'grammar' is empty"},
      {Route::kOpenAiChat, "{" + msgs + R"(,"grammar":" \n "})", "'grammar' is empty"},
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

// Every valid tool_choice form is accepted; "none" hides the tools from the template.
TEST(RequestTranslation, ToolChoiceForms) {
  const std::string msgs = R"("messages":[{"role":"user","content":"hi"}])";
  const std::string chat_tools = R"("tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}])";
  struct Case {
    Route route;
    std::string body;
    size_t tools_seen;  // tools the chat template gets
  };
  const Case cases[] = {
      {Route::kOpenAiChat, "{" + msgs + "," + chat_tools + "}", 1},
      {Route::kOpenAiChat, "{" + msgs + "," + chat_tools + R"(,"tool_choice":"auto"})", 1},
      {Route::kOpenAiChat, "{" + msgs + "," + chat_tools + R"(,"tool_choice":null})", 1},
      {Route::kOpenAiChat, "{" + msgs + "," + chat_tools + R"(,"tool_choice":"required","parallel_tool_calls":false})", 1},
      {Route::kOpenAiChat, "{" + msgs + "," + chat_tools + R"(,"tool_choice":{"type":"function","function":{"name":"f"}}})", 1},
      {Route::kOpenAiChat, "{" + msgs + "," + chat_tools + R"(,"tool_choice":"none"})", 0},
      {Route::kOpenAiChat, "{" + msgs + R"(,"tool_choice":"auto"})", 0},
      {Route::kOpenAiChat, "{" + msgs + R"(,"tool_choice":"none","tools":[]})", 0},
      {Route::kOpenAiChat, "{" + msgs + R"(,"tools":[{"function":{"name":"f"}}]})", 1},  // type may be left out
      {Route::kOpenAiResponses, R"({"input":"hi","tools":[{"type":"function","name":"f","parameters":{}}],"tool_choice":{"type":"function","name":"f"}})", 1},
      {Route::kOpenAiResponses, R"({"input":"hi","tools":[{"type":"function","name":"f"}],"tool_choice":"required"})", 1},
      {Route::kOpenAiResponses, R"({"input":"hi","tools":[{"type":"function","name":"f"}],"tool_choice":"none"})", 0},
      {Route::kOllamaChat, R"({"model":"m","messages":[{"role":"user","content":"hi"}],)" + chat_tools + "}", 1},
      {Route::kAnthropic, R"({"max_tokens":5,"tools":[{"name":"f","input_schema":{"type":"object"}}],)" + msgs + "}", 1},
      {Route::kAnthropic, R"({"max_tokens":5,"tools":[{"name":"f"}],"tool_choice":{"type":"auto","disable_parallel_tool_use":true},)" + msgs + "}", 1},
      {Route::kAnthropic, R"({"max_tokens":5,"tools":[{"name":"f"}],"tool_choice":{"type":"any"},)" + msgs + "}", 1},
      {Route::kAnthropic, R"({"max_tokens":5,"tools":[{"name":"f"}],"tool_choice":{"type":"tool","name":"f"},)" + msgs + "}", 1},
      {Route::kAnthropic, R"({"max_tokens":5,"tools":[{"name":"f"}],"tool_choice":{"type":"none"},)" + msgs + "}", 0},
      {Route::kAnthropic, R"({"max_tokens":5,"tool_choice":{"type":"auto"},)" + msgs + "}", 0},
  };
  for (const auto& c : cases) {
    auto body = parse_json_object(c.body);
    ASSERT_TRUE(body.ok()) << c.body;
    Result<CompletionJob> job = make_error(ErrorKind::kInternal, "unset");
    switch (c.route) {
      case Route::kOpenAiChat: job = parse_openai_chat(*body); break;
      case Route::kOpenAiResponses: job = parse_openai_responses(*body); break;
      case Route::kOllamaChat: job = parse_ollama_chat(*body); break;
      case Route::kAnthropic: job = parse_anthropic_messages(*body); break;
      default: FAIL() << "route not covered";
    }
    ASSERT_TRUE(job.ok()) << c.body << "\n  got: " << job.error().message;
    const Json& chat = job->request.prompts.at(0).chat;
    EXPECT_EQ(chat.contains("tools") ? chat["tools"].size() : 0u, c.tools_seen) << c.body;
    if (c.tools_seen > 0) EXPECT_EQ(chat["tools"][0]["function"]["name"], "f") << c.body;
  }
}

// keep_alive forms ollama accepts → request.keep_alive_ms (-1 forever, 0 unload).
TEST(RequestTranslation, KeepAliveForms) {
  struct Case {
    const char* json;
    int64_t ms;
  };
  const Case cases[] = {
      {"0", 0},           {R"("0")", 0},          {R"("0s")", 0},          {R"("0m")", 0},
      {R"("0h")", 0},     {"0.0", 0},             {"300", 300000},         {"2.5", 2500},
      {R"("5m")", 300000}, {R"("1h30m")", 5400000}, {R"("300ms")", 300},   {R"("1.5h")", 5400000},
      {R"(".5s")", 500},  {R"("+5s")", 5000},     {R"("100")", 100000},    {R"("1us")", 1},
      {"\"1\xC2\xB5s\"", 1}, {"-1", -1},          {R"("-1")", -1},         {R"("-1s")", -1},
      {R"("-5m")", -1},   {"-0.5", -1},           {R"("2562047h")", 2562047LL * 3600 * 1000},
  };
  for (const auto& c : cases) {
    auto job = parse_ollama_generate(*parse_json_object(std::string(R"({"model":"m","keep_alive":)") + c.json + "}"));
    ASSERT_TRUE(job.ok()) << c.json << ": " << job.error().message;
    ASSERT_TRUE(job->request.keep_alive_ms.has_value()) << c.json;
    EXPECT_EQ(*job->request.keep_alive_ms, c.ms) << c.json;
    EXPECT_EQ(job->unload, c.ms == 0) << c.json;
  }
  for (const char* absent : {R"({"model":"m"})", R"({"model":"m","keep_alive":null})"}) {
    auto job = parse_ollama_chat(*parse_json_object(absent));
    ASSERT_TRUE(job.ok());
    EXPECT_FALSE(job->request.keep_alive_ms.has_value()) << absent;
    EXPECT_FALSE(job->unload);
  }
}

TEST(RequestTranslation, GoDurationsParseExactly) {
  EXPECT_EQ(*parse_go_duration_ns("1h2m3s4ms5us6ns"), 3723004005006LL);
  EXPECT_EQ(*parse_go_duration_ns("1.000000001s"), 1000000001LL);
  EXPECT_EQ(*parse_go_duration_ns("9223372036854775807ns"), INT64_MAX);
  EXPECT_EQ(*parse_go_duration_ns("-9223372036854775808ns"), INT64_MIN);
  EXPECT_FALSE(parse_go_duration_ns("9223372036854775808ns").ok());
  EXPECT_FALSE(parse_go_duration_ns("2562048h").ok());
  for (const char* bad : {"", "-", ".", ".s", "1", "1.5", "s", "1s2", "1d", "1 s", "0x", "--1s"}) {
    EXPECT_FALSE(parse_go_duration_ns(bad).ok()) << bad;
  }
}

TEST(RequestTranslation, NumCtxReachesTheEngineRequest) {
  auto job = parse_ollama_chat(*parse_json_object(
      R"({"model":"m","messages":[{"role":"user","content":"hi"}],"options":{"num_ctx":8192}})"));
  ASSERT_TRUE(job.ok()) << job.error().message;
  EXPECT_EQ(job->request.num_ctx, 8192);
  auto most = parse_ollama_generate(*parse_json_object(R"({"model":"m","prompt":"x","options":{"num_ctx":16777216}})"));
  ASSERT_TRUE(most.ok()) << most.error().message;
  EXPECT_EQ(most->request.num_ctx, 16777216);
  auto none = parse_ollama_generate(*parse_json_object(R"({"model":"m","prompt":"x"})"));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->request.num_ctx, 0);
  // Ranges that are valid in one API: temperature 1.5 (OpenAI, ollama), top_k -1 (llama-server: off).
  EXPECT_TRUE(parse_openai_chat(*parse_json_object(R"({"messages":[{"role":"user","content":"x"}],"temperature":2,"top_k":-1})")).ok());
  EXPECT_TRUE(parse_ollama_generate(*parse_json_object(R"({"model":"m","prompt":"x","options":{"temperature":7,"top_k":-1}})")).ok());
  EXPECT_TRUE(parse_anthropic_messages(*parse_json_object(R"({"max_tokens":1,"temperature":1,"top_k":0,"messages":[{"role":"user","content":"x"}]})")).ok());
  // An empty grammar is refused, but an absent or null one is no grammar.
  EXPECT_TRUE(parse_openai_completion(*parse_json_object(R"({"prompt":"a","grammar":null})")).ok());
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

TEST(RequestTranslation, EmbeddingKeepAliveIsReadLikeGenerates) {
  auto none = parse_ollama_embed(*parse_json_object(R"({"model":"m","input":"x"})"), false);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->keep_alive_ms.has_value());
  auto zero = parse_ollama_embed(*parse_json_object(R"({"model":"m","input":"x","keep_alive":0})"), false);
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(zero->keep_alive_ms, 0);
  auto legacy = parse_ollama_embed(*parse_json_object(R"({"model":"m","prompt":"x","keep_alive":"1m30s"})"), true);
  ASSERT_TRUE(legacy.ok());
  EXPECT_EQ(legacy->keep_alive_ms, 90000);
  auto forever = parse_ollama_embed(*parse_json_object(R"({"model":"m","input":"x","keep_alive":-1})"), false);
  ASSERT_TRUE(forever.ok());
  EXPECT_LT(*forever->keep_alive_ms, 0);
  auto bad = parse_ollama_embed(*parse_json_object(R"({"model":"m","input":"x","keep_alive":"soon"})"), false);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("keep_alive"), std::string::npos) << bad.error().message;
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
