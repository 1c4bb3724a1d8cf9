// The grammar mask as a sampler: drops the candidates a grammar does not allow, so every later
// sampler (penalties, top-k, top-p, temperature, the draw) works on allowed tokens only.
#include "sampler/samplers.h"

namespace hearth::sampler {

void apply_token_mask(Candidates& c, std::span<const uint64_t> allowed) {
  size_t kept = 0;
  for (size_t i = 0; i < c.size; ++i) {
    const auto id = static_cast<size_t>(c.items[i].id);
    if ((allowed[id >> 6] >> (id & 63)) & 1u) c.items[kept++] = c.items[i];
  }
  c.size = kept;
  c.probs_valid = false;
}

}  // namespace hearth::sampler
