// Response encoders: synthetic engine events in, each dialect's exact wire format out.
#include <gtest/gtest.h>

#include "api/json_fields.h"
#include "api/openai.h"
#include "api/response_encoder.h"

namespace hearth::api {
namespace {

using EngineEvent = protocol::Event;
using protocol::StopReason;

protocol::TokenOutput token(int32_t id, const std::string& piece, float lp) {
  protocol::TokenOutput t;
  t.token = id;
  t.piece = piece;
  t.logprob = lp;
  t.top = {{id, piece, lp}, {99, "x", lp - 1.0f}};
  return t;
}

EngineEvent text_event(const std::string& text, std::vector<protocol::TokenOutput> tokens) {
  EngineEvent e;
  e.kind = EngineEvent::Kind::kText;
  e.text = text;
  e.tokens = std::move(tokens);
  return e;
}

EngineEvent done_event(StopReason reason, int32_t predicted, const std::string& stop_word = "") {
  EngineEvent e;
  e.kind = EngineEvent::Kind::kDone;
  e.stop_reason = reason;
  e.stop_word = stop_word;
  e.timings.prompt_n = 4;
  e.timings.cached_n = 1;
  e.timings.prompt_ms = 2.5;
  e.timings.predicted_n = predicted;
  e.timings.reasoning_n = predicted / 2;
  e.timings.predicted_ms = 10.0;
  return e;
}

ResponseMeta meta(const std::string& id) {
  ResponseMeta m;
  m.id = id;
  m.model = "tiny";
  m.created = 1700000000;
  m.started = std::chrono::steady_clock::now();
  m.prompt_tokens = {4};
  m.prompt_ids = {{1, 10, 11, 12}};
  m.prompt_texts = {"Once"};
  return m;
}

// Runs the usual sequence: "Hel" (1 token), "lo" (1 token), then done.
std::string run(ResponseEncoder& enc, StopReason reason = StopReason::kEog, const std::string& stop_word = "") {
  std::string out = enc.begin();
  out += enc.on_event(0, text_event("Hel", {token(5, "Hel", -0.5f)}));
  out += enc.on_event(0, text_event("lo", {token(6, "lo", -0.25f)}));
  out += enc.on_event(0, done_event(reason, 2, stop_word));
  out += enc.end();
  return out;
}

// Splits an SSE stream into (event name, data) pairs; checks every frame ends with a blank line.
std::vector<std::pair<std::string, std::string>> sse_frames(const std::string& stream) {
  std::vector<std::pair<std::string, std::string>> frames;
  size_t pos = 0;
  while (pos < stream.size()) {
    size_t end = stream.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos) << "unterminated frame";
    if (end == std::string::npos) break;
    std::string frame = stream.substr(pos, end - pos);
    std::string event, data;
    size_t line_start = 0;
    while (line_start <= frame.size()) {
      size_t nl = frame.find('\n', line_start);
      std::string line = frame.substr(line_start, nl == std::string::npos ? std::string::npos : nl - line_start);
      if (line.rfind("event: ", 0) == 0) event = line.substr(7);
      else if (line.rfind("data: ", 0) == 0) data = line.substr(6);
      else ADD_FAILURE() << "unexpected SSE line: " << line;
      if (nl == std::string::npos) break;
      line_start = nl + 1;
    }
    frames.emplace_back(event, data);
    pos = end + 2;
  }
  return frames;
}

std::vector<Json> ndjson_lines(const std::string& stream) {
  std::vector<Json> lines;
  size_t pos = 0;
  while (pos < stream.size()) {
    size_t nl = stream.find('\n', pos);
    EXPECT_NE(nl, std::string::npos);
    if (nl == std::string::npos) break;
    lines.push_back(Json::parse(stream.substr(pos, nl - pos)));
    pos = nl + 1;
  }
  return lines;
}

TEST(OpenAiChatEncoder, StreamChunksUsageAndDone) {
  CompletionJob job;
  job.stream = true;
  job.include_usage = true;
  job.request.prompts.resize(1);
  auto enc = make_openai_chat_encoder(job, meta("chatcmpl-1"));
  EXPECT_STREQ(enc->content_type(), "text/event-stream");
  auto frames = sse_frames(run(*enc));
  ASSERT_GE(frames.size(), 5u);
  EXPECT_EQ(frames.back().second, "[DONE]");
  std::string content;
  for (size_t i = 0; i + 1 < frames.size(); ++i) {
    Json c = Json::parse(frames[i].second);
    EXPECT_EQ(c["id"], "chatcmpl-1");
    EXPECT_EQ(c["object"], "chat.completion.chunk");
    EXPECT_EQ(c["model"], "tiny");
    EXPECT_TRUE(c.contains("usage"));
    if (!c["choices"].empty() && c["choices"][0]["delta"].contains("content")) content += c["choices"][0]["delta"]["content"];
  }
  EXPECT_EQ(content, "Hello");
  Json first = Json::parse(frames[0].second);
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  Json finish = Json::parse(frames[frames.size() - 3].second);
  EXPECT_EQ(finish["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(finish["choices"][0]["delta"], Json::object());
  Json usage = Json::parse(frames[frames.size() - 2].second);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["prompt_tokens"], 4);
  EXPECT_EQ(usage["usage"]["completion_tokens"], 2);
  EXPECT_EQ(usage["usage"]["total_tokens"], 6);
  EXPECT_EQ(usage["usage"]["prompt_tokens_details"]["cached_tokens"], 1);
  EXPECT_EQ(usage["usage"]["completion_tokens_details"]["reasoning_tokens"], 1);
}

TEST(OpenAiChatEncoder, BodyWithLogprobsAndLengthFinish) {
  CompletionJob job;
  job.request.logprobs = true;
  job.request.prompts.resize(1);
  auto enc = make_openai_chat_encoder(job, meta("chatcmpl-2"));
  EXPECT_STREQ(enc->content_type(), "application/json");
  Json body = Json::parse(run(*enc, StopReason::kLength));
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_EQ(body["created"], 1700000000);
  const Json& choice = body["choices"][0];
  EXPECT_EQ(choice["index"], 0);
  EXPECT_EQ(choice["message"]["role"], "assistant");
  EXPECT_EQ(choice["message"]["content"], "Hello");
  EXPECT_EQ(choice["finish_reason"], "length");
  const Json& lp = choice["logprobs"]["content"];
  ASSERT_EQ(lp.size(), 2u);
  EXPECT_EQ(lp[0]["token"], "Hel");
  EXPECT_FLOAT_EQ(lp[0]["logprob"].get<float>(), -0.5f);
  EXPECT_EQ(lp[0]["bytes"], Json::parse("[72,101,108]"));
  EXPECT_EQ(lp[0]["top_logprobs"].size(), 2u);
  EXPECT_EQ(body["usage"]["completion_tokens"], 2);
}

TEST(OpenAiCompletionEncoder, EchoAndLegacyLogprobs) {
  CompletionJob job;
  job.echo = true;
  job.request.logprobs = true;
  job.request.prompts.resize(1);
  auto enc = make_openai_completion_encoder(job, meta("cmpl-1"));
  Json body = Json::parse(run(*enc, StopReason::kStopString, "!"));
  EXPECT_EQ(body["object"], "text_completion");
  const Json& choice = body["choices"][0];
  EXPECT_EQ(choice["text"], "OnceHello");
  EXPECT_EQ(choice["finish_reason"], "stop");
  EXPECT_EQ(choice["logprobs"]["tokens"], Json::parse(R"(["Hel","lo"])"));
  EXPECT_EQ(choice["logprobs"]["text_offset"], Json::parse("[4,7]"));
  EXPECT_FLOAT_EQ(choice["logprobs"]["top_logprobs"][1]["lo"].get<float>(), -0.25f);

  job.stream = true;
  auto streamed = make_openai_completion_encoder(job, meta("cmpl-2"));
  auto frames = sse_frames(run(*streamed));
  std::string text;
  for (size_t i = 0; i + 1 < frames.size(); ++i) text += Json::parse(frames[i].second)["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(text, "OnceHello");
  EXPECT_EQ(frames.back().second, "[DONE]");
}

TEST(OpenAiCompletionEncoder, ChoicesOfSeveralPromptsAreNumberedInOrder) {
  CompletionJob job;
  job.request.n_choices = 2;
  job.request.prompts.resize(2);
  ResponseMeta m = meta("cmpl-3");
  m.prompt_tokens = {4, 3};
  auto enc = make_openai_completion_encoder(job, m);
  enc->begin();
  for (int c = 0; c < 4; ++c) {
    enc->on_event(c, text_event("c" + std::to_string(c), {}));
    enc->on_event(c, done_event(StopReason::kEog, 1));
  }
  Json body = Json::parse(enc->end());
  ASSERT_EQ(body["choices"].size(), 4u);
  EXPECT_EQ(body["choices"][3]["text"], "c3");
  EXPECT_EQ(body["choices"][3]["index"], 3);
  EXPECT_EQ(body["usage"]["prompt_tokens"], 7);
  EXPECT_EQ(body["usage"]["completion_tokens"], 4);
}

TEST(OllamaEncoder, GenerateStreamFinalObject) {
  CompletionJob job;
  job.stream = true;
  job.request.prompts.resize(1);
  auto enc = make_ollama_generate_encoder(job, meta(""));
  EXPECT_STREQ(enc->content_type(), "application/x-ndjson");
  auto lines = ndjson_lines(run(*enc, StopReason::kLength));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["model"], "tiny");
  EXPECT_EQ(lines[0]["response"], "Hel");
  EXPECT_EQ(lines[0]["done"], false);
  EXPECT_EQ(lines[0]["created_at"].get<std::string>().size(), 30u);  // 2024-01-01T00:00:00.000000000Z
  const Json& last = lines[2];
  EXPECT_EQ(last["response"], "");
  EXPECT_EQ(last["done"], true);
  EXPECT_EQ(last["done_reason"], "length");
  EXPECT_EQ(last["context"], Json::parse("[1,10,11,12,5,6]"));
  EXPECT_EQ(last["prompt_eval_count"], 4);
  EXPECT_EQ(last["prompt_eval_duration"], 2500000);
  EXPECT_EQ(last["eval_count"], 2);
  EXPECT_EQ(last["eval_duration"], 10000000);
  EXPECT_EQ(last["load_duration"], 0);
  EXPECT_TRUE(last["total_duration"].is_number_integer());
  const char* order[] = {"model", "created_at", "response", "done", "done_reason", "context", "total_duration",
                         "load_duration", "prompt_eval_count", "prompt_eval_duration", "eval_count", "eval_duration"};
  size_t i = 0;
  for (auto it = last.begin(); it != last.end(); ++it, ++i) EXPECT_EQ(it.key(), order[i]);
}

TEST(OllamaEncoder, ChatBodyHasWholeMessage) {
  CompletionJob job;
  job.stream = false;
  job.request.logprobs = true;
  job.request.prompts.resize(1);
  auto enc = make_ollama_chat_encoder(job, meta(""));
  Json body = Json::parse(run(*enc));
  EXPECT_EQ(body["message"]["role"], "assistant");
  EXPECT_EQ(body["message"]["content"], "Hello");
  EXPECT_EQ(body["done_reason"], "stop");
  EXPECT_FALSE(body.contains("context"));
  ASSERT_EQ(body["logprobs"].size(), 2u);
  EXPECT_EQ(body["logprobs"][1]["token"], "lo");
}

TEST(AnthropicEncoder, StreamEventSequence) {
  CompletionJob job;
  job.stream = true;
  job.request.prompts.resize(1);
  auto enc = make_anthropic_messages_encoder(job, meta("msg_1"));
  auto frames = sse_frames(run(*enc, StopReason::kStopString, "\n\nHuman:"));
  std::vector<std::string> names;
  for (const auto& f : frames) {
    names.push_back(f.first);
    EXPECT_EQ(Json::parse(f.second)["type"], f.first);  // the data's type repeats the event name
  }
  EXPECT_EQ(names, (std::vector<std::string>{"message_start", "content_block_start", "ping", "content_block_delta",
                                             "content_block_delta", "content_block_stop", "message_delta", "message_stop"}));
  Json start = Json::parse(frames[0].second)["message"];
  EXPECT_EQ(start["id"], "msg_1");
  EXPECT_EQ(start["role"], "assistant");
  EXPECT_TRUE(start["content"].empty());
  EXPECT_TRUE(start["stop_reason"].is_null());
  EXPECT_EQ(start["usage"]["input_tokens"], 4);
  Json delta = Json::parse(frames[3].second);
  EXPECT_EQ(delta["delta"]["type"], "text_delta");
  EXPECT_EQ(delta["delta"]["text"], "Hel");
  Json md = Json::parse(frames[6].second);
  EXPECT_EQ(md["delta"]["stop_reason"], "stop_sequence");
  EXPECT_EQ(md["delta"]["stop_sequence"], "\n\nHuman:");
  EXPECT_EQ(md["usage"]["output_tokens"], 2);
}

TEST(AnthropicEncoder, MessageBody) {
  CompletionJob job;
  job.request.prompts.resize(1);
  auto enc = make_anthropic_messages_encoder(job, meta("msg_2"));
  Json body = Json::parse(run(*enc, StopReason::kLength));
  EXPECT_EQ(body["type"], "message");
  EXPECT_EQ(body["content"][0]["type"], "text");
  EXPECT_EQ(body["content"][0]["text"], "Hello");
  EXPECT_EQ(body["stop_reason"], "max_tokens");
  EXPECT_TRUE(body["stop_sequence"].is_null());
  EXPECT_EQ(body["usage"]["input_tokens"], 4);
  EXPECT_EQ(body["usage"]["output_tokens"], 2);
  auto end_turn = make_anthropic_messages_encoder(job, meta("msg_3"));
  EXPECT_EQ(Json::parse(run(*end_turn, StopReason::kEog))["stop_reason"], "end_turn");
}

TEST(ResponsesEncoder, StreamEventsAndFinalResponse) {
  CompletionJob job;
  job.stream = true;
  job.request.prompts.resize(1);
  auto enc = make_openai_responses_encoder(job, meta("resp_abc"));
  auto frames = sse_frames(run(*enc));
  std::vector<std::string> names;
  int64_t seq = 0;
  for (const auto& f : frames) {
    names.push_back(f.first);
    Json d = Json::parse(f.second);
    EXPECT_EQ(d["type"], f.first);
    EXPECT_EQ(d["sequence_number"], seq++);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"response.created", "response.in_progress", "response.output_item.added",
                                             "response.content_part.added", "response.output_text.delta",
                                             "response.output_text.delta", "response.output_text.done",
                                             "response.content_part.done", "response.output_item.done",
                                             "response.completed"}));
  Json done = Json::parse(frames.back().second)["response"];
  EXPECT_EQ(done["status"], "completed");
  EXPECT_EQ(done["output"][0]["content"][0]["text"], "Hello");
  EXPECT_EQ(done["usage"]["input_tokens"], 4);
  EXPECT_EQ(done["usage"]["output_tokens"], 2);

