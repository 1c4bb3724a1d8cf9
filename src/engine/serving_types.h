// Requests and results of the serving engine as native C++ types. The HTTP side (server/,
// api/) parses JSON, renders templates and tokenizes, then hands one of these requests to the
// engine thread; the engine answers with events on a ResultStream. No JSON crosses this line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sampler/sampler_params.h"
#include "util/result.h"

namespace hearth::engine {

// One text-generation request: a tokenized prompt and how to continue it.
struct CompletionRequest {
  std::vector<int32_t> prompt;        // token ids, BOS included when the caller wants one
  sampler::SamplerParams sampling;    // seed, temperature, penalties, logit_bias, n_probs ...
  int32_t n_predict = -1;             // tokens to generate; -1: until EOS or the context is full
  std::vector<std::string> stop;      // stop strings; the text ends before the first match
  bool ignore_eos = false;            // keep going past end-of-generation tokens
  std::string grammar;                // GBNF the output must match (root rule `root`); empty: free text
  bool logprobs = false;              // report each generated token's log-probability
  int32_t top_logprobs = 0;           // ... and the top-n alternatives (needs logprobs)
  bool truncate = false;              // prompt longer than the slot's context: keep the first
  int32_t n_keep = 0;                 //   n_keep tokens and the newest tail instead of failing
  bool cache_prompt = true;           // reuse the KV of the longest cached prompt prefix
  int32_t slot = -1;                  // a specific slot, or -1 to let the engine choose
  std::string tag;                    // free text for log lines (route, conversation id)
};

// Pooled embedding of one tokenized input.
struct EmbeddingRequest {
  std::vector<int32_t> tokens;
  bool normalize = true;  // L2-normalise the pooled vector
  bool truncate = false;  // input longer than the context: cut it instead of failing
};

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
// "length", "eog", "stop", "context", "cancelled".
const char* stop_reason_name(StopReason r);

struct Timings {
  int32_t prompt_n = 0;       // prompt tokens in the request
  int32_t cached_n = 0;       // of those, taken from the prefix cache (not evaluated)
  int32_t truncated_n = 0;    // prompt tokens dropped by truncation
  double queue_ms = 0.0;      // submit -> a slot took the request
  double prompt_ms = 0.0;     // slot taken -> first token sampled (prefill)
  int32_t predicted_n = 0;    // generated tokens
  double predicted_ms = 0.0;  // first token -> last token
  double ttft_ms = 0.0;       // submit -> first generated token sampled
};

// What a ResultStream delivers. A completion yields zero or more kText events, then exactly
// one kDone or kError. An embedding yields one kEmbedding or kError.
struct EngineEvent {
  enum class Kind { kText, kDone, kError, kEmbedding };
  Kind kind = Kind::kText;
  // kText (and kDone, for text released at the very end): new complete UTF-8 text, never
  // part of a stop string; plus the tokens sampled since the previous event.
  std::string text;
  std::vector<TokenOutput> tokens;
  // kDone
  StopReason stop_reason = StopReason::kNone;
  std::string stop_word;     // the stop string that matched (kStopString)
  Timings timings;
  int32_t slot = -1;
  uint64_t seed = 0;         // the sampler's seed (drawn at submission when the request left it unset)
  // kError
  Error error;
  // kEmbedding
  std::vector<float> embedding;
  int32_t n_tokens = 0;
};

}  // namespace hearth::engine
