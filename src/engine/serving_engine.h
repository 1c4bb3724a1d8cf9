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
#include <optional>
#include <string>
#include <vector>

#include "engine/inference_context.h"
#include "engine/serving_types.h"
#include "protocol/backend.h"

namespace hearth::engine {

// A request's events, written by the engine thread and read by one consumer.
// Thread-safe. Dropping the last reference does not cancel; call cancel().
class ResultStream final : public protocol::EventStream {
 public:
  explicit ResultStream(int64_t id) : id_(id) {}
  int64_t id() const { return id_; }

  // Waits up to `timeout` for the next event; false when none came in time. After the final
  // event (kDone, kError, kEmbedding) it returns false at once.
  bool next(EngineEvent& out, std::chrono::milliseconds timeout) override;
  // True once the final event has been taken by next().
  bool finished() const;
  // The error of a request refused at submission (see refuse()) that nobody has taken yet.
  // Empty for a request that was queued, even one that failed since.
  std::optional<Error> rejection() const;

  // The consumer is gone: the engine stops the request within one step and frees its slot
  // (the final event is then kDone with StopReason::kCancelled).
  void cancel() override { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }

  // Engine side.
  void push(EngineEvent event);
  // Refuses the request before it is queued: the stream's only event is a kError with `error`.
  void refuse(Error error);

 private:
  const int64_t id_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<EngineEvent> events_;
  bool final_pushed_ = false;
  bool final_taken_ = false;
  bool refused_ = false;
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

inline constexpr size_t kDefaultIdleCacheBytes = size_t{256} << 20;
inline constexpr size_t kDefaultBusyCacheBytes = size_t{512} << 20;

struct ServingOptions {
  int32_t n_slots = 4;             // --parallel
  int32_t n_ctx_slot = 0;          // context per slot; 0: the context's n_ctx / n_slots (rounded
                                   //   down to whole KV blocks when the pool needs it)
  // Slots share the KV pool instead of splitting it (--kv-unified): each may grow to n_ctx_slot
  // (0: the whole context), requests are admitted by the blocks they need, and a request the
  // pool cannot hold any more is preempted and recomputed later, never dropped (unified_kv.h).
  bool kv_unified = false;
  int32_t step_token_budget = 512; // tokens in one batch (decode tokens + prefill chunks); at
                                   //   least n_slots, so every generating slot fits in every step
  int32_t max_queue = 512;         // waiting requests beyond this are refused (kOutOfRange)
  // A slot's cached tokens are preferred for a new prompt when their common prefix covers at
  // least this fraction of the prompt; otherwise the least recently used idle slot is taken.
  float slot_similarity = 0.5f;
  // Once no request has run for idle_after, cached prefixes are trimmed to idle_cache_bytes
  // and the rest of the KV memory goes back to the OS (HEARTH_KV_IDLE_CACHE; see
  // docs/decisions.md for the default).
  size_t idle_cache_bytes = kDefaultIdleCacheBytes;
  // While requests run, cached prefixes nobody holds are kept up to busy_cache_bytes (least
  // recently used go first) and the chunks that empties go back to the OS, so a busy server's
  // RSS levels off at weights + running sequences + this cap instead of filling the whole KV
  // pool with old conversations (HEARTH_KV_BUSY_CACHE; docs/decisions.md).
  size_t busy_cache_bytes = kDefaultBusyCacheBytes;
  std::chrono::milliseconds idle_after{1000};
  // Called on the engine thread after every decoded batch. Must be quick and must not call
  // back into the engine. Empty: nothing is called.
  std::function<void(const StepRecord&)> step_observer;
};

using LatencyHistogram = protocol::LatencyHistogram;
using EngineMetrics = protocol::EngineMetrics;
using SlotInfo = protocol::SlotInfo;

// What prompt preparation submits to: the serving engine, or a scripted engine in tests.
// submit() never blocks; a request refused up front comes back as a stream whose only event
// is kError (ResultStream::rejection()).
class GenerationService {
 public:
  virtual ~GenerationService() = default;
  virtual std::shared_ptr<ResultStream> submit(GenerationRequest request) = 0;
  virtual std::shared_ptr<ResultStream> submit(EmbeddingInput request) = 0;
  virtual EngineMetrics metrics() const = 0;
  virtual std::vector<SlotInfo> slots() const = 0;
  virtual int32_t n_ctx_slot() const = 0;
  // Ends every queued and running request with `reason` as its final kError event, stops
  // generating and refuses later submissions (kUnavailable). Returns once nothing runs any more
  // (one engine step at most) and the consumers took those events (or dropped their streams;
  // at most a second). Idempotent; the server's SIGTERM path calls it. A service
  // without a thread of its own (a scripted one in tests) may leave it as a no-op.
  virtual void stop(const Error& reason) { (void)reason; }
  // The KV byte limit (any thread; 0: none) and the pool's use now; a service without a KV
  // pool of its own (a scripted one in tests) ignores the one and reports zeros for the other.
  virtual void set_kv_limit(size_t bytes) { (void)bytes; }
  virtual kv::KvPoolStats kv_pool_stats() const { return {}; }
};

class ServingEngine final : public GenerationService {
 public:
  // Starts the engine thread over `ctx`, which must outlive the engine and must not be used by
  // anyone else meanwhile. Errors: options that do not fit the context.
  static Result<std::unique_ptr<ServingEngine>> create(InferenceContext& ctx, const ServingOptions& options);
  // Cancels everything still queued or running, then joins the engine thread.
  ~ServingEngine() override;

  // Never blocks. This is where a request's facts are checked, once: an embedding model asked
  // to generate, an empty prompt, token ids outside the vocabulary, a prompt longer than a
  // slot's context without truncate, sampler options out of range, a grammar that does not
  // compile, a full queue. Such a request comes back as a stream whose only event is kError.
  std::shared_ptr<ResultStream> submit(GenerationRequest request) override;
  std::shared_ptr<ResultStream> submit(EmbeddingInput request) override;

  EngineMetrics metrics() const override;
  std::vector<SlotInfo> slots() const override;
  int32_t n_ctx_slot() const override;
  void stop(const Error& reason) override;
  // The longest input an embedding request may have (longer ones need truncate=true): a slot's
  // context for decoders, the whole context (at most the model's positions) for encoders.
  int32_t max_embedding_tokens() const;
  const InferenceContext& context() const;
  // The KV byte limit (any thread; 0: none): past it no new request is admitted, cached
  // prefixes are evicted and empty chunks released; running requests keep their memory and
  // finish. The hook for a machine-wide budget.
  void set_kv_limit(size_t bytes) override;
  // Reserved, committed and used KV bytes now (any thread).
  kv::KvPoolStats kv_pool_stats() const override;

  class Impl;

 private:
  explicit ServingEngine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hearth::engine
