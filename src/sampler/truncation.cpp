// The samplers that cut the candidate list: top-k, top-p (nucleus), min-p, locally typical
// sampling and top-n-sigma.
#include <algorithm>
#include <cmath>

#include "sampler/samplers.h"

namespace hearth::sampler {

void apply_top_k(Candidates& c, int32_t k, size_t min_keep) {
  if (k <= 0) return;
  size_t keep = std::max(static_cast<size_t>(k), min_keep);
  c.keep_top(std::min(keep, c.size));
  c.probs_valid = false;
}

void apply_top_p(Candidates& c, float p, size_t min_keep) {
  if (p >= 1.0f || c.size == 0) return;
  c.sort_desc();
  c.softmax();
  double cum = 0.0;
  size_t keep = c.size;
  for (size_t i = 0; i < c.size; ++i) {
    cum += c.items[i].p;
    if (cum >= p && i + 1 >= min_keep) {
      keep = i + 1;
      break;
    }
  }
  c.size = keep;
  c.probs_valid = false;
}

void apply_min_p(Candidates& c, float p, size_t min_keep) {
  if (p <= 0.0f || c.size == 0) return;
  c.sort_desc();
  // p_i >= p * p_max  <=>  logit_i >= logit_max + log(p)
  const float threshold = c.items[0].logit + std::log(p);
  size_t keep = 0;
  while (keep < c.size && c.items[keep].logit >= threshold) ++keep;
  c.size = std::max(keep, std::min(min_keep, c.size));
  c.probs_valid = false;
}

void apply_typical_p(Candidates& c, float p, size_t min_keep) {
  if (p >= 1.0f || c.size == 0) return;
  c.softmax();
  double entropy = 0.0;
  for (const auto& cand : c) {
    if (cand.p > 0) entropy -= cand.p * std::log(cand.p);
  }
  // Order by how far each token's surprise is from the entropy; keep the closest until p.
  auto distance = [&](const TokenCandidate& t) {
    return std::fabs((t.p > 0 ? -std::log(t.p) : INFINITY) - entropy);
  };
  std::sort(c.begin(), c.end(), [&](const TokenCandidate& a, const TokenCandidate& b) {
    double da = distance(a), db = distance(b);
    return da < db || (da == db && a.id < b.id);
  });
  double cum = 0.0;
  size_t keep = c.size;
  for (size_t i = 0; i < c.size; ++i) {
    cum += c.items[i].p;
    if (cum >= p && i + 1 >= min_keep) {
      keep = i + 1;
      break;
    }
  }
  c.size = keep;
  c.sorted = false;
  c.probs_valid = false;
}

void apply_top_n_sigma(Candidates& c, float n) {
  if (n <= 0.0f || c.size == 0) return;
  double sum = 0.0, max_logit = -INFINITY;
  size_t finite = 0;
  for (const auto& cand : c) {
    if (std::isinf(cand.logit)) continue;
    sum += cand.logit;
    max_logit = std::max<double>(max_logit, cand.logit);
    ++finite;
  }
  if (finite == 0) return;
  double mean = sum / static_cast<double>(finite), var = 0.0;
  for (const auto& cand : c) {
    if (!std::isinf(cand.logit)) var += (cand.logit - mean) * (cand.logit - mean);
  }
  double sd = std::sqrt(var / static_cast<double>(finite));
  const double threshold = max_logit - n * sd;
  size_t out = 0;
  for (size_t i = 0; i < c.size; ++i) {
    if (c.items[i].logit >= threshold) c.items[out++] = c.items[i];
  }
  c.size = out;
  c.probs_valid = false;
}

}  // namespace hearth::sampler
