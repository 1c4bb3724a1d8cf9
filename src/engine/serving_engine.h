// The serving engine: one engine thread drives an InferenceContext for many concurrent
// requests (llama-server's design, as a library with no HTTP in it). Callers on any thread
// submit requests and read events from a ResultStream; the engine thread keeps N slots and,
// on every step, builds ONE batch from all active slots: one decode token per generating slot
// plus chunks of pending prompts under a per-step token budget (chunked prefill), so a long
// prompt never stalls the other streams. Each slot keeps its sequence's KV after a request,
// so a new request reuses the longest matching prefix (the slot is chosen by similarity).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/inference_context.h"
#include "engine/serving_types.h"

namespace hearth::engine {

// A request's events, written by the engine thread and read by one consumer.
// Thread-safe. Dropping the last reference does not cancel; call cancel().
class ResultStream {
 public:
  explicit ResultStream(int64_t id) : id_(id) {}
  int64_t id() const { return id_; }

  // Waits up to `timeout` for the next event; false when none came in time. After the final
  // event (kDone, kError, kEmbedding) it returns false at once.
  bool next(EngineEvent& out, std::chrono::milliseconds timeout);
  // True once the final event has been taken by next().
  bool finished() const;

  // The consumer is gone: the engine stops the request within one step and frees its slot
  // (the final event is then kDone with StopReason::kCancelled).
  void cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }

  // Engine side.
  void push(EngineEvent event);

 private:
  const int64_t id_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<EngineEvent> events_;
  bool final_pushed_ = false;
  bool final_taken_ = false;
  std::atomic<bool> cancelled_{false};
};

// What one engine step put into its batch (for tests and debugging; see
// ServingOptions::step_observer).
struct StepRecord {
  struct Share {
    int32_t slot = 0;
    int64_t request_id = -1;
    int32_t n_decode = 0;  // 0 or 1: the slot's last sampled token fed back
    int32_t n_prompt = 0;  // prompt tokens of this slot evaluated in this step
  };
  uint64_t step = 0;       // 1, 2, ... (EngineMetrics::steps_total after this step)
  int32_t n_tokens = 0;    // batch size: decode tokens + prompt tokens
  std::vector<Share> shares;
};

struct ServingOptions {
  int32_t n_slots = 4;             // --parallel
  int32_t n_ctx_slot = 0;          // context per slot; 0: the context's n_ctx / n_slots (rounded
                                   //   down to whole KV blocks when the pool needs it)
  int32_t step_token_budget = 512; // tokens in one batch (decode tokens + prefill chunks); at
                                   //   least n_slots, so every generating slot fits in every step
  int32_t max_queue = 512;         // waiting requests beyond this are refused (kOutOfRange)
  // A slot's cached tokens are preferred for a new prompt when their common prefix covers at
  // least this fraction of the prompt; otherwise the least recently used idle slot is taken.
  float slot_similarity = 0.5f;
  // Called on the engine thread after every decoded batch. Must be quick and must not call
  // back into the engine. Empty: nothing is called.
  std::function<void(const StepRecord&)> step_observer;
};

// A histogram with fixed upper bounds (seconds), Prometheus-style cumulative buckets.
struct LatencyHistogram {
  std::vector<double> bounds;     // ascending upper bounds, +Inf implied
  std::vector<uint64_t> counts;   // per bound (not cumulative), bounds.size() + 1 entries
  double sum = 0.0;
  uint64_t count = 0;
  void observe(double seconds);
};

struct EngineMetrics {
  uint64_t prompt_tokens_total = 0;     // prompt tokens evaluated
  uint64_t cached_tokens_total = 0;     // prompt tokens reused from the prefix cache
  uint64_t generated_tokens_total = 0;
  uint64_t requests_total = 0;          // completions + embeddings finished
  uint64_t requests_cancelled_total = 0;
  uint64_t steps_total = 0;             // batches decoded
  int32_t requests_processing = 0;      // in a slot now
  int32_t requests_waiting = 0;         // queued, no slot yet
  int32_t kv_blocks_used = 0;
  int32_t kv_blocks_total = 0;
  LatencyHistogram ttft;                // seconds, submit -> first token
  LatencyHistogram inter_token;         // seconds between tokens of one stream
};

struct SlotInfo {
  int32_t id = 0;
  bool busy = false;
  int64_t request_id = -1;
  int32_t n_ctx = 0;
  int32_t cached_tokens = 0;   // tokens held in the slot's KV
  int32_t prompt_pending = 0;  // prompt tokens still to prefill
  int32_t generated = 0;
};

class ServingEngine {
 public:
  // Starts the engine thread over `ctx`, which must outlive the engine and must not be used by
  // anyone else meanwhile. Errors: options that do not fit the context.
  static Result<std::unique_ptr<ServingEngine>> create(InferenceContext& ctx, const ServingOptions& options);
  // Cancels everything still queued or running, then joins the engine thread.
  ~ServingEngine();

  // Never blocks. Requests that can be rejected up front (empty prompt, prompt longer than a
  // slot's context without truncate, bad sampler params, queue full) come back as a stream
  // whose only event is kError.
  std::shared_ptr<ResultStream> submit(CompletionRequest request);
  std::shared_ptr<ResultStream> submit(EmbeddingRequest request);

  EngineMetrics metrics() const;
  std::vector<SlotInfo> slots() const;
  int32_t n_ctx_slot() const;
  // The longest input an embedding request may have (longer ones need truncate=true): a slot's
  // context for decoders, the whole context (at most the model's positions) for encoders.
  int32_t max_embedding_tokens() const;
  const InferenceContext& context() const;

  class Impl;

 private:
  explicit ServingEngine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hearth::engine
