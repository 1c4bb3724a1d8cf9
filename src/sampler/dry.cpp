// DRY ("don't repeat yourself"): penalises the token that would continue a verbatim repeat of
// an earlier stretch of the history, growing exponentially with the repeat's length.
#include <algorithm>
#include <cmath>

#include "sampler/samplers.h"

namespace hearth::sampler {

void apply_dry(Candidates& c, std::span<const int32_t> history, float multiplier, float base, int32_t allowed_length,
               std::span<const int32_t> breakers, std::vector<DryHit>& hits) {
  const size_t n = history.size();
  if (multiplier <= 0.0f || n < 2) return;
  auto is_breaker = [&](int32_t t) { return std::find(breakers.begin(), breakers.end(), t) != breakers.end(); };
  // The suffix that is being repeated must not cross a breaker.
  size_t max_suffix = 0;
  while (max_suffix < n && !is_breaker(history[n - 1 - max_suffix])) ++max_suffix;
  if (max_suffix == 0) return;

  // For each earlier position j (whose follower history[j+1] is the token a repeat would
  // produce), measure how far back history[..j] matches the current suffix.
  // The longest match per token, kept in a small list since few tokens qualify.
  hits.clear();
  for (size_t j = 0; j + 1 < n; ++j) {
    size_t len = 0;
    while (len < max_suffix && len <= j && history[j - len] == history[n - 1 - len] && !is_breaker(history[j - len])) {
      ++len;
    }
    if (len == 0) continue;
    int32_t next = history[j + 1];
    if (is_breaker(next)) continue;
    auto it = std::find_if(hits.begin(), hits.end(), [&](const DryHit& h) { return h.token == next; });
    if (it == hits.end()) {
      hits.push_back({next, len});
    } else {
      it->length = std::max(it->length, len);
    }
  }
  bool changed = false;
  for (const auto& h : hits) {
    if (h.length < static_cast<size_t>(allowed_length)) continue;
    float penalty = multiplier * std::pow(base, static_cast<float>(h.length - static_cast<size_t>(allowed_length)));
    for (auto& cand : c) {
      if (cand.id == h.token) {
        cand.logit -= penalty;
        changed = true;
      }
    }
  }
  if (changed) {
    c.sorted = false;
    c.probs_valid = false;
  }
}

}  // namespace hearth::sampler
