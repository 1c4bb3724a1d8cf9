// One-shot generation on a one-slot serving engine, and perplexity (see generation.h).
#include "engine/generation.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "engine/serving_engine.h"

namespace hearth::engine {
Result<GenerateResult> generate(InferenceContext& ctx, std::string_view prompt, const GenerateOptions& o,
                                const PieceCallback& on_piece) {
  std::vector<int32_t> tokens = ctx.tokenizer().encode(prompt, o.add_special, o.parse_special);
  return generate_from_tokens(ctx, std::move(tokens), o, on_piece);
}

// One request on a serving engine of one slot: the same admission checks, prompt chunking,
// sampling, stop strings, EOS, length limits, UTF-8 hold-back and timings as a served request.
Result<GenerateResult> generate_from_tokens(InferenceContext& ctx, std::vector<int32_t> prompt_tokens,
                                            const GenerateOptions& o, const PieceCallback& on_piece) {
  GenerateResult r;
  r.prompt_tokens = prompt_tokens;
  ServingOptions serving;
  serving.n_slots = 1;
  serving.step_token_budget = std::max<int32_t>(1, o.n_batch);
  serving.max_queue = 1;
  HEARTH_ASSIGN(std::unique_ptr<ServingEngine> engine, ServingEngine::create(ctx, serving));
  GenerationRequest request;
  request.prompt = std::move(prompt_tokens);
  request.sampling = o.sampling;
  request.n_predict = o.n_predict;
  request.stop = o.stop;
  request.ignore_eos = !o.stop_at_eog;
  request.grammar = o.grammar;
  request.cache_prompt = false;
  request.tag = "generate";
  std::shared_ptr<ResultStream> stream = engine->submit(std::move(request));
  if (std::optional<Error> rejected = stream->rejection()) return *rejected;

  bool cancelled = false;
  EngineEvent event;
  for (;;) {
    if (!stream->next(event, std::chrono::milliseconds(100))) continue;
    if (event.kind == EngineEvent::Kind::kError) return event.error;
    if (cancelled) {
      // The consumer stopped reading; what the engine made before it saw the cancel is dropped.
      if (event.kind == EngineEvent::Kind::kDone) break;
      continue;
    }
    for (const TokenOutput& t : event.tokens) r.tokens.push_back(t.token);
    r.text += event.text;
    if (event.kind == EngineEvent::Kind::kDone) {
      if (event.eog_token >= 0) r.tokens.push_back(event.eog_token);
      if (on_piece && !event.text.empty()) on_piece(event.text);
      r.stop_reason = stop_reason_name(event.stop_reason);
      r.prompt_ms = event.timings.prompt_ms;
      r.generation_ms = event.timings.predicted_ms;
      break;
    }
    if (on_piece && !event.text.empty() && !on_piece(event.text)) {
      cancelled = true;
      r.stop_reason = stop_reason_name(StopReason::kCancelled);
      stream->cancel();
    }
  }
  return r;
}

Result<PerplexityResult> perplexity(InferenceContext& ctx, const std::vector<int32_t>& tokens, int32_t n_chunk) {
  if (n_chunk < 4) return make_error(ErrorKind::kInvalidArgument, "perplexity needs a context of at least 4 tokens");
  if (n_chunk > ctx.n_ctx()) {
    return make_error(ErrorKind::kInvalidArgument, "chunk size " + std::to_string(n_chunk) + " exceeds the context " +
                                                       std::to_string(ctx.n_ctx()));
  }
  const int32_t n_chunks = static_cast<int32_t>(tokens.size()) / n_chunk;
  if (n_chunks == 0) {
    return make_error(ErrorKind::kInvalidArgument, "the text has " + std::to_string(tokens.size()) +
                                                       " tokens, fewer than one chunk of " + std::to_string(n_chunk));
  }
  const int32_t bos = ctx.tokenizer().bos_id();
  const int32_t first = n_chunk / 2;
  const size_t n_vocab = static_cast<size_t>(ctx.n_vocab());
  PerplexityResult r;
  double nll = 0.0;
  std::vector<float> logits;
  std::vector<model::BatchToken> batch;
  for (int32_t c = 0; c < n_chunks; ++c) {
    const int32_t seq = ctx.seq_create();
    batch.clear();
    for (int32_t i = 0; i < n_chunk; ++i) {
      int32_t tok = tokens[static_cast<size_t>(c * n_chunk + i)];
      if (i == 0 && bos >= 0) tok = bos;
      batch.push_back({tok, seq, i, i >= first && i < n_chunk - 1});
    }
    Status st = ctx.decode(batch, logits);
    ctx.seq_free(seq);
    HEARTH_TRY(st);
    for (int32_t i = first; i < n_chunk - 1; ++i) {
      const float* row = logits.data() + static_cast<size_t>(i - first) * n_vocab;
      double max_l = *std::max_element(row, row + n_vocab);
      double sum = 0.0;
      for (size_t v = 0; v < n_vocab; ++v) sum += std::exp(static_cast<double>(row[v]) - max_l);
      const int32_t target = tokens[static_cast<size_t>(c * n_chunk + i + 1)];
      nll -= static_cast<double>(row[target]) - max_l - std::log(sum);
      ++r.n_scored;
    }
    r.running_ppl.push_back(std::exp(nll / r.n_scored));
  }
  r.n_chunks = n_chunks;
  r.ppl = std::exp(nll / r.n_scored);
  return r;
}

}  // namespace hearth::engine
