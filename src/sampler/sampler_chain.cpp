// The sampler chain for one sequence (see sampler_chain.h).
#include "sampler/sampler_chain.h"

#include <algorithm>
#include <cmath>

#include "kernels/ops.h"
#include "sampler/samplers.h"

namespace hearth::sampler {

Result<SamplerChain> SamplerChain::create(const SamplerParams& params, size_t n_vocab, size_t history_capacity,
                                          GrammarConstraint grammar) {
  HEARTH_TRY(validate_sampler_params(params));
  if (n_vocab == 0) return make_error(ErrorKind::kInvalidArgument, "sampler needs a vocabulary of at least 1 token");
  for (const auto& [id, bias] : params.logit_bias) {
    if (id < 0 || static_cast<size_t>(id) >= n_vocab) {
      return make_error(ErrorKind::kInvalidArgument,
                        "logit_bias names token " + std::to_string(id) + ", outside the vocabulary of " +
                            std::to_string(n_vocab));
    }
  }
  if ((grammar.grammar == nullptr) != (grammar.vocab == nullptr)) {
    return make_error(ErrorKind::kInvalidArgument, "a grammar needs the vocabulary's token bytes (and they need a grammar)");
  }
  if (grammar.vocab && grammar.vocab->n_vocab() != n_vocab) {
    return make_error(ErrorKind::kInvalidArgument, "the grammar's vocabulary has " + std::to_string(grammar.vocab->n_vocab()) +
                                                       " tokens, the sampler " + std::to_string(n_vocab));
  }
  return SamplerChain(params, n_vocab, history_capacity, std::move(grammar));
}

SamplerChain::SamplerChain(const SamplerParams& params, size_t n_vocab, size_t history_capacity,
                           GrammarConstraint grammar)
    : params_(params),
      n_vocab_(n_vocab),
      history_capacity_(std::max<size_t>(history_capacity, 1)),
      seed_(params.seed == 0xFFFFFFFFu ? std::random_device{}() : params.seed),
      rng_(seed_),
      mirostat_mu_(2.0f * params.mirostat_tau) {
  candidates_.items.resize(n_vocab);
  counts_.assign(n_vocab, 0);
  history_.reserve(2 * history_capacity_);
  top_.resize(static_cast<size_t>(params.n_probs));
  logprob_scratch_.resize(params.n_probs > 0 ? n_vocab : 0);
  dry_hits_.reserve(64);
  if (grammar.grammar) {
    grammar_.emplace(std::move(grammar.grammar));
    grammar_vocab_ = std::move(grammar.vocab);
    allowed_.assign((n_vocab + 63) / 64, 0);
    triggers_ = std::move(grammar.triggers);
    grammar_active_ = triggers_.empty();
    for (const auto& t : triggers_) max_trigger_ = std::max(max_trigger_, t.text.size());
  }
}

std::span<const int32_t> SamplerChain::history() const {
  return std::span<const int32_t>(history_.data() + history_begin_, history_.size() - history_begin_);
}

void SamplerChain::accept(int32_t token) {
  if (history_.size() - history_begin_ == history_capacity_) ++history_begin_;
  if (history_.size() == history_.capacity()) {
    history_.erase(history_.begin(), history_.begin() + static_cast<std::ptrdiff_t>(history_begin_));
    history_begin_ = 0;
  }
  history_.push_back(token);
}

void SamplerChain::reset() {
  history_.clear();
  history_begin_ = 0;
  mirostat_mu_ = 2.0f * params_.mirostat_tau;
  if (grammar_) grammar_->reset();
  grammar_active_ = triggers_.empty();
  watched_.clear();
  only_space_before_ = true;
  triggers_paused_ = false;
}

void SamplerChain::apply_stage(SamplerKind kind) {
  auto& c = candidates_;
  const auto& p = params_;
  std::span<const int32_t> hist = history();
  switch (kind) {
    case SamplerKind::kPenalties: {
      size_t n = p.repeat_last_n < 0 ? hist.size() : std::min(hist.size(), static_cast<size_t>(p.repeat_last_n));
      apply_penalties(c, hist.subspan(hist.size() - n), p.repeat_penalty, p.presence_penalty, p.frequency_penalty,
                      counts_);
      break;
    }
    case SamplerKind::kDry: {
      size_t n = p.dry_last_n < 0 ? hist.size() : std::min(hist.size(), static_cast<size_t>(p.dry_last_n));
      apply_dry(c, hist.subspan(hist.size() - n), p.dry_multiplier, p.dry_base, p.dry_allowed_length, p.dry_breakers,
                dry_hits_);
      break;
    }
    case SamplerKind::kTopNSigma: apply_top_n_sigma(c, p.top_n_sigma); break;
    case SamplerKind::kTopK: apply_top_k(c, p.top_k, p.min_keep); break;
    case SamplerKind::kTypicalP: apply_typical_p(c, p.typical_p, p.min_keep); break;
    case SamplerKind::kTopP: apply_top_p(c, p.top_p, p.min_keep); break;
    case SamplerKind::kMinP: apply_min_p(c, p.min_p, p.min_keep); break;
    case SamplerKind::kXtc: apply_xtc(c, p.xtc_probability, p.xtc_threshold, p.min_keep, rng_); break;
    case SamplerKind::kTemperature:
      apply_dynamic_temperature(c, p.temperature, p.dynatemp_range, p.dynatemp_exponent);
      break;
  }
}

namespace {

bool all_space(std::string_view text) {
  return text.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

}  // namespace

bool SamplerChain::trigger_allows(int32_t token) {
  if (grammar_vocab_->is_eog(token)) return true;
  const std::string_view piece = grammar_vocab_->piece(token);
  trigger_match_.assign(watched_).append(piece);
  size_t best = std::string::npos;
  for (const auto& t : triggers_) {
    size_t at = trigger_match_.find(t.text);
    if (at == std::string::npos) continue;
    if (t.at_start && !(only_space_before_ && all_space(std::string_view(trigger_match_).substr(0, at)))) continue;
    best = std::min(best, at);
  }
  if (best == std::string::npos) {
    trigger_match_.clear();
    return true;
  }
  trigger_match_.erase(0, best);
  return grammar_->can_accept_bytes(trigger_match_);
}

void SamplerChain::watch_trigger(int32_t token) {
  if (!trigger_match_.empty()) {
    grammar_->accept_bytes(trigger_match_);  // trigger_allows() checked it
    grammar_active_ = true;
    trigger_match_.clear();
    watched_.clear();
    return;
  }
  if (grammar_vocab_->is_eog(token)) return;
  watched_.append(grammar_vocab_->piece(token));
  // Keep only what a trigger could still start in: its longest length less one byte.
  const size_t keep = max_trigger_ > 0 ? max_trigger_ - 1 : 0;
  if (watched_.size() > keep) {
    const size_t drop = watched_.size() - keep;
    only_space_before_ = only_space_before_ && all_space(std::string_view(watched_).substr(0, drop));
    watched_.erase(0, drop);
  }
}

int32_t SamplerChain::draw(const float* logits, std::span<const int32_t> banned) {
  auto& c = candidates_;
  c.load(logits, n_vocab_);
  for (const auto& [id, bias] : params_.logit_bias) c.items[static_cast<size_t>(id)].logit += bias;
  if (!banned.empty()) {
    for (int32_t id : banned) c.items[static_cast<size_t>(id)].id = -1;
    size_t kept = 0;
    for (size_t i = 0; i < c.size; ++i) {
      if (c.items[i].id >= 0) c.items[kept++] = c.items[i];
    }
    c.size = kept;
    if (c.size == 0) return -1;
  }
  if (grammar_active()) {
    grammar_->fill_mask(*grammar_vocab_, allowed_);
    apply_token_mask(c, allowed_);
    if (c.size == 0) return -1;
  }
  if (params_.temperature <= 0.0f) {
    // Greedy: penalties and DRY still shape the logits, nothing random runs.
    for (SamplerKind kind : params_.order) {
      if (kind == SamplerKind::kPenalties || kind == SamplerKind::kDry) apply_stage(kind);
    }
    return c.items[argmax_index(c)].id;
  }
  if (params_.mirostat == 1 || params_.mirostat == 2) {
    for (SamplerKind kind : params_.order) {
      if (kind == SamplerKind::kPenalties || kind == SamplerKind::kDry) apply_stage(kind);
    }
    apply_temperature(c, params_.temperature);
    return params_.mirostat == 1
               ? sample_mirostat_v1(c, params_.mirostat_tau, params_.mirostat_eta, n_vocab_, mirostat_mu_, rng_)
               : sample_mirostat_v2(c, params_.mirostat_tau, params_.mirostat_eta, mirostat_mu_, rng_);
  }
  for (SamplerKind kind : params_.order) apply_stage(kind);
  return c.items[sample_index(c, rng_)].id;
}

void SamplerChain::set_triggers_paused(bool paused) {
  if (paused && !triggers_paused_) watched_.clear();
  triggers_paused_ = paused;
}

SampleResult SamplerChain::sample(const float* logits) {
  int32_t chosen = draw(logits, {});
  if (chosen < 0) return SampleResult{};
  if (grammar_ && !grammar_active_ && !triggers_paused_) {
    // A lazy grammar: a token that opens a call the grammar cannot continue is drawn again
    // without it (rare: only tokens that complete a trigger are checked). After kMaxRedraws
    // the last draw stands and the grammar stays off (its trigger is left as text).
    constexpr size_t kMaxRedraws = 32;
    banned_.clear();
    bool allowed = trigger_allows(chosen);
    while (!allowed && banned_.size() < kMaxRedraws) {
      banned_.push_back(chosen);
      const int32_t next = draw(logits, banned_);
      if (next < 0) break;
      chosen = next;
      allowed = trigger_allows(chosen);
    }
    if (!allowed) trigger_match_.clear();
  }
  SampleResult out;
  out.token = chosen;
  compute_logprobs(logits, chosen, out);
  accept(chosen);
  if (grammar_) {
    if (grammar_active_) {
      grammar_->accept_token(*grammar_vocab_, chosen);  // allowed by the mask, so it matches
    } else if (!triggers_paused_) {
      watch_trigger(chosen);
    }
  }
  return out;
}

SampleResult SamplerChain::force(int32_t token, const float* logits) {
  SampleResult out;
  out.token = token;
  compute_logprobs(logits, token, out);
  accept(token);
  if (grammar_) {
    if (grammar_active_) {
      grammar_->accept_token(*grammar_vocab_, token);
    } else if (!triggers_paused_) {
      if (!trigger_allows(token)) trigger_match_.clear();
      watch_trigger(token);
    }
  }
  return out;
}

void SamplerChain::compute_logprobs(const float* logits, int32_t chosen, SampleResult& out) {
  // log Z by the kernels' vector softmax (its sum is kept in double): the largest logit's
  // probability is exp(0) / sum, so log Z = max - log(p_max). One scalar double exp per
  // vocabulary entry cost ~1 ms a token on a 152k vocabulary, every token of every request.
  size_t arg_max = 0;
  for (size_t i = 1; i < n_vocab_; ++i) {
    if (logits[i] > logits[arg_max]) arg_max = i;
  }
  prob_scratch_.assign(logits, logits + n_vocab_);
  kernels::softmax(prob_scratch_.data(), static_cast<int64_t>(n_vocab_));
  const float log_z = logits[arg_max] - std::log(prob_scratch_[arg_max]);
  out.logprob = logits[chosen] - log_z;
  if (top_.empty()) return;
  for (size_t i = 0; i < n_vocab_; ++i) logprob_scratch_[i] = {static_cast<int32_t>(i), logits[i]};
  const size_t k = std::min(top_.size(), n_vocab_);
  std::partial_sort(logprob_scratch_.begin(), logprob_scratch_.begin() + static_cast<std::ptrdiff_t>(k),
                    logprob_scratch_.end(), [](const TokenLogprob& a, const TokenLogprob& b) {
                      return a.logprob > b.logprob || (a.logprob == b.logprob && a.id < b.id);
                    });
  for (size_t i = 0; i < k; ++i) top_[i] = {logprob_scratch_[i].id, logprob_scratch_[i].logprob - log_z};
  out.top = std::span<const TokenLogprob>(top_.data(), k);
}

}  // namespace hearth::sampler
