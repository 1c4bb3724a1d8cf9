// Turns engine events back into a dialect's response bytes. The server drives an encoder the
// same way for every route: begin(), then on_event() for each text/done event of each choice
// (choices are numbered in submission order), then end() once every choice is done. A streaming
// encoder returns wire-ready chunks (SSE events or NDJSON lines) from each call; a non-streaming
// one returns "" until end(), which returns the whole JSON body. An encoder holds one response's
// running state and is used by one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/generation_job.h"
#include "protocol/events.h"

namespace hearth::api {

// What an encoder needs to know besides the events.
struct ResponseMeta {
  std::string id;          // "chatcmpl-...", "cmpl-...", "msg_...", "resp_..." (made by the server)
  std::string model;       // the name echoed in responses
  int64_t created = 0;     // unix seconds
  std::chrono::system_clock::time_point created_time;    // for ollama's created_at
  std::chrono::steady_clock::time_point started;         // request arrival, for total_duration
  std::vector<int32_t> prompt_tokens;   // per prompt: token count
  std::vector<std::vector<int32_t>> prompt_ids;  // per prompt: ids (ollama `context`)
  std::vector<std::string> prompt_texts;         // per prompt: text (OpenAI echo)
};

class ResponseEncoder {
 public:
  virtual ~ResponseEncoder() = default;
  // "text/event-stream", "application/x-ndjson" or "application/json".
  virtual const char* content_type() const = 0;
  virtual std::string begin() = 0;
  // `event` is kText or kDone.
  virtual std::string on_event(int32_t choice, const protocol::Event& event) = 0;
  virtual std::string end() = 0;
  // An error after the response started, framed for the stream; `body` is the dialect's error
  // object (see error_body). Non-streaming encoders are never asked (the server sends a status).
  virtual std::string error_chunk(const nlohmann::ordered_json& body) = 0;
};

// The error object of a dialect for an HTTP status and message:
//   ollama    {"error": message}
//   OpenAI    {"error": {"message", "type", "param": null, "code"}}
//   Anthropic {"type": "error", "error": {"type", "message"}}
nlohmann::ordered_json error_body(Dialect dialect, int status, const std::string& message);

// Encoders, one per response shape (defined in ollama_responses.cpp, openai_responses.cpp,
// openai_responses_api.cpp, anthropic.cpp).
std::unique_ptr<ResponseEncoder> make_ollama_generate_encoder(const CompletionJob& job, ResponseMeta meta);
std::unique_ptr<ResponseEncoder> make_ollama_chat_encoder(const CompletionJob& job, ResponseMeta meta);
std::unique_ptr<ResponseEncoder> make_openai_chat_encoder(const CompletionJob& job, ResponseMeta meta);
std::unique_ptr<ResponseEncoder> make_openai_completion_encoder(const CompletionJob& job, ResponseMeta meta);
std::unique_ptr<ResponseEncoder> make_openai_responses_encoder(const CompletionJob& job, ResponseMeta meta);
std::unique_ptr<ResponseEncoder> make_anthropic_messages_encoder(const CompletionJob& job, ResponseMeta meta);

}  // namespace hearth::api
