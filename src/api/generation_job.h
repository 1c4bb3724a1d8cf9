// What a dialect's request translator produces: everything the server needs to run one HTTP
// request on the engine, still without token ids. The server renders the chat template (or
// takes the raw text), tokenizes, checks the length against the context and submits one
// engine::CompletionRequest per choice; the dialect's ResponseEncoder turns the events back
// into bytes. Plain data, no behaviour.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/serving_types.h"

namespace hearth::api {

enum class Dialect { kOllama, kOpenAI, kAnthropic };

// Where a prompt comes from.
struct PromptSource {
  enum class Kind {
    kChat,    // `chat` is an OpenAI-style body for ChatTemplate::render (messages, tools, ...)
    kText,    // `text` is the prompt as is
    kTokens,  // `tokens` are the prompt ids as is (no BOS added)
  };
  Kind kind = Kind::kText;
  nlohmann::ordered_json chat;
  std::string text;
  std::vector<int32_t> tokens;
  // Fill-in-the-middle: when set, the prompt is the model's prefix/suffix/middle tokens around
  // `text` and `suffix` (an error for models without FIM tokens).
  bool fill_in_middle = false;
  std::string suffix;
  // ollama's `context`: ids of an earlier exchange placed before the prompt.
  std::vector<int32_t> prefix_tokens;
  bool add_special = true;  // the tokenizer's BOS/EOS rules (kText, kChat)
  // kChat from ollama's /api/generate: the text to continue instead when the model has no chat
  // template of its own (ollama's default template is the bare prompt; a ChatML wrapper would
  // turn a base model's continuation into a chat it was never trained on).
  std::optional<std::string> untemplated_text;
};

// One text-generation request as a dialect asked for it.
struct CompletionJob {
  Dialect dialect = Dialect::kOpenAI;
  std::string model;                   // the name the request used (echoed in responses)
  std::vector<PromptSource> prompts;   // one, or several for /v1/completions with a list
  engine::CompletionRequest request;   // sampling, n_predict, stop, logprobs; prompt left empty
  std::vector<std::string> dry_breakers;  // DRY sequence breakers, tokenized by the server
  int32_t n_choices = 1;               // per prompt (OpenAI `n`)
  bool stream = false;
  bool include_usage = false;          // OpenAI stream_options.include_usage
  bool echo = false;                   // /v1/completions: the prompt text precedes the output
  bool load_only = false;              // ollama: empty prompt/messages only loads the model
  // Responses API: what the response object echoes back (the request's instructions and
  // text.format, {"type":"text"} when none was given).
  std::optional<std::string> instructions;
  nlohmann::json text_format = {{"type", "text"}};
};

// One embeddings request: each input is text or already token ids.
struct EmbeddingJob {
  Dialect dialect = Dialect::kOpenAI;
  std::string model;
  std::vector<std::string> texts;                // used when token_inputs is empty
  std::vector<std::vector<int32_t>> token_inputs;
  bool normalize = true;
  bool truncate = false;
  bool base64 = false;      // OpenAI encoding_format "base64"
  int32_t dimensions = 0;   // keep only the first N values (renormalised); 0: all
  bool legacy = false;      // ollama /api/embeddings (one `prompt`, key `embedding`)
};

}  // namespace hearth::api
