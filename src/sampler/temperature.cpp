// Temperature scaling, fixed or dynamic (scaled by how uncertain the distribution is).
#include <algorithm>
#include <cmath>

#include "sampler/samplers.h"

namespace hearth::sampler {

void apply_temperature(Candidates& c, float temperature) {
  if (temperature == 1.0f) return;
  if (temperature <= 0.0f) {
    // Zero temperature: only the best token survives.
    size_t best = argmax_index(c);
    c.items[0] = c.items[best];
    c.size = std::min<size_t>(c.size, 1);
    c.sorted = true;
    c.probs_valid = false;
    return;
  }
  const float inv = 1.0f / temperature;
  for (auto& cand : c) cand.logit *= inv;
  c.probs_valid = false;
}

void apply_dynamic_temperature(Candidates& c, float temperature, float range, float exponent) {
  if (range <= 0.0f) {
    apply_temperature(c, temperature);
    return;
  }
  if (c.size <= 1) return;
  const float min_temp = std::max(0.0f, temperature - range);
  const float max_temp = temperature + range;
  c.softmax();
  double entropy = 0.0;
  for (const auto& cand : c) {
    if (cand.p > 0) entropy -= cand.p * std::log(cand.p);
  }
  const double max_entropy = std::log(static_cast<double>(c.size));
  const double normalized = max_entropy > 0 ? entropy / max_entropy : 0.0;
  const float t = min_temp + (max_temp - min_temp) * static_cast<float>(std::pow(normalized, exponent));
  apply_temperature(c, t);
}

}  // namespace hearth::sampler
