// Unified KV (--kv-unified): the serving slots share one KV pool instead of splitting it into
// n_slots fixed shares, so every slot may grow to the whole context and the number of
// sequences that run at once is bounded by the tokens they really hold, not by the worst case.
// The price is that the pool can run short while sequences grow. This class keeps that safe:
//   - admission: a request starts only when the blocks it is expected to need (its prompt after
//     the cached prefix it adopts, plus n_predict or, without one, kUnboundedGrowth tokens) are
//     free or reclaimable beyond what the running requests are still expected to take;
//   - before each step: the blocks the planned tokens need are made available by dropping
//     idle slots' caches (least recently used first) and, if still short, by PREEMPTING the
//     most recently admitted running request: its blocks go back (its full blocks stay named
//     in the prefix cache while they survive), it waits, and it is rebuilt by feeding its
//     tokens again when memory allows (recompute, vLLM's way) - it is never dropped;
//   - waiting requests resume oldest first, before any new request is admitted.
// It runs on the engine thread and owns nothing but its references.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "engine/batch_planner.h"
#include "engine/inference_context.h"
#include "engine/serving_slot.h"

namespace hearth::engine {

// Room a request without n_predict is expected to grow into beyond what it holds; one that goes
// further may be preempted when the pool runs short.
constexpr int32_t kUnboundedGrowth = 256;

class UnifiedKv {
 public:
  UnifiedKv(InferenceContext& ctx, std::vector<ServingSlot>& slots, int32_t n_ctx_slot)
      : ctx_(ctx), slots_(slots), n_ctx_slot_(n_ctx_slot) {}

  // Blocks a new request is expected to need beyond the prefix it would adopt.
  int32_t blocks_for_request(const GenerationRequest& request) const;
  // Blocks the running requests are still expected to take (see ServingSlot::expected_tokens).
  int32_t outstanding() const;
  bool any_waiting() const;
  // Drops idle slots' sequences, least recently used first, until `blocks` are free or
  // evictable (their full blocks stay in the prefix cache while they survive). False when even
  // all of them are not enough.
  bool make_room(int32_t blocks);

  // Resumes preempted requests, oldest first, while memory allows; stops at the first that
  // does not fit (so they resume in order). Returns how many resumed.
  int32_t resume_waiting();
  // Makes the blocks `plan` will write available, preempting the newest running requests
  // (and removing their shares) while they are not. `publish` names a slot's full blocks in
  // the prefix cache before its sequence is cut. Returns the requests preempted.
  int32_t fit_plan(std::vector<SlotShare>& plan, const std::function<void(ServingSlot&)>& publish);

 private:
  // New blocks a sequence needs to grow by n tokens (a shared partial last block is copied).
  int32_t blocks_to_grow(int32_t seq, int32_t n_tokens) const;
  int32_t available_now() const;  // free + evictable
  int32_t running() const;        // busy slots not waiting for memory
  ServingSlot* newest_running();

  InferenceContext& ctx_;
  std::vector<ServingSlot>& slots_;
  const int32_t n_ctx_slot_;
};

}  // namespace hearth::engine
