// Generation loop and perplexity (see generation.h).
#include "engine/generation.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "engine/text_streamer.h"
#include "sampler/sampler_chain.h"

namespace hearth::engine {
namespace {

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

Status run_prompt(InferenceContext& ctx, int32_t seq, const std::vector<int32_t>& tokens, int32_t n_batch,
                  std::vector<float>& logits) {
  const int32_t step = std::max<int32_t>(1, n_batch);
  std::vector<model::BatchToken> batch;
  for (size_t start = 0; start < tokens.size(); start += static_cast<size_t>(step)) {
    const size_t end = std::min(tokens.size(), start + static_cast<size_t>(step));
    batch.clear();
    for (size_t i = start; i < end; ++i) {
      batch.push_back({tokens[i], seq, static_cast<int32_t>(i), i + 1 == tokens.size()});
    }
    HEARTH_TRY(ctx.decode(batch, logits));
  }
  return ok_status();
}

}  // namespace

Result<GenerateResult> generate(InferenceContext& ctx, std::string_view prompt, const GenerateOptions& o,
                                const PieceCallback& on_piece) {
  std::vector<int32_t> tokens = ctx.tokenizer().encode(prompt, o.add_special, o.parse_special);
  return generate_from_tokens(ctx, std::move(tokens), o, on_piece);
}

Result<GenerateResult> generate_from_tokens(InferenceContext& ctx, std::vector<int32_t> prompt_tokens,
                                            const GenerateOptions& o, const PieceCallback& on_piece) {
  GenerateResult r;
  r.prompt_tokens = std::move(prompt_tokens);
  if (r.prompt_tokens.empty()) return make_error(ErrorKind::kInvalidArgument, "the prompt is empty");
  if (static_cast<int32_t>(r.prompt_tokens.size()) >= ctx.n_ctx()) {
    return make_error(ErrorKind::kOutOfRange, "the prompt has " + std::to_string(r.prompt_tokens.size()) +
                                                  " tokens, more than the context of " + std::to_string(ctx.n_ctx()) +
                                                  " allows (raise --ctx-size)");
  }
  HEARTH_ASSIGN(auto grammar, ctx.grammar_constraint(o.grammar));
  HEARTH_ASSIGN(auto chain, sampler::SamplerChain::create(o.sampling, static_cast<size_t>(ctx.n_vocab()),
                                                          static_cast<size_t>(ctx.n_ctx()), std::move(grammar)));
  for (int32_t t : r.prompt_tokens) chain.accept(t);

  const int32_t seq = ctx.seq_create();
  std::vector<float> logits;
  auto t0 = std::chrono::steady_clock::now();
  Status st = run_prompt(ctx, seq, r.prompt_tokens, o.n_batch, logits);
  r.prompt_ms = ms_since(t0);
  if (!st.ok()) {
    ctx.seq_free(seq);
    return st.error();
  }

  auto t1 = std::chrono::steady_clock::now();
  TextStreamer streamer(o.stop);
  r.stop_reason = "length";
  int32_t pos = static_cast<int32_t>(r.prompt_tokens.size());
  for (int32_t i = 0; o.n_predict < 0 || i < o.n_predict; ++i) {
    if (pos >= ctx.n_ctx()) {
      r.stop_reason = "context";
      break;
    }
    int32_t token = chain.sample(logits.data()).token;
    if (token < 0) {
      // Only under a grammar: no token of the vocabulary continues the match.
      if (chain.grammar_complete()) {
        r.stop_reason = "eog";
        break;
      }
      st = make_error(ErrorKind::kUnsupported, "the grammar allows no token of this model's vocabulary at this point");
      break;
    }
    r.tokens.push_back(token);
    if (o.stop_at_eog && ctx.tokenizer().is_eog(token)) {
      r.stop_reason = "eog";
      break;
    }
    std::string emit = streamer.push(ctx.tokenizer().token_to_piece(token, false));
    r.text += emit;
    if (streamer.stopped()) {
      if (on_piece && !emit.empty()) on_piece(emit);
      r.stop_reason = "stop";
      break;
    }
    if (!emit.empty() && on_piece && !on_piece(emit)) {
      r.stop_reason = "cancelled";
      break;
    }
    if (chain.grammar_finished()) {
      r.stop_reason = "eog";
      break;
    }
    model::BatchToken next{token, seq, pos, true};
    st = ctx.decode(std::span<const model::BatchToken>(&next, 1), logits);
    if (!st.ok()) break;
    ++pos;
  }
  if (std::string rest = streamer.flush(); !rest.empty()) {
    r.text += rest;
    if (on_piece) on_piece(rest);
  }
  r.generation_ms = ms_since(t1);
  ctx.seq_free(seq);
  if (!st.ok()) return st.error();
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
