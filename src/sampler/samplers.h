// The individual samplers. Each narrows or reshapes the candidate set in place; the chain
// (sampler_chain.h) runs them in the configured order. All work on the preallocated buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "sampler/candidates.h"

namespace hearth::sampler {

// Repeat penalty (divide positive / multiply negative logits), presence and frequency
// penalties for tokens seen in `recent`. `counts` is scratch of n_vocab zeros, left zeroed.
void apply_penalties(Candidates& c, std::span<const int32_t> recent, float repeat_penalty, float presence_penalty,
                     float frequency_penalty, std::vector<uint32_t>& counts);

// One token that would continue a repeat, with the repeat's length (DRY's working set).
struct DryHit {
  int32_t token;
  size_t length;
};

// DRY: a token that would extend a repetition of length L >= allowed_length of an earlier
// part of `history` loses multiplier * base^(L - allowed_length). `breakers` end a match.
// `hits` is caller-owned scratch (reused so sampling does not allocate once it has grown).
void apply_dry(Candidates& c, std::span<const int32_t> history, float multiplier, float base, int32_t allowed_length,
               std::span<const int32_t> breakers, std::vector<DryHit>& hits);

// Keeps only the candidates whose bit is set in `allowed` (bit t of word t / 64): a grammar's
// mask. Runs before every other sampler; may leave no candidate.
void apply_token_mask(Candidates& c, std::span<const uint64_t> allowed);

void apply_top_k(Candidates& c, int32_t k, size_t min_keep);
void apply_top_p(Candidates& c, float p, size_t min_keep);
void apply_min_p(Candidates& c, float p, size_t min_keep);
void apply_typical_p(Candidates& c, float p, size_t min_keep);
void apply_top_n_sigma(Candidates& c, float n);
// XTC: with probability `probability`, removes every token with p >= threshold except the
// least likely of them (when at least two qualify).
void apply_xtc(Candidates& c, float probability, float threshold, size_t min_keep, std::mt19937_64& rng);
void apply_temperature(Candidates& c, float temperature);
// Dynamic temperature from the normalised entropy of the candidates.
void apply_dynamic_temperature(Candidates& c, float temperature, float range, float exponent);

// Draws one candidate index from the probabilities (softmax computed if needed).
size_t sample_index(Candidates& c, std::mt19937_64& rng);
// Index of the highest logit (ties: lowest id).
size_t argmax_index(const Candidates& c);

// Mirostat v1 (n_vocab for the Zipf estimate, m = 100) and v2; both update mu.
int32_t sample_mirostat_v1(Candidates& c, float tau, float eta, size_t n_vocab, float& mu, std::mt19937_64& rng);
int32_t sample_mirostat_v2(Candidates& c, float tau, float eta, float& mu, std::mt19937_64& rng);

}  // namespace hearth::sampler
