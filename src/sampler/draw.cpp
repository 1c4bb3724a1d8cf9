// Drawing a token: greedy argmax, a seeded draw from the probabilities, and mirostat v1/v2,
// which steer the draw towards a target surprise.
#include <algorithm>
#include <cmath>
#include <random>

#include "sampler/samplers.h"

namespace hearth::sampler {

size_t argmax_index(const Candidates& c) {
  size_t best = 0;
  for (size_t i = 1; i < c.size; ++i) {
    const auto& a = c.items[i];
    const auto& b = c.items[best];
    if (a.logit > b.logit || (a.logit == b.logit && a.id < b.id)) best = i;
  }
  return best;
}

size_t sample_index(Candidates& c, std::mt19937_64& rng) {
  if (!c.probs_valid) c.softmax();
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  double r = uniform(rng);
  double cum = 0.0;
  for (size_t i = 0; i < c.size; ++i) {
    cum += c.items[i].p;
    if (r < cum) return i;
  }
  // Rounding left r above the total: take the last token with non-zero probability.
  for (size_t i = c.size; i-- > 0;) {
    if (c.items[i].p > 0) return i;
  }
  return 0;
}

int32_t sample_mirostat_v1(Candidates& c, float tau, float eta, size_t n_vocab, float& mu, std::mt19937_64& rng) {
  constexpr size_t kM = 100;
  c.sort_desc();
  c.softmax();
  // Estimate the Zipf exponent s from the top m probabilities.
  double sum_ti_bi = 0.0, sum_ti_sq = 0.0;
  const size_t m = std::min(kM, c.size);
  for (size_t i = 0; i + 1 < m; ++i) {
    if (c.items[i + 1].p <= 0) break;
    double t_i = std::log(static_cast<double>(i + 2) / static_cast<double>(i + 1));
    double b_i = std::log(static_cast<double>(c.items[i].p) / c.items[i + 1].p);
    sum_ti_bi += t_i * b_i;
    sum_ti_sq += t_i * t_i;
  }
  double s_hat = sum_ti_sq > 0 ? sum_ti_bi / sum_ti_sq : 1.0;
  double eps_hat = s_hat - 1.0;
  double k = 1.0;
  if (std::fabs(eps_hat) > 1e-9) {
    k = std::pow((eps_hat * std::pow(2.0, mu)) / (1.0 - std::pow(static_cast<double>(n_vocab), -eps_hat)), 1.0 / s_hat);
  }
  size_t keep = static_cast<size_t>(std::clamp(k, 1.0, static_cast<double>(c.size)));
  c.size = keep;
  c.softmax();
  size_t idx = sample_index(c, rng);
  double surprise = -std::log2(static_cast<double>(c.items[idx].p));
  mu -= eta * static_cast<float>(surprise - tau);
  return c.items[idx].id;
}

int32_t sample_mirostat_v2(Candidates& c, float tau, float eta, float& mu, std::mt19937_64& rng) {
  c.sort_desc();
  c.softmax();
  size_t keep = 0;
  while (keep < c.size && -std::log2(static_cast<double>(c.items[keep].p)) <= mu) ++keep;
  c.size = std::max<size_t>(keep, 1);
  c.softmax();
  size_t idx = sample_index(c, rng);
  double surprise = -std::log2(static_cast<double>(c.items[idx].p));
  mu -= eta * static_cast<float>(surprise - tau);
  return c.items[idx].id;
}

}  // namespace hearth::sampler
