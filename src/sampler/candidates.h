// The working set a sampler chain narrows down: (token, logit, probability) triples held in a
// buffer allocated once per chain, so sampling a token allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hearth::sampler {

struct TokenCandidate {
  int32_t id;
  float logit;
  float p;
};

struct Candidates {
  std::vector<TokenCandidate> items;  // capacity n_vocab, reused for every token
  size_t size = 0;                    // live prefix of items
  bool sorted = false;                // live prefix sorted by logit, descending
  bool probs_valid = false;           // p holds softmax of the live logits

  TokenCandidate* begin() { return items.data(); }
  TokenCandidate* end() { return items.data() + size; }
  const TokenCandidate* begin() const { return items.data(); }
  const TokenCandidate* end() const { return items.data() + size; }

  // Fills from raw logits: every token, unsorted.
  void load(const float* logits, size_t n_vocab);
  // Sorts the live prefix by logit (descending, ties: lower id first).
  void sort_desc();
  // Sorts only the first k (k <= size) and drops the rest.
  void keep_top(size_t k);
  // Recomputes p as the softmax of the live logits (sorting first if needed is not required).
  void softmax();
};

}  // namespace hearth::sampler
