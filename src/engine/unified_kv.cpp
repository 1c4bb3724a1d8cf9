// Admission, preemption and resumption over a KV pool the slots share (see unified_kv.h).
#include "engine/unified_kv.h"

#include <algorithm>

#include "util/log.h"

namespace hearth::engine {

int32_t UnifiedKv::blocks_to_grow(int32_t seq, int32_t n_tokens) const {
  if (n_tokens <= 0) return 0;
  const kv::KvCache& kv = ctx_.kv();
  const int32_t bt = kv.block_tokens();
  const int32_t len = kv.seq_length(seq);
  const auto table = kv.block_table(seq);
  int32_t extra = (len + n_tokens + bt - 1) / bt - static_cast<int32_t>(table.size());
  // Writing into a partly filled block another sequence (or the prefix cache) also holds copies it.
  if (len % bt != 0 && !table.empty() && kv.pool().kv_block_refcount(table.back()) > 1) ++extra;
  return std::max(0, extra);
}

int32_t UnifiedKv::blocks_for_request(const GenerationRequest& request) const {
  const kv::KvCache& kv = ctx_.kv();
  const int32_t bt = kv.block_tokens();
  const auto n = static_cast<int32_t>(request.prompt.size());
  const int32_t cached = std::min(kv.cached_prefix(request.prompt), std::max(0, n - 1)) / bt;
  const int64_t more = request.n_predict >= 0 ? request.n_predict : kUnboundedGrowth;
  const auto expected = static_cast<int32_t>(std::min<int64_t>(n + std::max<int64_t>(more, 1), sequence_context(request, n_ctx_slot_)));
  return std::max(1, (expected + bt - 1) / bt - cached);
}

int32_t UnifiedKv::outstanding() const {
  const int32_t bt = ctx_.kv().block_tokens();
  int32_t n = 0;
  for (const ServingSlot& s : slots_) {
    if (!s.busy() || s.waiting_for_kv()) continue;
    const int32_t want = (s.expected_tokens(kUnboundedGrowth, n_ctx_slot_) + bt - 1) / bt;
    n += std::max(0, want - static_cast<int32_t>(ctx_.kv().block_table(s.seq()).size()));
  }
  return n;
}

int32_t UnifiedKv::running() const {
  int32_t n = 0;
  for (const ServingSlot& s : slots_) n += s.busy() && !s.waiting_for_kv() ? 1 : 0;
  return n;
}

bool UnifiedKv::any_waiting() const {
  return std::any_of(slots_.begin(), slots_.end(), [](const ServingSlot& s) { return s.busy() && s.waiting_for_kv(); });
}

int32_t UnifiedKv::available_now() const {
  return ctx_.kv().pool().n_free() + ctx_.kv().stats().blocks_evictable;
}

bool UnifiedKv::make_room(int32_t blocks) {
  while (available_now() < blocks) {
    if (!drop_least_recent_idle_sequence(slots_, ctx_)) return false;
  }
  return true;
}

ServingSlot* UnifiedKv::newest_running() {
  ServingSlot* newest = nullptr;
  for (ServingSlot& s : slots_) {
    if (!s.busy() || s.waiting_for_kv()) continue;
    if (newest == nullptr || s.arrival() > newest->arrival()) newest = &s;
  }
  return newest;
}

int32_t UnifiedKv::resume_waiting() {
  std::vector<ServingSlot*> waiting;
  for (ServingSlot& s : slots_) {
    if (s.busy() && s.waiting_for_kv()) waiting.push_back(&s);
  }
  std::sort(waiting.begin(), waiting.end(), [](const ServingSlot* a, const ServingSlot* b) { return a->arrival() < b->arrival(); });
  int32_t resumed = 0;
  for (ServingSlot* s : waiting) {
    const std::vector<int32_t>& feed = s->feed();
    const auto n = static_cast<int32_t>(feed.size());
    const int32_t adopted = ctx_.kv().seq_adopt_prefix(s->seq(), feed, n - 1);
    const int32_t bt = ctx_.kv().block_tokens();
    const int32_t want = (std::max(n, s->expected_tokens(kUnboundedGrowth, n_ctx_slot_)) + bt - 1) / bt;
    if (!make_room(want - static_cast<int32_t>(ctx_.kv().block_table(s->seq()).size()) + outstanding())) {
      (void)ctx_.seq_truncate(s->seq(), 0);
      break;
    }
    s->resume(adopted);
    log_info("request resumed", {{"slot", s->id()}, {"task", static_cast<long long>(s->request_id())}, {"feed_n", n}, {"cached_n", adopted}});
    ++resumed;
  }
  return resumed;
}

int32_t UnifiedKv::fit_plan(std::vector<SlotShare>& plan, const std::function<void(ServingSlot&)>& publish) {
  int32_t preempted = 0;
  for (;;) {
    int32_t need = 0;
    for (const SlotShare& share : plan) {
      need += blocks_to_grow(slots_[static_cast<size_t>(share.slot)].seq(), share.n_decode + share.n_prompt);
    }
    if (make_room(need)) return preempted;
    ServingSlot* victim = newest_running();
    if (victim == nullptr || running() <= 1) return preempted;  // one request alone always fits: decode reports it if not
    if (victim->cache_prompt()) publish(*victim);
    log_info("request preempted: KV pool full", {{"slot", victim->id()},
                                                 {"task", static_cast<long long>(victim->request_id())},
                                                 {"tokens", ctx_.seq_length(victim->seq())}});
    (void)ctx_.seq_truncate(victim->seq(), 0);
    victim->preempt();
    const int32_t id = victim->id();
    plan.erase(std::remove_if(plan.begin(), plan.end(), [id](const SlotShare& s) { return s.slot == id; }), plan.end());
    ++preempted;
  }
}

}  // namespace hearth::engine
