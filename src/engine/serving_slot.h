// One slot of the serving engine: a KV sequence that outlives requests (its tokens are the
// prefix cache) and, while busy, the request running in it: prompt progress, the sampler
// chain, the text streamer and the events not yet sent. The engine thread owns every slot;
// nothing here locks. The slot turns the logits of its output token into a sampled token,
// stream events and, at the end, the final kDone event.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/serving_engine.h"
#include "engine/text_streamer.h"
#include "engine/thinking_budget.h"
#include "sampler/sampler_chain.h"

namespace hearth::engine {

using EngineClock = std::chrono::steady_clock;

// A completion request checked and prepared on the submitting thread: the prompt fitted into a
// slot's context and the sampler chain built (so its seed is fixed at submission).
struct PreparedCompletion {
  GenerationRequest request;       // request.prompt is the fitted prompt
  sampler::SamplerChain chain;
  int32_t truncated_n = 0;
};

// A request's final event, handed back to the engine instead of being pushed at once: the
// engine publishes its metrics and slot snapshot first, so a consumer that has its final event
// finds them up to date.
struct FinalEvent {
  std::shared_ptr<ResultStream> stream;
  EngineEvent event;
};
using FinalEvents = std::vector<FinalEvent>;

// The context one request's sequence may fill: its own n_ctx (num_ctx) within the slot's.
inline int32_t sequence_context(const GenerationRequest& request, int32_t n_ctx_slot) {
  return request.n_ctx > 0 ? std::min(request.n_ctx, n_ctx_slot) : n_ctx_slot;
}

// What sampling one token did, for the engine's metrics.
struct SampleOutcome {
  bool sampled = false;        // a token was drawn
  bool first = false;          // ... and it was the request's first
  bool finished = false;       // the request ended (its final event was pushed)
  StopReason reason = StopReason::kNone;
  double since_previous_s = 0; // time since the previous token (or since submission if first)
  int32_t shift_keep = -1;     // a context shift: the sequence must be cut to this many tokens
};

class ServingSlot {
 public:
  ServingSlot(int32_t id, int32_t seq) : id_(id), seq_(seq) {}

  int32_t id() const { return id_; }
  int32_t seq() const { return seq_; }
  bool busy() const { return active_.has_value(); }
  uint64_t last_used() const { return last_used_; }
  // Tokens whose K/V the slot's sequence holds, in order (the prefix cache).
  const std::vector<int32_t>& cached() const { return cached_; }

  // Takes a request; the sequence holds the prompt's first `reuse` tokens (the caller
  // truncated it to its common prefix, or had it adopt a shared prefix), the rest is pending.
  void start(int64_t request_id, PreparedCompletion prepared, std::shared_ptr<ResultStream> stream,
             EngineClock::time_point submitted, uint64_t arrival, int32_t reuse);
  // Forgets the cached tokens past n (the caller truncated the sequence). Idle slots only.
  void drop_cache(int32_t n);

  // Busy slots only.
  int64_t request_id() const { return active_->id; }
  uint64_t arrival() const { return active_->arrival; }
  const std::vector<int32_t>& prompt() const { return active_->prep.request.prompt; }
  // The tokens the slot feeds into its sequence before sampling: the prompt, or after a
  // preemption everything the sequence held plus what was still to come (see preempt()).
  const std::vector<int32_t>& feed() const { return active_->feed; }
  int32_t prompt_pending() const;  // feed tokens not yet in the sequence
  bool has_pending_token() const { return active_->pending_token >= 0; }
  int32_t pending_token() const { return active_->pending_token; }
  bool cancelled() const { return active_->stream->cancelled(); }
  const std::string& tag() const { return active_->prep.request.tag; }
  // Whether the request's tokens may be kept for later requests (its cache_prompt).
  bool cache_prompt() const { return active_->prep.request.cache_prompt; }
  int32_t shared_prefix() const { return active_->prep.request.shared_prefix; }

