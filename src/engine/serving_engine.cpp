// The serving engine's thread, task queue and step loop (see serving_engine.h). Submissions
// are checked on the caller's thread and queued under a mutex; the engine thread sleeps on a
// condition variable while there is nothing to do. Each loop turn: finish cancelled requests,
// admit queued ones into idle slots (slot chosen by cached-prefix similarity), run at most one
// embedding, then decode ONE batch planned by plan_step() and sample for every slot whose
// output token was in it. Metrics and slot snapshots are published under their own mutex.
#include "engine/serving_engine.h"

#include <algorithm>
#include <optional>
#include <thread>

#include "engine/batch_planner.h"
#include "engine/prompt_fit.h"
#include "engine/request_admission.h"
#include "engine/serving_slot.h"
#include "engine/unified_kv.h"
#include "engine/slot_choice.h"
#include "util/log.h"

namespace hearth::engine {
namespace {

std::shared_ptr<ResultStream> error_stream(int64_t id, Error error) {
  auto stream = std::make_shared<ResultStream>(id);
  stream->refuse(std::move(error));
  return stream;
}

LatencyHistogram make_histogram(std::vector<double> bounds) {
  LatencyHistogram h;
  h.bounds = std::move(bounds);
  h.counts.assign(h.bounds.size() + 1, 0);
  return h;
}

}  // namespace

// A queued request (exactly one of completion and embedding is set).
struct Task {
  int64_t id = 0;
  std::shared_ptr<ResultStream> stream;
  EngineClock::time_point submitted;
  std::optional<PreparedCompletion> completion;
  std::optional<EmbeddingInput> embedding;
};

// How long stop(reason) waits for consumers to take the final events it pushed.
constexpr auto kStopGrace = std::chrono::milliseconds(1000);

class ServingEngine::Impl {
 public:
  Impl(InferenceContext& ctx, ServingOptions options, int32_t n_ctx_slot);
  ~Impl();

  std::shared_ptr<ResultStream> submit(GenerationRequest request);
  std::shared_ptr<ResultStream> submit(EmbeddingInput request);
  EngineMetrics metrics() const;
  std::vector<SlotInfo> slots() const;
  int32_t n_ctx_slot() const { return n_ctx_slot_; }
  int32_t embed_limit() const;
  const InferenceContext& context() const { return ctx_; }
  void stop(std::optional<Error> reason);

 private:
  std::shared_ptr<ResultStream> enqueue(Task task);
  void run();
  std::vector<Task> take_tasks(bool& stop);
  void take_admissible(std::vector<Task>& taken, std::vector<Task>& cancelled, bool kv_open);
  // Unified KV: whether the pool can take this queued completion now (reserving its blocks).
  bool unified_admits(const Task& task, int32_t& reserved);
  void finish_cancelled();
  void admit(std::vector<Task>& tasks);
  void run_embedding(Task& task);
  void step();
  void publish();
  void publish_and_deliver();
  void shut_down(std::deque<Task>& left);
  bool any_busy() const;
  void trim_when_idle();
  void enforce_kv_limit();
  void publish_prefixes(const ServingSlot& s);
  // Where the slot's prompt publishes its shared prefix (whole blocks; 0: nowhere), and the
  // prompt tokens left before it (0: none).
  int32_t shared_prefix_end(const ServingSlot& s) const;
  int32_t shared_prefix_stop(const ServingSlot& s) const;
  void trim_while_busy();

 public:
  void set_kv_limit(size_t bytes);

 private:

  InferenceContext& ctx_;
  const ServingOptions opts_;
  const int32_t n_ctx_slot_;
  std::atomic<int64_t> next_id_{1};

  // Engine thread only.
  std::vector<ServingSlot> slots_;
  UnifiedKv unified_{ctx_, slots_, n_ctx_slot_};  // used when opts_.kv_unified
  uint64_t arrivals_ = 0;
  uint64_t use_stamps_ = 0;
  std::vector<model::BatchToken> batch_;
  std::vector<float> logits_;
  EngineClock::time_point last_active_;  // end of the last step or admission
  bool trim_pending_ = false;            // work ran since the last idle trim
  EngineMetrics m_;     // published into metrics_
  FinalEvents finals_;  // pushed after the next publish()

  // The task queue.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  bool stop_ = false;
  bool limit_changed_ = false;  // set_kv_limit() since the engine last looked
  std::optional<Error> stop_error_;  // set by stop(reason): the final event of what is left
  std::vector<std::weak_ptr<ResultStream>> stopped_;  // streams shut_down() ended, for stop() to await

