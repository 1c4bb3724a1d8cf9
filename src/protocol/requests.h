// The requests the HTTP side sends to an inference engine, as the dialects asked for them but
// in one native shape: prompts still as chat messages, text or token ids (the engine side
// renders the chat template and tokenizes), sampling options, output constraints, limits.
// Everything that needs the model — token ids in range, prompt length against the context,
// grammar compilation, "an embedding model cannot generate" — is checked on the engine side,
// once. Plain data; protocol/codec.h serialises it for a process boundary.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/sampling_options.h"

namespace hearth::protocol {

// Where a prompt comes from.
struct PromptSource {
  enum class Kind {
    kChat,    // `chat` is an OpenAI-style body for the chat template (messages, tools, ...)
    kText,    // `text` is the prompt as is
    kTokens,  // `tokens` are the prompt ids as is (no BOS added)
    kGoTemplate,  // `text` is an ollama (Go text/template) prompt template over `template_fields`,
                  //   or over `chat`'s messages turn by turn when `chat` has "messages"
  };
  Kind kind = Kind::kText;
  nlohmann::ordered_json chat;
  std::string text;
  std::vector<int32_t> tokens;
  std::map<std::string, std::string> template_fields;  // kGoTemplate: "System", "Prompt", ...
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

// A constraint on the generated text. The engine side turns a schema into a grammar and
// compiles it (cached by its text); errors name `field`, the request field it came from.
struct OutputConstraint {
  enum class Kind {
    kNone,
    kGbnf,        // `text` is a GBNF grammar (root rule `root`)
    kJsonObject,  // any JSON object
    kJsonSchema,  // `schema` is a JSON Schema
  };
  Kind kind = Kind::kNone;
  std::string field;  // "format", "response_format.json_schema.schema", "grammar", ...
  std::string text;
  nlohmann::ordered_json schema;
};

// One text-generation request: one or more prompts, each answered `n_choices` times.
struct CompletionRequest {
  std::string model;                    // the name the request used
  std::vector<PromptSource> prompts;    // one, or several for /v1/completions with a list
  int32_t n_choices = 1;                // per prompt (OpenAI `n`); choice j > 0 of a seeded
                                        //   request is sampled with seed + j
  SamplingOptions sampling;             // seed, temperature, penalties, logit_bias, n_probs ...
  std::vector<std::string> dry_sequence_breakers;  // empty: llama-server's defaults
  int32_t n_predict = -1;               // tokens to generate; -1: until EOS or the context is full
  std::vector<std::string> stop;        // stop strings; the text ends before the first match
  bool ignore_eos = false;              // keep going past end-of-generation tokens
  OutputConstraint constraint;
  bool logprobs = false;                // report each generated token's log-probability
  int32_t top_logprobs = 0;             // ... and the top-n alternatives (implies logprobs)
  bool truncate = false;                // prompt longer than the context: keep the first
  int32_t n_keep = 0;                   //   n_keep tokens and the newest tail instead of failing
  bool cache_prompt = true;             // reuse the KV of the longest cached prompt prefix
  int32_t slot = -1;                    // a specific slot, or -1 to let the engine choose
  int32_t num_ctx = 0;                  // context this request asks for (0: the server's)
  std::optional<int64_t> keep_alive_ms; // how long the model stays loaded afterwards (<0: forever)
  std::string tag;                      // free text for log lines (route, conversation id)
};

// One embeddings request: each input is text or already token ids.
struct EmbeddingRequest {
  std::string model;
  std::vector<std::string> texts;                  // used when token_inputs is empty
  std::vector<std::vector<int32_t>> token_inputs;
  bool normalize = true;  // L2-normalise each pooled vector
  bool truncate = false;  // an input longer than the context is cut instead of failing
};

}  // namespace hearth::protocol
