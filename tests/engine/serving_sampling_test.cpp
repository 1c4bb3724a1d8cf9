// What the serving engine streams: stop strings held back across token boundaries, EOG and
// n_predict stops, seeded sampling reproducible under concurrency, log-probabilities equal to
// the log-softmax of the raw logits, and embeddings equal to InferenceContext::embed.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/serving_test_util.h"

namespace hearth::engine {
namespace {

std::vector<int32_t> encode(InferenceContext& ctx, const std::string& text) {
  return ctx.tokenizer().encode(text, true, false);
}

TEST_F(ServingEngineTest, StopStringsEndTheTextAndArePartlyHeldBackWhileStreaming) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 2 * 128);
  ASSERT_NE(ctx, nullptr);
  const auto prompt = encode(*ctx, "Once upon a time");
  auto full = generate_from_tokens(*ctx, prompt, greedy_alone(40));
  ASSERT_TRUE(full.ok());
  const std::string stop = "girl named";  // several tokens
  const size_t at = full->text.find(stop);
  ASSERT_NE(at, std::string::npos) << full->text;

  ServingOptions o;
  o.n_slots = 2;
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);
  GenerationRequest req = greedy(prompt, 40);
  req.stop = {"never appears", stop};
  auto stream = engine->submit(req);
  std::string streamed;
  EngineEvent ev;
  std::vector<int32_t> tokens;
  while (stream->next(ev, std::chrono::seconds(60))) {
    streamed += ev.text;
    for (const auto& t : ev.tokens) tokens.push_back(t.token);
    // Nothing emitted may run past the text before the stop string.
    EXPECT_EQ(streamed, full->text.substr(0, streamed.size()));
    EXPECT_LE(streamed.size(), at);
    if (ev.kind != EngineEvent::Kind::kText) break;
  }
  ASSERT_EQ(ev.kind, EngineEvent::Kind::kDone);
  EXPECT_EQ(ev.stop_reason, StopReason::kStopString);
  EXPECT_EQ(ev.stop_word, stop);
  EXPECT_EQ(streamed, full->text.substr(0, at));
  // The tokens that made the stop string are reported; generation stopped right there.
  ASSERT_LE(tokens.size(), full->tokens.size());
  EXPECT_EQ(tokens, std::vector<int32_t>(full->tokens.begin(), full->tokens.begin() + static_cast<long>(tokens.size())));
  EXPECT_GE(ctx->tokenizer().decode(tokens).size(), at + stop.size());
}

TEST_F(ServingEngineTest, EndOfGenerationAndZeroPredictStops) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 128);
  ASSERT_NE(ctx, nullptr);
  ServingOptions o;
  o.n_slots = 1;
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);
  const auto prompt = encode(*ctx, "Once upon a time");
  GenerationRequest eog = greedy(prompt, 16);
  eog.ignore_eos = false;
  eog.sampling.logit_bias = {{ctx->tokenizer().eos_id(), 100.0f}};
  Collected c = collect(*engine->submit(eog));
  ASSERT_EQ(c.final.kind, EngineEvent::Kind::kDone);
  EXPECT_EQ(c.final.stop_reason, StopReason::kEog);
  EXPECT_TRUE(c.tokens.empty());  // the EOG token is not output
  EXPECT_EQ(c.text, "");
  EXPECT_EQ(c.final.timings.predicted_n, 1);

  eog.ignore_eos = true;
  eog.n_predict = 3;
  c = collect(*engine->submit(eog));
  EXPECT_EQ(c.final.stop_reason, StopReason::kLength);
  EXPECT_EQ(c.tokens, std::vector<int32_t>(3, ctx->tokenizer().eos_id()));

  Collected none = collect(*engine->submit(greedy(prompt, 0)));
  ASSERT_EQ(none.final.kind, EngineEvent::Kind::kDone);
  EXPECT_EQ(none.final.stop_reason, StopReason::kLength);
  EXPECT_EQ(none.final.timings.predicted_n, 0);
  EXPECT_EQ(engine->slots()[0].cached_tokens, static_cast<int32_t>(prompt.size()));  // the prompt was cached
}

