// What a dialect's request translator produces: the protocol request the server submits to
// the inference backend (prompts still as messages, text or ids: the engine side renders and
// tokenizes), plus what only the HTTP side needs to answer in the dialect's shape (streaming,
// echo, usage in the stream, ...). The dialect's ResponseEncoder turns the events back into
// bytes. Plain data, no behaviour.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/requests.h"

namespace hearth::api {

enum class Dialect { kOllama, kOpenAI, kAnthropic };

using PromptSource = protocol::PromptSource;

// One text-generation request as a dialect asked for it.
struct CompletionJob {
  Dialect dialect = Dialect::kOpenAI;
  protocol::CompletionRequest request;  // model (echoed in responses), prompts, choices, sampling ...
  bool stream = false;
  bool include_usage = false;          // OpenAI stream_options.include_usage
  bool echo = false;                   // /v1/completions: the prompt text precedes the output
  bool load_only = false;              // ollama: empty prompt/messages only loads the model
  bool unload = false;                 // ollama: keep_alive is 0 (a load-only answer says "unload")
  // Responses API: what the response object echoes back (the request's instructions and
  // text.format, {"type":"text"} when none was given, and reasoning.effort).
  std::optional<std::string> instructions;
  std::optional<std::string> reasoning_effort;
  nlohmann::json text_format = {{"type", "text"}};
};

// One embeddings request: each input is text or already token ids.
struct EmbeddingJob {
  Dialect dialect = Dialect::kOpenAI;
  protocol::EmbeddingRequest request;  // model, inputs, normalize, truncate
  bool base64 = false;      // OpenAI encoding_format "base64"
  int32_t dimensions = 0;   // keep only the first N values (renormalised); 0: all
  bool legacy = false;      // ollama /api/embeddings (one `prompt`, key `embedding`)
  std::optional<int64_t> keep_alive_ms;  // ollama's keep_alive (store mode: how long the model stays loaded)
};

}  // namespace hearth::api
