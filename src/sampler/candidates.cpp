// Sorting, truncation and softmax over the candidate buffer (see candidates.h).
#include "sampler/candidates.h"

#include <algorithm>
#include <cmath>

namespace hearth::sampler {
namespace {
bool by_logit_desc(const TokenCandidate& a, const TokenCandidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}
}  // namespace

void Candidates::load(const float* logits, size_t n_vocab) {
  if (items.size() < n_vocab) items.resize(n_vocab);
  for (size_t i = 0; i < n_vocab; ++i) items[i] = {static_cast<int32_t>(i), logits[i], 0.0f};
  size = n_vocab;
  sorted = false;
  probs_valid = false;
}

void Candidates::sort_desc() {
  if (sorted) return;
  std::sort(begin(), end(), by_logit_desc);
  sorted = true;
}

void Candidates::keep_top(size_t k) {
  if (k >= size) {
    sort_desc();
    return;
  }
  if (!sorted) std::partial_sort(begin(), begin() + k, end(), by_logit_desc);
  size = k;
  sorted = true;
  probs_valid = false;
}

void Candidates::softmax() {
  if (size == 0) return;
  float max_logit = -INFINITY;
  for (const auto& c : *this) max_logit = std::max(max_logit, c.logit);
  double sum = 0.0;
  for (auto& c : *this) {
    c.p = (c.logit == -INFINITY) ? 0.0f : std::exp(c.logit - max_logit);
    sum += c.p;
  }
  float inv = sum > 0 ? static_cast<float>(1.0 / sum) : 0.0f;
  for (auto& c : *this) c.p *= inv;
  probs_valid = true;
}

}  // namespace hearth::sampler