// Same seed and prompt: same tokens alone, next to other requests, and through generate().
TEST_F(ServingEngineTest, SeededSamplingIsReproducibleUnderConcurrency) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 4 * 128);
  ASSERT_NE(ctx, nullptr);
  const auto prompt = encode(*ctx, "Lily and Ben went to the park");
  GenerationRequest req;
  req.prompt = prompt;
  req.n_predict = 32;
  req.ignore_eos = true;
  req.sampling.temperature = 1.0f;
  req.sampling.top_k = 0;
  req.sampling.top_p = 1.0f;
  req.sampling.seed = 1234;
  GenerateOptions g;
  g.n_predict = req.n_predict;
  g.sampling = req.sampling;
  g.stop_at_eog = false;
  auto alone = generate_from_tokens(*ctx, prompt, g);
  ASSERT_TRUE(alone.ok());

  ServingOptions o;
  o.n_slots = 4;
  o.step_token_budget = 8;
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);
  Collected solo = collect(*engine->submit(req));
  EXPECT_EQ(solo.tokens, alone->tokens);
  EXPECT_EQ(solo.final.seed, 1234u);
  std::vector<std::shared_ptr<ResultStream>> streams;
  for (uint64_t seed : {7u, 8u, 9u}) {
    GenerationRequest other = req;
    other.prompt = encode(*ctx, "One day, a little bird flew over the town and saw");
    other.sampling.seed = seed;
    streams.push_back(engine->submit(other));
  }
  auto again = engine->submit(req);
  Collected together = collect(*again);
  EXPECT_EQ(together.tokens, alone->tokens);
  std::vector<std::vector<int32_t>> others;
  for (auto& s : streams) others.push_back(collect(*s).tokens);
  EXPECT_NE(others[0], others[1]);  // different seeds, different draws
  // An unset seed is drawn at submission and reported; passing it back replays the tokens.
  GenerationRequest unseeded = req;
  unseeded.sampling.seed = 0xFFFFFFFFu;
  Collected drawn = collect(*engine->submit(unseeded));
  GenerationRequest replay = req;
  replay.sampling.seed = drawn.final.seed;
  EXPECT_EQ(collect(*engine->submit(replay)).tokens, drawn.tokens);
}

// logprob = log-softmax of the raw logits (before bias, penalties, temperature, truncation);
// top_logprobs are the best raw candidates, best first.
TEST_F(ServingEngineTest, LogprobsAreTheLogSoftmaxOfTheRawLogits) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 2 * 128);
  ASSERT_NE(ctx, nullptr);
  const auto prompt = encode(*ctx, "The cat sat on the");
  // The prompt's raw logits, computed directly.
  std::vector<double> want_logprob(static_cast<size_t>(ctx->n_vocab()));
  {
    const int32_t seq = ctx->seq_create();
    std::vector<model::BatchToken> batch;
    for (size_t i = 0; i < prompt.size(); ++i) batch.push_back({prompt[i], seq, static_cast<int32_t>(i), i + 1 == prompt.size()});
    std::vector<float> logits;
    ASSERT_TRUE(ctx->decode(batch, logits).ok());
    ctx->seq_free(seq);
    double max_l = -INFINITY, sum = 0;
    for (int32_t v = 0; v < ctx->n_vocab(); ++v) max_l = std::max(max_l, static_cast<double>(logits[static_cast<size_t>(v)]));
    for (int32_t v = 0; v < ctx->n_vocab(); ++v) sum += std::exp(logits[static_cast<size_t>(v)] - max_l);
    for (int32_t v = 0; v < ctx->n_vocab(); ++v) want_logprob[static_cast<size_t>(v)] = logits[static_cast<size_t>(v)] - max_l - std::log(sum);
  }
  ServingOptions o;
  o.n_slots = 2;
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);
  GenerationRequest req;
  req.prompt = prompt;
  req.n_predict = 8;
  req.ignore_eos = true;
  req.logprobs = true;
  req.top_logprobs = 5;
  req.sampling.temperature = 0.7f;
  req.sampling.seed = 99;
  Collected c = collect(*engine->submit(req));
  ASSERT_EQ(c.outputs.size(), 8u);
  const TokenOutput& first = c.outputs[0];
  EXPECT_NEAR(first.logprob, want_logprob[static_cast<size_t>(first.token)], 1e-4);
  for (const TokenOutput& t : c.outputs) {
    ASSERT_EQ(t.top.size(), 5u);
    double p = 0;
    for (size_t i = 0; i < t.top.size(); ++i) {
      p += std::exp(t.top[i].logprob);
      if (i > 0) {
        EXPECT_GE(t.top[i - 1].logprob, t.top[i].logprob);
      }
      if (t.top[i].token == t.token) {
        EXPECT_FLOAT_EQ(t.top[i].logprob, t.logprob);
      }
      EXPECT_EQ(t.top[i].piece, ctx->tokenizer().token_to_piece(t.top[i].token, false));
    }
    EXPECT_LE(p, 1.0 + 1e-5);
    EXPECT_LE(t.logprob, 0.0f);
    EXPECT_LE(t.logprob, t.top[0].logprob);
  }
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_NEAR(first.top[i].logprob, want_logprob[static_cast<size_t>(first.top[i].token)], 1e-4);
  }
  // Greedy: the chosen token is the best candidate.
  req.sampling.temperature = 0;
  Collected g = collect(*engine->submit(req));
  for (const TokenOutput& t : g.outputs) {
    EXPECT_EQ(t.token, t.top[0].token);
    EXPECT_FLOAT_EQ(t.logprob, t.top[0].logprob);
  }
  // Asking for alternatives asks for log-probabilities too.
  req.logprobs = false;
  Collected implied = collect(*engine->submit(req));
  for (const TokenOutput& t : implied.outputs) EXPECT_EQ(t.top.size(), static_cast<size_t>(req.top_logprobs));
  // Without either, no alternatives are reported.
  req.top_logprobs = 0;
  Collected plain = collect(*engine->submit(req));
  for (const TokenOutput& t : plain.outputs) EXPECT_TRUE(t.top.empty());
}