  job.stream = false;
  auto body_enc = make_openai_responses_encoder(job, meta("resp_def"));
  Json body = Json::parse(run(*body_enc, StopReason::kLength));
  EXPECT_EQ(body["status"], "incomplete");
  EXPECT_EQ(body["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(body["output"][0]["id"], "msg_def");
  EXPECT_TRUE(body["instructions"].is_null());
  EXPECT_EQ(body["text"]["format"], Json::parse(R"({"type":"text"})"));
}

TEST(ResponsesEncoder, EchoesInstructionsAndTextFormat) {
  auto job = parse_openai_responses(Json::parse(
      R"({"input":"hi","instructions":"Be brief.","text":{"format":{"type":"json_schema","name":"p",)"
      R"("schema":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}}}})"));
  ASSERT_TRUE(job.ok()) << job.error().message;
  auto enc = make_openai_responses_encoder(*job, meta("resp_echo"));
  Json body = Json::parse(run(*enc));
  EXPECT_EQ(body["instructions"], "Be brief.");
  EXPECT_EQ(body["text"]["format"]["type"], "json_schema");
  EXPECT_EQ(body["text"]["format"]["name"], "p");
  EXPECT_EQ(body["text"]["format"]["schema"]["required"][0], "a");
}

TEST(ErrorBody, EachDialectsShape) {
  EXPECT_EQ(error_body(Dialect::kOllama, 404, "model 'x' not found"), Json::parse(R"({"error":"model 'x' not found"})"));
  Json openai = error_body(Dialect::kOpenAI, 400, "bad");
  EXPECT_EQ(openai["error"]["message"], "bad");
  EXPECT_EQ(openai["error"]["type"], "invalid_request_error");
  EXPECT_EQ(openai["error"]["code"], 400);
  EXPECT_EQ(error_body(Dialect::kOpenAI, 401, "x")["error"]["type"], "authentication_error");
  EXPECT_EQ(error_body(Dialect::kOpenAI, 503, "x")["error"]["type"], "unavailable_error");
  Json anthropic = error_body(Dialect::kAnthropic, 413, "too big");
  EXPECT_EQ(anthropic["type"], "error");
  EXPECT_EQ(anthropic["error"]["type"], "request_too_large");
  EXPECT_EQ(anthropic["error"]["message"], "too big");
  EXPECT_EQ(error_body(Dialect::kAnthropic, 503, "x")["error"]["type"], "overloaded_error");
  EXPECT_EQ(error_body(Dialect::kAnthropic, 500, "x")["error"]["type"], "api_error");
}

}  // namespace
}  // namespace hearth::api
