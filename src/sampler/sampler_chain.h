// A configured sampler chain for one sequence: applies logit bias, then the grammar mask (when
// the chain samples under a grammar), then the samplers in the configured order, then draws a
// token (greedy, seeded random, or mirostat), and reports the log-probability of the chosen
// token and of the top-n candidates. Buffers are allocated once at construction; sample()
// allocates nothing, except that a grammar's matcher grows its caches when generation reaches
// parse states it has not seen before (see grammar/grammar_matcher.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "sampler/candidates.h"
#include "sampler/grammar/compiled_grammar.h"
#include "sampler/grammar/grammar_matcher.h"
#include "sampler/grammar/token_trie.h"
#include "sampler/sampler_params.h"
#include "sampler/samplers.h"
#include "util/result.h"

namespace hearth::sampler {

struct TokenLogprob {
  int32_t id;
  float logprob;
};

struct SampleResult {
  int32_t token = -1;                  // -1: the grammar allows no token of the vocabulary here
  float logprob = 0.0f;                // log-softmax of the raw logits at `token`
  std::span<const TokenLogprob> top;   // n_probs best by raw logit; valid until the next call
};

// Text that switches a lazy grammar on (see GrammarConstraint::triggers).
struct GrammarTrigger {
  std::string text;       // e.g. "<tool_call>"; the grammar's match starts with this text
  bool at_start = false;  // only when it is the first text of the output (after whitespace)
};

// Sampling under a grammar: the compiled grammar and the vocabulary's bytes (built once per
// tokenizer). Both set, or neither.
//
// With triggers the grammar is lazy: the output is free text until it contains one of the
// trigger texts; the grammar then matches from the trigger on (the trigger's own text is its
// first match) and constrains every later token. A sampled token that would complete a trigger
// but continue it in a way the grammar rejects is redrawn, so once a trigger appears the text
// from it on always matches the grammar (tool_choice "auto": free text until the family's
// tool-call opener, then a call whose arguments match the schema).
struct GrammarConstraint {
  std::shared_ptr<const CompiledGrammar> grammar;
  std::shared_ptr<const TokenTrie> vocab;
  std::vector<GrammarTrigger> triggers;  // empty: the grammar constrains from the first token
};

class SamplerChain {
 public:
  // history_capacity: the most tokens penalties and DRY may look back over (the context size).
  // With a grammar, only tokens it allows are sampled (end-of-generation tokens only where the
  // grammar may end), and each sampled token advances it.
  static Result<SamplerChain> create(const SamplerParams& params, size_t n_vocab, size_t history_capacity,
                                     GrammarConstraint grammar = {});

  // Samples from raw logits (n_vocab floats), records the token in the history and advances
  // the grammar. Under a grammar that allows no token here, returns token -1 and changes nothing.
  SampleResult sample(const float* logits);
  // Adds a token to the history without sampling (prompt tokens, forced tokens).
  void accept(int32_t token);
  // A token the caller chose in place of sampling one (the engine closing reasoning at its
  // thinking budget): reported like a sampled token (its log-probability under `logits`),
  // recorded in the history, and passed to the grammar, which ignores a token it does not allow.
  SampleResult force(int32_t token, const float* logits);
  // Forgets the history, resets mirostat and the grammar; the RNG keeps its stream.
  void reset();

  // Lazy grammar: while paused, the output is not watched for triggers (the model is reasoning,
  // and a call opener it writes there is not a call); watching resumes with fresh text.
  void set_triggers_paused(bool paused);

  bool has_grammar() const { return grammar_.has_value(); }
  // Under a lazy grammar: a trigger appeared and the grammar constrains the output now (always
  // true for a grammar without triggers).
  bool grammar_active() const { return grammar_ && grammar_active_; }
  // Under a grammar: the text so far is a complete match.
  bool grammar_complete() const { return grammar_active() && grammar_->is_complete(); }
  // Under a grammar: the text so far is a complete match and nothing may follow it, so
  // generation is over (the caller need not wait for an end-of-generation token).
  bool grammar_finished() const { return grammar_active() && grammar_->is_complete() && !grammar_->can_continue(); }

  const SamplerParams& params() const { return params_; }
  uint64_t seed() const { return seed_; }
  std::span<const int32_t> history() const;

 private:
  SamplerChain(const SamplerParams& params, size_t n_vocab, size_t history_capacity, GrammarConstraint grammar);
  void apply_stage(SamplerKind kind);
  // Loads the logits (bias, and the mask of an active grammar applied) and draws one token;
  // `banned` tokens are left out. -1: nothing is allowed.
  int32_t draw(const float* logits, std::span<const int32_t> banned);
  // Lazy grammar, not yet active: whether `token` may follow the text so far (it does not
  // complete a trigger, or the grammar accepts the trigger and what follows it in the token);
  // sets trigger_match_ to the text the grammar must match when it does complete one.
  bool trigger_allows(int32_t token);
  // Lazy grammar: the chosen token's bytes join the watched text, or switch the grammar on.
  void watch_trigger(int32_t token);
  void compute_logprobs(const float* logits, int32_t chosen, SampleResult& out);

  SamplerParams params_;
  size_t n_vocab_;
  size_t history_capacity_;
  uint64_t seed_;
  std::mt19937_64 rng_;
  Candidates candidates_;
  std::vector<uint32_t> counts_;
  std::vector<int32_t> history_;   // ring stored linearly; compacted when it reaches 2x capacity
  size_t history_begin_ = 0;
  float mirostat_mu_;
  std::vector<TokenLogprob> top_;  // n_probs
  std::vector<TokenLogprob> logprob_scratch_;
  std::vector<float> prob_scratch_;  // n_vocab: the softmax behind log Z
  std::vector<DryHit> dry_hits_;
  std::optional<GrammarMatcher> grammar_;
  std::shared_ptr<const TokenTrie> grammar_vocab_;
  std::vector<uint64_t> allowed_;  // the grammar's token mask, n_vocab bits
  std::vector<GrammarTrigger> triggers_;
  bool grammar_active_ = true;     // false: a lazy grammar waiting for a trigger
  bool triggers_paused_ = false;   // see set_triggers_paused()
  std::string watched_;            // the last bytes of the output, where a trigger may begin
  bool only_space_before_ = true;  // every byte before watched_ is whitespace
  std::string trigger_match_;      // trigger_allows(): the text from the trigger on
  size_t max_trigger_ = 0;         // the longest trigger, in bytes
  std::vector<int32_t> banned_;    // tokens redrawn this step
};

}  // namespace hearth::sampler
