// A serving slot's request lifecycle: prompt progress, sampling, streaming, stop conditions
// (see serving_slot.h).
#include "engine/serving_slot.h"

#include "engine/inference_context.h"
#include "engine/tool_call_grammar.h"
#include "util/log.h"

namespace hearth::engine {
namespace {

double ms_between(EngineClock::time_point a, EngineClock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

void ServingSlot::start(int64_t request_id, PreparedCompletion prepared, std::shared_ptr<ResultStream> stream,
                        EngineClock::time_point submitted, uint64_t arrival, int32_t reuse) {
  // The reused tokens are the prompt's first ones (from this slot's cache or the shared one).
  cached_.assign(prepared.request.prompt.begin(), prepared.request.prompt.begin() + reuse);
  active_.emplace(std::move(prepared));
  Active& a = *active_;
  a.id = request_id;
  a.stream = std::move(stream);
  a.arrival = arrival;
  a.n_prompt_done = reuse;
  a.submitted = submitted;
  a.started = EngineClock::now();
  a.timings.prompt_n = static_cast<int32_t>(a.prep.request.prompt.size());
  a.timings.cached_n = reuse;
  a.timings.truncated_n = a.prep.truncated_n;
  a.timings.queue_ms = ms_between(submitted, a.started);
  // Penalties and DRY look at the whole prompt, cached or not.
  for (int32_t t : a.prep.request.prompt) a.prep.chain.accept(t);
}

void ServingSlot::drop_cache(int32_t n) {
  if (static_cast<size_t>(n) < cached_.size()) cached_.resize(static_cast<size_t>(n));
}

int32_t ServingSlot::prompt_pending() const {
  return static_cast<int32_t>(active_->feed.size()) - active_->n_prompt_done;
}

void ServingSlot::preempt() {
  Active& a = *active_;
  std::vector<int32_t> feed = cached_;
  if (a.pending_token >= 0) feed.push_back(a.pending_token);
  feed.insert(feed.end(), a.feed.begin() + a.n_prompt_done, a.feed.end());
  a.feed = std::move(feed);
  a.n_prompt_done = 0;
  a.pending_token = -1;
  a.waiting_for_kv = true;
  ++a.preemptions;
  cached_.clear();
}

void ServingSlot::resume(int32_t reuse) {
  Active& a = *active_;
  a.waiting_for_kv = false;
  a.n_prompt_done = reuse;
  cached_.assign(a.feed.begin(), a.feed.begin() + reuse);
}

int32_t ServingSlot::expected_tokens(int32_t growth, int32_t n_ctx_slot) const {
  const GenerationRequest& req = active_->prep.request;
  const int64_t more = req.n_predict >= 0 ? req.n_predict : static_cast<int64_t>(active_->n_generated) + growth;
  return static_cast<int32_t>(std::min<int64_t>(static_cast<int64_t>(req.prompt.size()) + more, sequence_context(req, n_ctx_slot)));
}

void ServingSlot::on_decoded(int32_t n_prompt, bool decoded_pending) {
  Active& a = *active_;
  const auto& feed = a.feed;
  for (int32_t i = 0; i < n_prompt; ++i) cached_.push_back(feed[static_cast<size_t>(a.n_prompt_done + i)]);
  a.n_prompt_done += n_prompt;
  if (decoded_pending) {
    cached_.push_back(a.pending_token);
    a.pending_token = -1;
  }
}

SampleOutcome ServingSlot::on_logits(const float* logits, const Tokenizer& tokenizer, int32_t n_ctx_slot,
                                     EngineClock::time_point now, uint64_t use_stamp, FinalEvents& finals) {
  Active& a = *active_;
  const GenerationRequest& req = a.prep.request;
  n_ctx_slot = sequence_context(req, n_ctx_slot);
  SampleOutcome out;
  const int32_t in_cache = static_cast<int32_t>(cached_.size());
  if (req.n_predict >= 0 && a.n_generated >= req.n_predict) {
    // n_predict 0: the prompt is evaluated (and cached), nothing is generated.
    if (a.n_generated == 0) a.timings.prompt_ms = ms_between(a.started, now);
    finish_with_text(StopReason::kLength, a.streamer.flush(), now, use_stamp, finals);
    out.finished = true;
    out.reason = StopReason::kLength;
    return out;
  }
  if (in_cache >= n_ctx_slot && req.context_shift) {
    // llama-server's arithmetic: keep n_keep tokens plus BOS (n_keep < 0: the whole prompt),
    // discard half of the rest.
    const bool bos = !cached_.empty() && cached_.front() == tokenizer.bos_id();
    const int32_t asked = req.n_keep < 0 ? static_cast<int32_t>(req.prompt.size()) : req.n_keep + (bos ? 1 : 0);
    const int32_t keep = std::clamp(asked, 0, in_cache);
    const int32_t discard = (in_cache - keep) / 2;
    if (discard > 0) {
      std::vector<int32_t> feed(cached_.begin(), cached_.begin() + keep);
      feed.insert(feed.end(), cached_.begin() + keep + discard, cached_.end());
      a.feed = std::move(feed);
      a.n_prompt_done = keep;
      cached_.resize(static_cast<size_t>(keep));
      out.shift_keep = keep;
      return out;
    }
  }
  if (in_cache >= n_ctx_slot) {
    finish_with_text(StopReason::kContext, a.streamer.flush(), now, use_stamp, finals);
    out.finished = true;
    out.reason = StopReason::kContext;
    return out;
  }

  // At the thinking budget the closing text is written one token per step, then sampling resumes.
  if (!a.forcing && a.thinking.due() && !req.thinking_close.empty()) a.forcing = true;
  // A lazy tool-call grammar's trigger written while reasoning is not a call.
  a.prep.chain.set_triggers_paused(a.thinking.inside());
  const sampler::SampleResult s = a.forcing ? a.prep.chain.force(req.thinking_close[a.n_forced++], logits)
                                            : a.prep.chain.sample(logits);
  if (a.forcing && a.n_forced == req.thinking_close.size()) a.forcing = false;
  if (s.token < 0) {
    // Only under a grammar: no token of the vocabulary continues the match here.
    if (a.prep.chain.grammar_complete()) {
      finish_with_text(StopReason::kEog, a.streamer.flush(), now, use_stamp, finals);
      out.reason = StopReason::kEog;
    } else {
      fail(make_error(ErrorKind::kUnsupported, "the grammar allows no token of this model's vocabulary at this point"),
           use_stamp, finals);
    }
    out.finished = true;
    return out;
  }
  out.sampled = true;
  out.first = a.n_generated == 0;
  out.since_previous_s = std::chrono::duration<double>(now - (out.first ? a.submitted : a.last_token)).count();
  if (out.first) {
    a.first_token = now;
    a.timings.prompt_ms = ms_between(a.started, now);
    a.timings.ttft_ms = ms_between(a.submitted, now);
  }
  a.last_token = now;
  ++a.n_generated;

  StopReason reason = StopReason::kNone;
  std::string text;
  if (!req.ignore_eos && tokenizer.is_eog(s.token)) {
    // The end-of-generation token is counted but is not part of the output.
    reason = StopReason::kEog;
    a.eog_token = s.token;
    text = a.streamer.flush();
  } else {
    TokenOutput t;
    t.token = s.token;
    const bool markers = req.print_markers || !req.grammar.empty();
    t.piece = tokenizer.token_to_piece(s.token, markers && is_printed_marker(tokenizer, s.token));
    a.thinking.on_token(t.piece);
    t.logprob = s.logprob;
    if (req.logprobs) {
      for (const auto& alt : s.top) t.top.push_back({alt.id, tokenizer.token_to_piece(alt.id, false), alt.logprob});
    }
    text = a.streamer.push(t.piece);
    a.unsent.push_back(std::move(t));
    if (a.streamer.stopped()) {
      reason = StopReason::kStopString;
    } else if (a.prep.chain.grammar_finished()) {
      // The output is a complete match and the grammar allows nothing after it.
      reason = StopReason::kEog;
    } else if (req.n_predict >= 0 && a.n_generated >= req.n_predict) {
      reason = StopReason::kLength;
    } else if (in_cache + 1 >= n_ctx_slot && !req.context_shift) {
      // The token would take the slot's last position; the next one could not be sampled
      // (with context_shift it is decoded there, and the shift comes with its logits).
      reason = StopReason::kContext;
    }
    if (reason != StopReason::kNone && reason != StopReason::kStopString) text += a.streamer.flush();
  }
  if (reason != StopReason::kNone) {
    finish_with_text(reason, std::move(text), now, use_stamp, finals);
    out.finished = true;
    out.reason = reason;
    return out;
  }
  a.pending_token = s.token;
  if (!text.empty()) {
    EngineEvent ev;
    ev.kind = EngineEvent::Kind::kText;
    ev.text = std::move(text);
    ev.tokens = std::move(a.unsent);
    ev.slot = id_;
    a.unsent.clear();
    a.stream->push(std::move(ev));
  }
  return out;
}

void ServingSlot::finish(StopReason reason, EngineClock::time_point now, uint64_t use_stamp, FinalEvents& finals) {
  finish_with_text(reason, active_->streamer.flush(), now, use_stamp, finals);
}

void ServingSlot::finish_with_text(StopReason reason, std::string text, EngineClock::time_point now,
                                   uint64_t use_stamp, FinalEvents& finals) {
  Active& a = *active_;
  a.timings.predicted_n = a.n_generated;
  a.timings.reasoning_n = a.thinking.reasoning_tokens();
  if (a.n_generated > 0) a.timings.predicted_ms = ms_between(a.first_token, a.last_token);
  EngineEvent ev;
  ev.kind = EngineEvent::Kind::kDone;
  ev.text = std::move(text);
  ev.tokens = std::move(a.unsent);
  ev.stop_reason = reason;
  if (reason == StopReason::kStopString) ev.stop_word = a.streamer.stop_word();
  ev.timings = a.timings;
  ev.slot = id_;
  ev.eog_token = a.eog_token;
  ev.seed = a.prep.chain.seed();
  log_info("request done", {{"slot", id_},
                            {"task", static_cast<long long>(a.id)},
                            {"stop", stop_reason_name(reason)},
                            {"prompt_n", a.timings.prompt_n},
                            {"cached_n", a.timings.cached_n},
                            {"predicted_n", a.timings.predicted_n},
                            {"prompt_ms", a.timings.prompt_ms},
                            {"predicted_ms", a.timings.predicted_ms},
                            {"total_ms", ms_between(a.submitted, now)},
                            {"tag", a.prep.request.tag}});
  finals.push_back({std::move(a.stream), std::move(ev)});
  last_used_ = use_stamp;
  active_.reset();
}

void ServingSlot::fail(const Error& error, uint64_t use_stamp, FinalEvents& finals) {
  Active& a = *active_;
  log_error("request failed", {{"slot", id_}, {"task", static_cast<long long>(a.id)}, {"error", error.to_string()}});
  EngineEvent ev;
  ev.kind = EngineEvent::Kind::kError;
  ev.error = error;
  ev.slot = id_;
  finals.push_back({std::move(a.stream), std::move(ev)});
  last_used_ = use_stamp;
  active_.reset();
}

SlotInfo ServingSlot::info(int32_t n_ctx_slot) const {
  SlotInfo s;
  s.id = id_;
  s.busy = busy();
  s.n_ctx = n_ctx_slot;
  s.cached_tokens = static_cast<int32_t>(cached_.size());
  if (active_) {
    s.request_id = active_->id;
    s.prompt_pending = prompt_pending();
    s.generated = active_->n_generated;
  }
  return s;
}

bool drop_least_recent_idle_sequence(std::vector<ServingSlot>& slots, InferenceContext& ctx) {
  ServingSlot* victim = nullptr;
  for (ServingSlot& s : slots) {
    if (!s.busy() && !s.cached().empty() && (victim == nullptr || s.last_used() < victim->last_used())) victim = &s;
  }
  if (victim == nullptr) return false;
  (void)ctx.seq_truncate(victim->seq(), 0);
  victim->drop_cache(0);
  return true;
}

}  // namespace hearth::engine
