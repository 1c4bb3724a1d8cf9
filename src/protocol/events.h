// What an inference engine answers: per choice, a stream of events (text with its tokens and
// log-probabilities, then exactly one final event with stop reason and timings, or an error),
// and for an embedding input one vector. Plain data; protocol/codec.h serialises it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/result.h"

namespace hearth::protocol {

struct TokenLogprob {
  int32_t token = 0;
  std::string piece;  // the token's bytes (may be part of a UTF-8 character)
  float logprob = 0.0f;
};

// One generated token, with log-probabilities when the request asked for them.
struct TokenOutput {
  int32_t token = 0;
  std::string piece;
  float logprob = 0.0f;
  std::vector<TokenLogprob> top;  // best first, top_logprobs entries
};

enum class StopReason {
  kNone,        // still running
  kLength,      // n_predict reached
  kEog,         // the model produced an end-of-generation token
  kStopString,  // a stop string matched
  kContext,     // the slot's context is full
  kCancelled,   // the consumer cancelled (client went away)
};
// "length", "eog", "stop", "context", "cancelled" ("none" for kNone).
const char* stop_reason_name(StopReason r);
// The inverse of stop_reason_name; false for an unknown name.
bool stop_reason_from_name(const std::string& name, StopReason& out);

struct Timings {
  int32_t prompt_n = 0;       // prompt tokens in the request
  int32_t cached_n = 0;       // of those, taken from the prefix cache (not evaluated)
  int32_t truncated_n = 0;    // prompt tokens dropped by truncation
  double queue_ms = 0.0;      // submit -> a slot took the request
  double prompt_ms = 0.0;     // slot taken -> first token sampled (prefill)
  int32_t predicted_n = 0;    // generated tokens
  int32_t reasoning_n = 0;    // of those, inside the reasoning (<think>...</think>, analysis)
  double predicted_ms = 0.0;  // first token -> last token
  double ttft_ms = 0.0;       // submit -> first generated token sampled
};

// A tool call the model made, complete (the server parses it out of the text per the template
// family; see PromptInfo::output).
struct ToolCallOutput {
  int32_t index = 0;      // 0, 1, ... within the choice
  std::string id;         // "call_..." (the model's own id when it wrote one)
  std::string name;
  std::string arguments;  // a JSON object, compact
};

// What an event stream delivers. A completion yields zero or more kText events, then exactly
// one kDone or kError. An embedding yields one kEmbedding or kError.
struct Event {
  enum class Kind { kText, kDone, kError, kEmbedding };
  Kind kind = Kind::kText;
  // kText (and kDone, for text released at the very end): new complete UTF-8 text, never
  // part of a stop string; plus the tokens sampled since the previous event.
  std::string text;
  std::vector<TokenOutput> tokens;
  // kText/kDone, once the output is parsed (chat prompts with tools or reasoning): `text` is
  // then the answer only, `reasoning` the model's thinking and `tool_calls` the finished calls.
  std::string reasoning;
  std::vector<ToolCallOutput> tool_calls;
  // kDone
  StopReason stop_reason = StopReason::kNone;
  std::string stop_word;     // the stop string that matched (kStopString)
  Timings timings;
  int32_t slot = -1;
  int32_t eog_token = -1;    // kEog: the end-of-generation token that ended it (not in `tokens`)
  uint64_t seed = 0;         // the sampler's seed (drawn at submission when the request left it unset)
  // kError
  Error error;
  // kEmbedding
  std::vector<float> embedding;
  int32_t n_tokens = 0;
};

// A prompt as the engine side prepared it: what the responses report about it.
struct PromptInfo {
  int32_t n_tokens = 0;
  std::vector<int32_t> ids;  // ollama's `context`
  std::string text;          // the rendered prompt (OpenAI's echo)
  int32_t n_shared = 0;      // leading ids a chat's system messages render to (0: none)
  // How to split the generated text (chat prompts): the template family's tool-call syntax
  // ("hermes", "llama3", "mistral", "deepseek_r1"; "plain" for none), whether tools were
  // offered, whether <think> is split off, and whether the prompt left a <think> open.
  struct OutputFormat {
    std::string family = "plain";
    bool tool_calls = false;
    bool reasoning = false;
    bool reasoning_open = false;
    bool framed = false;    // the family frames every reply (Functionary v3.2's "all\n")
    std::string prefilled;  // the reply's start the prompt already holds (an assistant prefill)
    bool active() const { return tool_calls || reasoning || framed; }
  };
  OutputFormat output;
};

}  // namespace hearth::protocol