  // Snapshots for other threads.
  mutable std::mutex stats_mu_;
  EngineMetrics metrics_;
  std::vector<SlotInfo> slot_infos_;

  std::thread thread_;
};

ServingEngine::Impl::Impl(InferenceContext& ctx, ServingOptions options, int32_t n_ctx_slot)
    : ctx_(ctx), opts_(std::move(options)), n_ctx_slot_(n_ctx_slot) {
  for (int32_t i = 0; i < opts_.n_slots; ++i) slots_.emplace_back(i, ctx_.seq_create());
  m_.ttft = make_histogram({0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60});
  m_.inter_token = make_histogram({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5});
  m_.kv_blocks_total = ctx_.kv().pool().n_blocks();
  publish();
  thread_ = std::thread([this] { run(); });
}

ServingEngine::Impl::~Impl() {
  stop(std::nullopt);
  for (const ServingSlot& s : slots_) ctx_.seq_free(s.seq());
}

// Without a reason (the destructor), what is left ends as cancelled; with one, as that error.
void ServingEngine::Impl::stop(std::optional<Error> reason) {
  {
    std::lock_guard lock(mu_);
    if (!stop_) {
      stop_ = true;
      stop_error_ = std::move(reason);
    }
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (!stop_error_) return;
  // Give the consumers a moment to take the error events (an HTTP stream writes its last
  // chunk when it does), so a server that exits next does not cut them off.
  const auto deadline = EngineClock::now() + kStopGrace;
  auto pending = [this] {
    return std::any_of(stopped_.begin(), stopped_.end(), [](const std::weak_ptr<ResultStream>& w) {
      auto stream = w.lock();
      return stream && !stream->finished();
    });
  };
  while (pending() && EngineClock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  stopped_.clear();
}

// ---------------------------------------------------------------------------------------------
// Submission (any thread).

std::shared_ptr<ResultStream> ServingEngine::Impl::submit(GenerationRequest request) {
  const int64_t id = next_id_.fetch_add(1);
  if (ctx_.model().is_encoder()) {
    return error_stream(id, make_error(ErrorKind::kUnsupported, "this is an embedding model (" +
                                                                    ctx_.model().hparams().arch_name +
                                                                    "); it cannot generate text (use the embeddings routes)"));
  }
  if (opts_.context_shift) request.context_shift = true;
  const int32_t n_ctx_seq = sequence_context(request, n_ctx_slot_);
  auto truncated_n = admit_generation(request, AdmissionLimits{ctx_.n_vocab(), n_ctx_seq, opts_.n_slots});
  if (!truncated_n.ok()) return error_stream(id, truncated_n.error());
  sampler::SamplerParams params = request.sampling;
  params.n_probs = request.logprobs ? std::max(params.n_probs, request.top_logprobs) : 0;
  auto grammar = ctx_.grammar_constraint(request.grammar);
  if (!grammar.ok()) return error_stream(id, grammar_error(request, grammar.error()));
  if (grammar->grammar) grammar->triggers = request.grammar_triggers;
  auto chain = sampler::SamplerChain::create(params, static_cast<size_t>(ctx_.n_vocab()),
                                             static_cast<size_t>(n_ctx_seq), std::move(grammar).value());
  if (!chain.ok()) return error_stream(id, chain.error());
  Task task;
  task.id = id;
  task.completion.emplace(PreparedCompletion{std::move(request), std::move(chain).value(), *truncated_n});
  return enqueue(std::move(task));
}

std::shared_ptr<ResultStream> ServingEngine::Impl::submit(EmbeddingInput request) {
  const int64_t id = next_id_.fetch_add(1);
  if (request.tokens.empty()) {
    return error_stream(id, make_error(ErrorKind::kInvalidArgument, "cannot embed an empty input"));
  }
  if (auto st = check_token_ids(request.tokens, ctx_.n_vocab()); !st.ok()) return error_stream(id, st.error());
  const int32_t limit = embed_limit();
  if (static_cast<int32_t>(request.tokens.size()) > limit) {
    if (!request.truncate) {
      return error_stream(id, make_error(ErrorKind::kOutOfRange,
                                         "the input has " + std::to_string(request.tokens.size()) +
                                             " tokens but at most " + std::to_string(limit) +
                                             " can be embedded; shorten it or ask for truncation"));
    }
    request.tokens.resize(static_cast<size_t>(limit));
  }
  Task task;
  task.id = id;
  task.embedding = std::move(request);
  return enqueue(std::move(task));
}

// A decoder's slots keep caches, so an embedding is sure of one slot's share of the pool. An
// encoder's slots never hold anything: the whole context is its, up to the model's positions.
int32_t ServingEngine::Impl::embed_limit() const {
  if (ctx_.model().is_encoder()) {
    const int32_t n_pos_max = ctx_.model().hparams().n_pos_max;
    return n_pos_max > 0 ? std::min(ctx_.n_ctx(), n_pos_max) : ctx_.n_ctx();
  }
  return n_ctx_slot_;
}

std::shared_ptr<ResultStream> ServingEngine::Impl::enqueue(Task task) {
  task.stream = std::make_shared<ResultStream>(task.id);
  task.submitted = EngineClock::now();
  auto stream = task.stream;
  {
    std::lock_guard lock(mu_);
    if (stop_) {
      return error_stream(task.id, make_error(ErrorKind::kUnavailable, "the engine is shutting down"));
    }
    if (static_cast<int32_t>(queue_.size()) >= opts_.max_queue) {
      return error_stream(task.id, make_error(ErrorKind::kUnavailable,
                                              "the queue is full (" + std::to_string(queue_.size()) +
                                                  " requests waiting); try again later"));
    }
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
  return stream;
}

// ---------------------------------------------------------------------------------------------
// The engine thread.

bool ServingEngine::Impl::any_busy() const {
  return std::any_of(slots_.begin(), slots_.end(), [](const ServingSlot& s) { return s.busy(); });
}

void ServingEngine::Impl::run() {
  for (;;) {
    finish_cancelled();
    enforce_kv_limit();
    publish_and_deliver();  // before waiting: the snapshot never lags behind an idle engine
    bool stop = false;
    std::vector<Task> tasks = take_tasks(stop);
    if (stop) break;
    if (!tasks.empty()) trim_pending_ = true;
    admit(tasks);
    if (any_busy()) step();
    if (trim_pending_) last_active_ = EngineClock::now();
    publish_and_deliver();
  }
  std::deque<Task> left;
  {
    std::lock_guard lock(mu_);
    left.swap(queue_);
  }
  shut_down(left);
  publish_and_deliver();
}

// Waits for work, then takes the queued tasks that idle slots can start now, in arrival order:
// one idle slot per task (a task naming a busy slot waits), at most one embedding per turn.
// Tasks cancelled while queued end here.
std::vector<Task> ServingEngine::Impl::take_tasks(bool& stop) {
  std::vector<Task> taken;
  std::vector<Task> cancelled;
  std::unique_lock lock(mu_);
  const bool busy = any_busy();
  // Over the KV limit, completions wait in the queue (running ones go on) until it is raised
  // or running sequences end; cancellations and embeddings still wake the engine.
  // (A pool merely full of idle slots' cached blocks is not a hold: admission reuses a slot.)
  // Read again at every check: a limit set while the engine waits must hold the submission
  // that wakes it.
  bool kv_open = ctx_.kv().pool().limit_admits_blocks(1);
  auto work = [&] {
    kv_open = ctx_.kv().pool().limit_admits_blocks(1);
    if (stop_ || busy || limit_changed_) return true;
    return std::any_of(queue_.begin(), queue_.end(),
                       [&](const Task& t) { return kv_open || t.embedding || t.stream->cancelled(); });
  };
  if (!busy && trim_pending_ && !work()) {
    // Idle: once nothing has run for idle_after, cached prefixes shrink to the idle cap.
    if (!cv_.wait_until(lock, last_active_ + opts_.idle_after, work)) {
      lock.unlock();
      trim_when_idle();
      publish();
      lock.lock();
    }
  }
  // Woken by submissions, cancellations and limit changes; the timeout only rechecks
  // cancellations of requests held back by the KV limit.
  while (!work()) cv_.wait_for(lock, std::chrono::milliseconds(kv_open ? 60000 : 100));
  limit_changed_ = false;
  if (stop_) {
    stop = true;
    return taken;
  }
  kv_open = ctx_.kv().pool().limit_admits_blocks(1);
  take_admissible(taken, cancelled, kv_open);
  lock.unlock();
  for (Task& t : cancelled) {
    EngineEvent ev;
    if (t.completion) {
      ev.kind = EngineEvent::Kind::kDone;
      ev.stop_reason = StopReason::kCancelled;
      ev.timings.prompt_n = static_cast<int32_t>(t.completion->request.prompt.size());
    } else {
      ev.kind = EngineEvent::Kind::kError;
      ev.error = make_error(ErrorKind::kInvalidArgument, "the request was cancelled before it ran");
    }
    finals_.push_back({std::move(t.stream), std::move(ev)});
    ++m_.requests_cancelled_total;
    ++m_.requests_total;
  }
  return taken;
}

// With mu_ held: moves the tasks that can start now into `taken` and those cancelled while
// queued into `cancelled`.
void ServingEngine::Impl::take_admissible(std::vector<Task>& taken, std::vector<Task>& cancelled, bool kv_open) {
  std::vector<bool> free_slot(slots_.size());
  int32_t n_free = 0;
  for (size_t i = 0; i < slots_.size(); ++i) {
    free_slot[i] = !slots_[i].busy();
    n_free += free_slot[i] ? 1 : 0;
  }
  bool took_embedding = false;
  int32_t reserved = 0;          // unified KV: blocks promised to the completions taken so far
  bool kv_blocked = false;       // ... and the first that did not fit holds back those behind it
  for (auto it = queue_.begin(); it != queue_.end();) {
    if (it->stream->cancelled()) {
      cancelled.push_back(std::move(*it));
      it = queue_.erase(it);
      continue;
    }
    bool take = false;
    if (n_free == 0) {
      ++it;  // keep scanning: cancelled tasks behind it end now, not when a slot frees
      continue;
    }
    if (it->embedding) {
      take = !took_embedding;
      took_embedding = took_embedding || take;
    } else if (!kv_open || kv_blocked) {
      take = false;
    } else {
      const int32_t want = it->completion->request.slot;
      take = want < 0 || free_slot[static_cast<size_t>(want)];
      if (take && opts_.kv_unified && !unified_admits(*it, reserved)) {
        kv_blocked = true;  // first come, first served: a large request is not overtaken forever
        take = false;
      }
      if (take && want >= 0) free_slot[static_cast<size_t>(want)] = false;  // reserved for this task
    }
    if (!take) {
      ++it;
      continue;
    }
    --n_free;
    taken.push_back(std::move(*it));
    it = queue_.erase(it);
  }
}

bool ServingEngine::Impl::unified_admits(const Task& task, int32_t& reserved) {
  if (unified_.any_waiting()) return false;  // preempted requests resume first
  const int32_t need = unified_.blocks_for_request(task.completion->request);
  if (!unified_.make_room(reserved + need + unified_.outstanding())) return false;
  reserved += need;
  return true;
}

void ServingEngine::Impl::finish_cancelled() {
  const auto now = EngineClock::now();
  for (ServingSlot& s : slots_) {
    if (!s.busy() || !s.cancelled()) continue;
    log_info("request cancelled", {{"slot", s.id()}, {"task", static_cast<long long>(s.request_id())}});
    s.finish(StopReason::kCancelled, now, ++use_stamps_, finals_);
    ++m_.requests_cancelled_total;
    ++m_.requests_total;
  }
}

// Puts completions into slots (those naming a slot first, then the others by cached-prefix
// similarity) and runs the embedding, if one was taken.
void ServingEngine::Impl::admit(std::vector<Task>& tasks) {
  std::stable_partition(tasks.begin(), tasks.end(),
                        [](const Task& t) { return t.completion && t.completion->request.slot >= 0; });
  Task* embedding = nullptr;
  for (Task& task : tasks) {
    if (task.embedding) {
      embedding = &task;
      continue;
    }
    const GenerationRequest& req = task.completion->request;
    SlotChoice choice;
    if (req.slot >= 0) {
      const ServingSlot& s = slots_[static_cast<size_t>(req.slot)];
      choice = {req.slot, reusable_prefix(s.cached(), req.prompt, req.cache_prompt)};
    } else {
      std::vector<SlotCacheView> views;
      for (const ServingSlot& s : slots_) views.push_back({s.id(), !s.busy(), s.cached(), s.last_used()});
      choice = choose_slot(views, req.prompt, req.cache_prompt, opts_.slot_similarity);
    }
    ServingSlot& slot = slots_[static_cast<size_t>(choice.slot)];
    // Sliding-window layers may have released the keys a shorter resume point needs.
    choice.reuse = ctx_.kv().seq_resumable(slot.seq(), choice.reuse);
    if (Status st = ctx_.seq_truncate(slot.seq(), choice.reuse); !st.ok()) {
      // Cannot happen (reuse <= the sequence's length); keep the invariant visible if it does.
      EngineEvent ev;
      ev.kind = EngineEvent::Kind::kError;
      ev.error = st.error().with_context("slot " + std::to_string(choice.slot));
      finals_.push_back({task.stream, std::move(ev)});
      ++m_.requests_total;
      continue;
    }
    // A longer prefix cached by any slot or earlier request (whole blocks) replaces the slot's own.
    if (req.cache_prompt && !req.prompt.empty()) {
      const auto max_reuse = static_cast<int32_t>(req.prompt.size()) - 1;
      if (std::min(ctx_.kv().cached_prefix(req.prompt), max_reuse) > choice.reuse) {
        (void)ctx_.seq_truncate(slot.seq(), 0);
        choice.reuse = ctx_.kv().seq_adopt_prefix(slot.seq(), req.prompt, max_reuse);
      }
    }
    log_info("request started", {{"slot", slot.id()},
                                 {"task", static_cast<long long>(task.id)},
                                 {"prompt_n", static_cast<long long>(req.prompt.size())},
                                 {"cached_n", choice.reuse},
                                 {"truncated_n", task.completion->truncated_n},
                                 {"tag", req.tag}});
    m_.cached_tokens_total += static_cast<uint64_t>(choice.reuse);
    slot.start(task.id, std::move(*task.completion), task.stream, task.submitted, ++arrivals_, choice.reuse);
  }
  if (embedding != nullptr) run_embedding(*embedding);
}

// Runs one embedding between steps. Its temporary sequence needs free KV blocks: idle slots'
// caches are dropped, least recently used first, until enough are free. Every slot holds at most
// one slot's share of the pool and the task was taken only while a slot was idle, so dropping
// idle caches always frees enough.
void ServingEngine::Impl::run_embedding(Task& task) {
  const EmbeddingInput& req = *task.embedding;
  const int32_t bt = ctx_.kv().block_tokens();
  const int32_t need = (static_cast<int32_t>(req.tokens.size()) + bt - 1) / bt;
  while (ctx_.kv().pool().n_free() < need && drop_least_recent_idle_sequence(slots_, ctx_)) {
  }

  EngineEvent ev;
  auto t0 = EngineClock::now();
  auto result = ctx_.embed(req.tokens, req.normalize);
  if (result.ok()) {
    ev.kind = EngineEvent::Kind::kEmbedding;
    ev.embedding = std::move(result).value();
    ev.n_tokens = static_cast<int32_t>(req.tokens.size());
    ev.timings.prompt_n = ev.n_tokens;
    ev.timings.queue_ms = std::chrono::duration<double, std::milli>(t0 - task.submitted).count();
    ev.timings.prompt_ms = std::chrono::duration<double, std::milli>(EngineClock::now() - t0).count();
    m_.prompt_tokens_total += static_cast<uint64_t>(ev.n_tokens);
  } else {
    ev.kind = EngineEvent::Kind::kError;
    ev.error = result.error();
  }
  log_info("embedding done", {{"task", static_cast<long long>(task.id)},
                              {"n_tokens", static_cast<long long>(req.tokens.size())},
                              {"ok", result.ok()}});
  finals_.push_back({task.stream, std::move(ev)});
  ++m_.requests_total;
}

// One batch: a decode token for every generating slot, prompt chunks in what is left of the
// budget, one forward pass, then sampling for each slot whose output token was in it.
void ServingEngine::Impl::step() {
  if (opts_.kv_unified) unified_.resume_waiting();
  std::vector<SlotDemand> demands;
  for (const ServingSlot& s : slots_) {
    if (s.busy() && !s.waiting_for_kv()) {
      demands.push_back({s.id(), s.has_pending_token(), s.prompt_pending(), s.arrival(), shared_prefix_stop(s)});
    }
  }
  std::vector<SlotShare> plan = plan_step(demands, opts_.step_token_budget);
  if (opts_.kv_unified) {
    m_.kv_preemptions_total += static_cast<uint64_t>(unified_.fit_plan(plan, [this](ServingSlot& s) { publish_prefixes(s); }));
  }
  if (plan.empty()) return;

  batch_.clear();
  std::vector<int32_t> output_slots;  // slot of each output row, in batch order
  StepRecord record;
  int32_t n_prompt_tokens = 0;
  for (const SlotShare& share : plan) {
    ServingSlot& s = slots_[static_cast<size_t>(share.slot)];
    int32_t pos = ctx_.seq_length(s.seq());
    if (share.n_decode > 0) {
      batch_.push_back({s.pending_token(), s.seq(), pos, true});
      output_slots.push_back(s.id());
    } else {
      const auto& prompt = s.feed();
      const int32_t begin = static_cast<int32_t>(prompt.size()) - s.prompt_pending();
      for (int32_t i = 0; i < share.n_prompt; ++i) {
        const int32_t idx = begin + i;
        const bool last = idx + 1 == static_cast<int32_t>(prompt.size());
        batch_.push_back({prompt[static_cast<size_t>(idx)], s.seq(), pos++, last});
        if (last) output_slots.push_back(s.id());
      }
      n_prompt_tokens += share.n_prompt;
    }
    record.shares.push_back({share.slot, s.request_id(), share.n_decode, share.n_prompt});
  }

  Status st = ctx_.decode(batch_, logits_);
  if (!st.ok()) {
    // The cache is unchanged after a failed decode; the slots' requests end with the error.
    for (const SlotShare& share : plan) slots_[static_cast<size_t>(share.slot)].fail(st.error(), ++use_stamps_, finals_);
    m_.requests_total += plan.size();
    return;
  }
  ++m_.steps_total;
  m_.prompt_tokens_total += static_cast<uint64_t>(n_prompt_tokens);
  for (const SlotShare& share : plan) {
    ServingSlot& s = slots_[static_cast<size_t>(share.slot)];
    s.on_decoded(share.n_prompt, share.n_decode > 0);
    // A prompt just evaluated in full is shared at once, so requests arriving meanwhile with
    // the same system prompt adopt it instead of evaluating it again.
    if (share.n_prompt > 0 && s.prompt_pending() == 0 && s.cache_prompt()) publish_prefixes(s);
    // A shared system prompt's end, reached: published before the sliding layers move past it.
    if (share.n_prompt > 0 && s.prompt_pending() > 0 && s.cache_prompt() && ctx_.seq_length(s.seq()) == shared_prefix_end(s)) {
      publish_prefixes(s);
    }
  }

  const auto now = EngineClock::now();
  const size_t n_vocab = static_cast<size_t>(ctx_.n_vocab());
  for (size_t row = 0; row < output_slots.size(); ++row) {
    ServingSlot& s = slots_[static_cast<size_t>(output_slots[row])];
    const bool keep_prefix = s.cache_prompt();
    SampleOutcome out = s.on_logits(logits_.data() + row * n_vocab, ctx_.tokenizer(), n_ctx_slot_, now, ++use_stamps_, finals_);
    if (out.shift_keep >= 0) {  // context shift: the kept tail is evaluated again from here
      log_info("context shift", {{"slot", s.id()}, {"task", static_cast<long long>(s.request_id())}, {"kept", out.shift_keep}});
      if (Status cut = ctx_.seq_truncate(s.seq(), out.shift_keep); !cut.ok()) {
        s.fail(cut.error(), ++use_stamps_, finals_);
        ++m_.requests_total;
      }
      continue;
    }
    if (out.sampled) {
      ++m_.generated_tokens_total;
      (out.first ? m_.ttft : m_.inter_token).observe(out.since_previous_s);
    }
    if (out.finished) {
      ++m_.requests_total;
      if (keep_prefix) publish_prefixes(s);  // the conversation so far, for its next turn on any slot
      trim_while_busy();
    }
  }

  if (opts_.step_observer) {
    record.step = m_.steps_total;
    record.n_tokens = static_cast<int32_t>(batch_.size());
    opts_.step_observer(record);
  }
}

void ServingEngine::Impl::shut_down(std::deque<Task>& left) {
  const auto now = EngineClock::now();
  std::optional<Error> reason;
  {
    std::lock_guard lock(mu_);
    reason = stop_error_;
  }
  for (ServingSlot& s : slots_) {
    if (!s.busy()) continue;
    if (reason) {
      s.fail(*reason, ++use_stamps_, finals_);
    } else {
      s.finish(StopReason::kCancelled, now, ++use_stamps_, finals_);
    }
    ++m_.requests_cancelled_total;
    ++m_.requests_total;
  }
  for (Task& task : left) {
    EngineEvent ev;
    if (reason) {
      ev.kind = EngineEvent::Kind::kError;
      ev.error = *reason;
    } else if (task.completion) {
      ev.kind = EngineEvent::Kind::kDone;
      ev.stop_reason = StopReason::kCancelled;
    } else {
      ev.kind = EngineEvent::Kind::kError;
      ev.error = make_error(ErrorKind::kUnsupported, "the engine shut down before the request ran");
    }
    finals_.push_back({task.stream, std::move(ev)});
    ++m_.requests_cancelled_total;
    ++m_.requests_total;
  }
  if (reason) {
    for (const FinalEvent& f : finals_) stopped_.push_back(f.stream);
  }
}

void ServingEngine::Impl::publish_prefixes(const ServingSlot& s) { ctx_.kv().seq_publish(s.seq(), s.cached()); }

int32_t ServingEngine::Impl::shared_prefix_end(const ServingSlot& s) const {
  // Only sliding-window layers lose a prefix's window as the prompt goes on; without them the
  // prompt's own publication names the shared part too.
  if (!ctx_.kv().has_sliding_pool() || !s.cache_prompt()) return 0;
  const int32_t bt = ctx_.kv().block_tokens();
  return s.shared_prefix() / bt * bt;
}

int32_t ServingEngine::Impl::shared_prefix_stop(const ServingSlot& s) const {
  const int32_t left = shared_prefix_end(s) - ctx_.seq_length(s.seq());
  return left > 0 ? left : 0;
}

// Nothing ran for idle_after: keep at most idle_cache_bytes of cached prefixes and give the
// rest of the KV memory back to the OS. Idle slots keep their sequences when everything fits
// the cap; otherwise they let go of them (their full blocks stay named in the prefix cache, so
// the next turn of a conversation still adopts them while they survive the trim).
void ServingEngine::Impl::trim_when_idle() {
  trim_pending_ = false;
  kv::KvCache& kv = ctx_.kv();
  if (static_cast<size_t>(kv.pool().n_used()) * kv.pool().block_bytes_with_mirror() > opts_.idle_cache_bytes) {
    for (ServingSlot& s : slots_) {
      if (s.busy()) continue;
      (void)ctx_.seq_truncate(s.seq(), 0);
      s.drop_cache(0);
    }
  }
  const int32_t released = kv.trim_cache(opts_.idle_cache_bytes);
  if (released > 0) {
    log_info("KV memory returned while idle", {{"chunks", released},
                                               {"committed_bytes", static_cast<long long>(kv.stats().pool.committed_bytes)}});
  }
}

// A request just finished: cached prefixes held by the cache alone beyond busy_cache_bytes are
// evicted (least recently used, whole chunks first) and the chunks that frees go back.
void ServingEngine::Impl::trim_while_busy() {
  (void)ctx_.kv().trim_cache_if_over(opts_.busy_cache_bytes);
}

// Over a KV limit, cached blocks go first; then idle slots' own sequences (least recently used
// first) - a busy engine never reaches the idle trim, and its idle slots must not hold memory
// the limit asks back. Running sequences keep theirs.
void ServingEngine::Impl::enforce_kv_limit() {
  kv::KvCache& kv = ctx_.kv();
  kv.enforce_limit();
  for (;;) {
    const kv::KvPoolStats p = kv.pool().stats();
    if (p.committed_bytes <= p.limit_bytes) return;
    if (!drop_least_recent_idle_sequence(slots_, ctx_)) return;
    kv.enforce_limit();
  }
}

void ServingEngine::Impl::set_kv_limit(size_t bytes) {
  ctx_.kv().pool().set_limit(bytes);
  {
    std::lock_guard lock(mu_);
    limit_changed_ = true;
  }
  cv_.notify_all();
}

void ServingEngine::Impl::publish() {
  std::vector<SlotInfo> infos;
  int32_t processing = 0;
  const kv::KvCacheStats kv = ctx_.kv().stats();
  for (const ServingSlot& s : slots_) {
    infos.push_back(s.info(n_ctx_slot_));
    const auto table = ctx_.kv().block_table(s.seq());
    infos.back().kv_blocks = static_cast<int32_t>(table.size());
    infos.back().kv_device_bytes = table.size() * kv.pool.mirror_block_bytes;
    for (int32_t b : table) infos.back().kv_blocks_shared += ctx_.kv().pool().kv_block_refcount(b) > 1 ? 1 : 0;
    infos.back().kv_sliding_blocks = ctx_.kv().seq_sliding_blocks(s.seq());
    processing += s.busy() ? 1 : 0;
  }
  m_.requests_processing = processing;
  m_.kv_blocks_used = kv.pool.blocks_used;
  m_.kv_blocks_cached = kv.blocks_cached;
  m_.kv_bytes_reserved = kv.pool.reserved_bytes;
  m_.kv_bytes_committed = kv.pool.committed_bytes;
  m_.kv_device_bytes_reserved = kv.pool.mirror_reserved_bytes;
  m_.kv_device_bytes_committed = kv.pool.mirror_committed_bytes;
  m_.kv_bytes_used = kv.pool.used_bytes;
  m_.kv_bytes_limit = kv.pool.limit_bytes;
  m_.kv_evictions_total = kv.evictions_total;
  m_.kv_shrink_events_total = kv.shrink_events_total;
  m_.kv_chunks_released_total = kv.pool.chunks_released_total;
  m_.kv_commits_on_demand_total = kv.pool.commits_on_demand_total;
  m_.kv_sliding_blocks_used = kv.sliding.blocks_used;
  m_.kv_sliding_blocks_total = kv.sliding.blocks_total;
  m_.kv_sliding_bytes_reserved = kv.sliding.reserved_bytes;
  m_.kv_sliding_bytes_committed = kv.sliding.committed_bytes;
  std::lock_guard lock(stats_mu_);
  metrics_ = m_;
  slot_infos_ = std::move(infos);
}

void ServingEngine::Impl::publish_and_deliver() {
  publish();
  for (FinalEvent& f : finals_) f.stream->push(std::move(f.event));
  finals_.clear();
}

EngineMetrics ServingEngine::Impl::metrics() const {
  EngineMetrics m;
  {
    std::lock_guard lock(stats_mu_);
    m = metrics_;
  }
  std::lock_guard lock(mu_);
  m.requests_waiting = static_cast<int32_t>(queue_.size());
  return m;
}

std::vector<SlotInfo> ServingEngine::Impl::slots() const {
  std::lock_guard lock(stats_mu_);
  return slot_infos_;
}

// ---------------------------------------------------------------------------------------------
// ServingEngine

Result<std::unique_ptr<ServingEngine>> ServingEngine::create(InferenceContext& ctx, const ServingOptions& options) {
  if (options.n_slots < 1) return make_error(ErrorKind::kInvalidArgument, "the number of slots must be at least 1");
  if (options.max_queue < 0) return make_error(ErrorKind::kInvalidArgument, "the queue limit must not be negative");
  if (options.step_token_budget < options.n_slots) {
    return make_error(ErrorKind::kInvalidArgument, "the step token budget (" +
                                                       std::to_string(options.step_token_budget) +
                                                       ") must be at least the number of slots (" +
                                                       std::to_string(options.n_slots) + ")");
  }
  if (options.slot_similarity < 0.0f || options.slot_similarity > 1.0f) {
    return make_error(ErrorKind::kInvalidArgument, "slot_similarity must be in [0, 1]");
  }
  // Every slot must be able to fill its context at the same time: n_slots whole-block shares
  // of the pool's free blocks.
  const int32_t bt = ctx.kv().block_tokens();
  // Cached prefix blocks nobody else holds are evicted on demand: they count as free.
  const int32_t blocks_free = ctx.kv().pool().n_free() + ctx.kv().stats().blocks_evictable;
  int32_t n_ctx_slot = options.n_ctx_slot;
  // Unified KV: one sequence may fill the whole pool; the others wait or are preempted.
  const int32_t n_filling = options.kv_unified ? 1 : options.n_slots;
  if (n_ctx_slot <= 0) n_ctx_slot = std::min(ctx.n_ctx() / n_filling, (blocks_free / n_filling) * bt);
  const int32_t need_blocks = n_filling * ((n_ctx_slot + bt - 1) / bt);
  if (n_ctx_slot < 2 || need_blocks > blocks_free) {
    return make_error(ErrorKind::kOutOfRange,
                      std::to_string(options.n_slots) + " slots of " + std::to_string(n_ctx_slot) +
                          " tokens do not fit a KV cache of " + std::to_string(ctx.n_ctx()) + " tokens (" +
                          std::to_string(blocks_free) + " free blocks of " + std::to_string(bt) +
                          "); raise the context size or lower --parallel");
  }
  log_info("serving engine started", {{"slots", options.n_slots},
                                      {"n_ctx_slot", n_ctx_slot},
                                      {"kv_unified", options.kv_unified},
                                      {"step_token_budget", options.step_token_budget},
                                      {"model", ctx.model().hparams().arch_name}});
  return std::unique_ptr<ServingEngine>(new ServingEngine(std::make_unique<Impl>(ctx, options, n_ctx_slot)));
}

ServingEngine::ServingEngine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ServingEngine::~ServingEngine() = default;

std::shared_ptr<ResultStream> ServingEngine::submit(GenerationRequest request) {
  return impl_->submit(std::move(request));
}
std::shared_ptr<ResultStream> ServingEngine::submit(EmbeddingInput request) {
  return impl_->submit(std::move(request));
}
EngineMetrics ServingEngine::metrics() const { return impl_->metrics(); }
std::vector<SlotInfo> ServingEngine::slots() const { return impl_->slots(); }
int32_t ServingEngine::n_ctx_slot() const { return impl_->n_ctx_slot(); }
void ServingEngine::stop(const Error& reason) { impl_->stop(reason); }
void ServingEngine::set_kv_limit(size_t bytes) { impl_->set_kv_limit(bytes); }
kv::KvPoolStats ServingEngine::kv_pool_stats() const { return impl_->context().kv().pool().stats(); }
int32_t ServingEngine::max_embedding_tokens() const { return impl_->embed_limit(); }
const InferenceContext& ServingEngine::context() const { return impl_->context(); }

}  // namespace hearth::engine
