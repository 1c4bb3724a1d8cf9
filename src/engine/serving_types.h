// Tokenized requests of the serving engine. Prompt preparation (engine/prompt_preparation.h)
// turns a protocol::GenerationRequest into one GenerationRequest per choice; the serving
// engine checks each against the model (token ids, length, sampler options, grammar) once, at
// submission, and answers with protocol events on a ResultStream.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/events.h"
#include "sampler/sampler_chain.h"
#include "sampler/sampler_params.h"
#include "util/result.h"

namespace hearth::engine {

// One text-generation request: a tokenized prompt and how to continue it.
struct GenerationRequest {
  std::vector<int32_t> prompt;        // token ids, BOS included when the caller wants one
  sampler::SamplerParams sampling;    // seed, temperature, penalties, logit_bias, n_probs ...
  int32_t n_predict = -1;             // tokens to generate; -1: until EOS or the context is full
  std::vector<std::string> stop;      // stop strings; the text ends before the first match
  bool ignore_eos = false;            // keep going past end-of-generation tokens
  std::string grammar;                // GBNF the output must match (root rule `root`); empty: free text
  std::string grammar_field;          // the request field the grammar came from, named in errors
  std::vector<sampler::GrammarTrigger> grammar_triggers;  // non-empty: the grammar is lazy, off
                                      //   until one of these texts is generated (sampler_chain.h)
  int32_t thinking_budget = -1;       // reasoning tokens before the engine closes the reasoning
                                      //   by writing thinking_close; -1: no budget
  bool thinking_open = false;         // the prompt ends inside the reasoning
  std::string thinking_start, thinking_end;  // the family's markers, e.g. <think> and </think>
  std::vector<int32_t> thinking_close;       // tokens written at the budget (e.g. "\n</think>\n\n")
  bool logprobs = false;              // report each generated token's log-probability
  int32_t top_logprobs = 0;           // ... and the top-n alternatives (implies logprobs)
  bool truncate = false;              // prompt longer than the slot's context: keep the first
  int32_t n_keep = 0;                 //   n_keep tokens and the newest tail instead of failing
  bool context_shift = false;         // the sequence filled its context while generating: keep
                                      //   the first n_keep tokens (+ BOS; -1: the prompt), drop
                                      //   half of the rest and go on (llama-server's context
                                      //   shift) instead of ending with the context reason
  bool cache_prompt = true;           // reuse the KV of the longest cached prompt prefix
  int32_t shared_prefix = 0;          // leading prompt tokens later requests likely share (a chat's
                                      //   system messages): with sliding-window layers the engine
                                      //   publishes the prefix cache there before the window moves on
  int32_t slot = -1;                  // a specific slot, or -1 to let the engine choose
  int32_t n_ctx = 0;                  // the request's own context (ollama's num_ctx): a limit on
                                      //   its sequence within the slot's, never a reallocation;
                                      //   0 or more than the slot's: the slot's
  std::string tag;                    // free text for log lines (route, conversation id)
  bool print_markers = false;         // print control tokens that are a template family's markers
                                      //   (harmony's <|channel|>, [TOOL_CALLS], ...) as their text,
                                      //   for the chat output parser; always so under a grammar
};

// Pooled embedding of one tokenized input.
struct EmbeddingInput {
  std::vector<int32_t> tokens;
  bool normalize = true;  // L2-normalise the pooled vector
  bool truncate = false;  // input longer than the context: cut it instead of failing
};

// The answer types are the protocol's: events cross to the HTTP side unchanged.
using TokenLogprob = protocol::TokenLogprob;
using TokenOutput = protocol::TokenOutput;
using StopReason = protocol::StopReason;
using Timings = protocol::Timings;
using EngineEvent = protocol::Event;
using protocol::stop_reason_name;

}  // namespace hearth::engine