  // After a successful decode: n_prompt prompt tokens (or the pending token, when decoded_pending)
  // now sit in the sequence.
  void on_decoded(int32_t n_prompt, bool decoded_pending);
  // The logits of the slot's output token: samples (unless the request is done), pushes the
  // text that became safe and finishes the request when a stop condition holds (its kDone
  // goes to `finals`). A full context with the request's context_shift instead drops tokens
  // (see GenerationRequest): the kept tail becomes feed to evaluate again at its new
  // positions, and shift_keep tells the engine where to cut the sequence; the next token is
  // sampled from the logits of that evaluation.
  SampleOutcome on_logits(const float* logits, const Tokenizer& tokenizer, int32_t n_ctx_slot,
                          EngineClock::time_point now, uint64_t use_stamp, FinalEvents& finals);
  // Unified KV (slots share the pool): the engine took the sequence's blocks back because the
  // pool ran short. The request keeps its sampler, streamer and output so far; its sequence is
  // rebuilt by feeding the tokens it held (and the pending one) again once memory allows, so
  // the next sampled token is the one it would have been. The caller truncated the sequence.
  void preempt();
  bool waiting_for_kv() const { return active_->waiting_for_kv; }
  // Memory is back: the sequence holds the feed's first `reuse` tokens (an adopted prefix).
  void resume(int32_t reuse);
  int32_t preemptions() const { return active_->preemptions; }
  // Tokens the request's sequence is expected to reach: its prompt plus n_predict, or, with no
  // n_predict, what it generated so far plus `growth`; at most its sequence context.
  int32_t expected_tokens(int32_t growth, int32_t n_ctx_slot) const;
  // Ends the request with kDone and `reason` (cancellation, shutdown), frees the slot.
  void finish(StopReason reason, EngineClock::time_point now, uint64_t use_stamp, FinalEvents& finals);
  // Ends the request with kError (a failed decode), frees the slot.
  void fail(const Error& error, uint64_t use_stamp, FinalEvents& finals);

  SlotInfo info(int32_t n_ctx_slot) const;

 private:
  struct Active {
    explicit Active(PreparedCompletion p)
        : prep(std::move(p)),
          streamer(prep.request.stop),
          feed(prep.request.prompt),
          thinking(prep.request.thinking_budget, prep.request.thinking_open, prep.request.thinking_start,
                   prep.request.thinking_end) {}
    int64_t id = -1;
    PreparedCompletion prep;
    std::shared_ptr<ResultStream> stream;
    TextStreamer streamer;
    uint64_t arrival = 0;
    std::vector<int32_t> feed;     // see feed()
    int32_t n_prompt_done = 0;     // feed tokens in the sequence
    bool waiting_for_kv = false;   // preempted, not yet resumed
    int32_t preemptions = 0;
    int32_t pending_token = -1;    // sampled, not yet decoded
    int32_t n_generated = 0;
    int32_t eog_token = -1;        // the end-of-generation token that ended the request
    std::vector<TokenOutput> unsent;
    ThinkingBudget thinking;
    size_t n_forced = 0;           // thinking_close tokens written so far (all, or none yet)
    bool forcing = false;          // writing thinking_close in place of sampling
    Timings timings;
    EngineClock::time_point submitted, started, first_token, last_token;
  };
  void finish_with_text(StopReason reason, std::string text, EngineClock::time_point now, uint64_t use_stamp,
                        FinalEvents& finals);

  int32_t id_;
  int32_t seq_;
  std::vector<int32_t> cached_;
  uint64_t last_used_ = 0;
  std::optional<Active> active_;
};

// Cuts the sequence of the least recently used idle slot that still holds tokens (its full
// blocks stay in the prefix cache while they survive). False when no idle slot holds any.
// Used wherever KV memory must be found without touching running requests.
bool drop_least_recent_idle_sequence(std::vector<ServingSlot>& slots, InferenceContext& ctx);

}  // namespace hearth::engine
