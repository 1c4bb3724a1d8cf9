// A configured sampler chain for one sequence: applies logit bias, then the samplers in the
// configured order, then draws a token (greedy, seeded random, or mirostat), and reports the
// log-probability of the chosen token and of the top-n candidates. Buffers are allocated once
// at construction; sample() allocates nothing.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "sampler/candidates.h"
#include "sampler/sampler_params.h"
#include "sampler/samplers.h"
#include "util/result.h"

namespace hearth::sampler {

struct TokenLogprob {
  int32_t id;
  float logprob;
};

struct SampleResult {
  int32_t token = -1;
  float logprob = 0.0f;                // log-softmax of the raw logits at `token`
  std::span<const TokenLogprob> top;   // n_probs best by raw logit; valid until the next call
};

class SamplerChain {
 public:
  // history_capacity: the most tokens penalties and DRY may look back over (the context size).
  static Result<SamplerChain> create(const SamplerParams& params, size_t n_vocab, size_t history_capacity);

  // Samples from raw logits (n_vocab floats) and records the token in the history.
  SampleResult sample(const float* logits);
  // Adds a token to the history without sampling (prompt tokens, forced tokens).
  void accept(int32_t token);
  // Forgets the history and resets mirostat; the RNG keeps its stream.
  void reset();

  const SamplerParams& params() const { return params_; }
  uint64_t seed() const { return seed_; }
  std::span<const int32_t> history() const;

 private:
  SamplerChain(const SamplerParams& params, size_t n_vocab, size_t history_capacity);
  void apply_stage(SamplerKind kind);
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
  std::vector<DryHit> dry_hits_;
};

}  // namespace hearth::sampler