TEST_F(ServingEngineTest, EmbeddingsEqualInferenceContextEmbed) {
  const std::string bert = test::models_dir() + "/random/bert-F32.gguf";
  HEARTH_REQUIRE_FILE(bert);
  auto ctx = open(bert, 512);
  ASSERT_NE(ctx, nullptr);
  const auto a = encode(*ctx, "Once upon a time there was a cat");
  const auto b = encode(*ctx, "the quick brown fox");
  std::vector<int32_t> too_long;
  while (too_long.size() <= 512) too_long.insert(too_long.end(), a.begin(), a.end());
  auto want_a = ctx->embed(a, true);
  auto want_b = ctx->embed(b, false);
  auto want_cut = ctx->embed(std::vector<int32_t>(too_long.begin(), too_long.begin() + 512), true);
  ASSERT_TRUE(want_a.ok() && want_b.ok() && want_cut.ok());

  ServingOptions o;
  o.n_slots = 2;
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);
  ASSERT_EQ(engine->n_ctx_slot(), 256);
  ASSERT_EQ(engine->max_embedding_tokens(), 512);  // an encoder's slots hold no cache
  auto sa = engine->submit(EmbeddingInput{a, true, false});
  auto sb = engine->submit(EmbeddingInput{b, false, false});
  EngineEvent ea, eb;
  ASSERT_TRUE(sa->next(ea, std::chrono::seconds(60)));
  ASSERT_TRUE(sb->next(eb, std::chrono::seconds(60)));
  ASSERT_EQ(ea.kind, EngineEvent::Kind::kEmbedding) << ea.error.to_string();
  ASSERT_EQ(eb.kind, EngineEvent::Kind::kEmbedding) << eb.error.to_string();
  EXPECT_EQ(ea.embedding, *want_a);
  EXPECT_EQ(eb.embedding, *want_b);
  EXPECT_EQ(ea.n_tokens, static_cast<int32_t>(a.size()));

  Collected err = collect(*engine->submit(EmbeddingInput{too_long, true, false}));
  ASSERT_EQ(err.final.kind, EngineEvent::Kind::kError);
  EXPECT_EQ(err.final.error.kind, ErrorKind::kOutOfRange);
  EngineEvent cut;
  ASSERT_TRUE(engine->submit(EmbeddingInput{too_long, true, true})->next(cut, std::chrono::seconds(60)));
  ASSERT_EQ(cut.kind, EngineEvent::Kind::kEmbedding);
  EXPECT_EQ(cut.n_tokens, 512);
  EXPECT_EQ(cut.embedding, *want_cut);
  // An embedding model cannot generate.
  Collected gen = collect(*engine->submit(greedy(a, 4)));
  ASSERT_EQ(gen.final.kind, EngineEvent::Kind::kError);
  EXPECT_EQ(gen.final.error.kind, ErrorKind::kUnsupported);
}

// A decoder model embeds between steps while streams run; full slot caches are dropped to make
// room for the embedding's temporary sequence.
TEST_F(ServingEngineTest, DecoderEmbeddingRunsBetweenStepsNextToStreams) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 2 * 64);
  ASSERT_NE(ctx, nullptr);
  const auto text = encode(*ctx, "Once upon a time there was a little girl named Lily. She loved to play outside. "
                                 "One day she saw a big red ball in the park and ran to get it.");
  ASSERT_GT(text.size(), 48u);  // needs 4 of the pool's 8 blocks
  auto want = ctx->embed(text, true);
  ASSERT_TRUE(want.ok());
  auto stream_prompt = encode(*ctx, "The cat");
  auto want_stream = generate_from_tokens(*ctx, stream_prompt, greedy_alone(20));
  ASSERT_TRUE(want_stream.ok());
  ServingOptions o;
  o.n_slots = 2;
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);
  // Fill slot caches so the pool has no spare blocks, then embed while a stream runs.
  Collected filler = collect(*engine->submit(greedy(encode(*ctx, "Mom said"), -1)));
  ASSERT_EQ(filler.final.stop_reason, StopReason::kContext);
  auto stream = engine->submit(greedy(stream_prompt, 20));
  EngineEvent head = first_event(*stream);  // running: its blocks are taken
  ASSERT_EQ(head.kind, EngineEvent::Kind::kText);
  EngineEvent emb;
  ASSERT_TRUE(engine->submit(EmbeddingInput{text, true, false})->next(emb, std::chrono::seconds(60)));
  ASSERT_EQ(emb.kind, EngineEvent::Kind::kEmbedding) << emb.error.to_string();
  EXPECT_EQ(emb.embedding, *want);
  EXPECT_EQ(engine->slots()[static_cast<size_t>(filler.final.slot)].cached_tokens, 0);  // its cache made room
  std::vector<int32_t> streamed;
  for (const auto& t : head.tokens) streamed.push_back(t.token);
  for (int32_t t : collect(*stream).tokens) streamed.push_back(t);
  EXPECT_EQ(streamed, want_stream->tokens);
}

}  // namespace
}  // namespace hearth::engine
