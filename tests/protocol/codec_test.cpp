// The protocol's serialisation: every field of every type survives a round trip (including
// what JSON cannot hold directly: a banned token's -inf bias, token pieces that are part of a
// UTF-8 character), and bad messages are errors that name the field.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "protocol/codec.h"

namespace hearth::protocol {
namespace {

CompletionRequest full_request() {
  CompletionRequest q;
  q.model = "qwen3:8b";
  PromptSource chat;
  chat.kind = PromptSource::Kind::kChat;
  chat.chat = nlohmann::ordered_json::parse(R"({"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function"}]})");
  chat.prefix_tokens = {1, 2, 3};
  chat.add_special = false;
  chat.untemplated_text = "hi";
  PromptSource fim;
  fim.kind = PromptSource::Kind::kText;
  fim.text = "def f(";
  fim.fill_in_middle = true;
  fim.suffix = "):";
  PromptSource ids;
  ids.kind = PromptSource::Kind::kTokens;
  ids.tokens = {7, 8, 9};
  PromptSource go;
  go.kind = PromptSource::Kind::kGoTemplate;
  go.text = "{{ .System }} {{ .Prompt }}";
  go.template_fields = {{"System", "s"}, {"Prompt", "p"}};
  q.prompts = {chat, fim, ids, go};
  q.n_choices = 3;
  q.sampling.seed = 42;
  q.sampling.temperature = 0.25f;
  q.sampling.top_k = 7;
  q.sampling.min_keep = 2;
  q.sampling.logit_bias = {{5, -std::numeric_limits<float>::infinity()}, {6, 1.5f}};
  q.sampling.order = {SamplerKind::kTemperature, SamplerKind::kTopK};
  q.dry_sequence_breakers = {"\n", "::"};
  q.n_predict = 99;
  q.stop = {"END", "\n\n"};
  q.ignore_eos = true;
  q.constraint.kind = OutputConstraint::Kind::kJsonSchema;
  q.constraint.field = "format";
  q.constraint.schema = nlohmann::ordered_json::parse(R"({"type":"object","required":["a"]})");
  q.logprobs = true;
  q.top_logprobs = 4;
  q.truncate = true;
  q.n_keep = 5;
  q.cache_prompt = false;
  q.slot = 1;
  q.num_ctx = 8192;
  q.keep_alive_ms = -1;
  q.tag = "/api/chat conversation=x";
  return q;
}

TEST(ProtocolCodec, CompletionRequestRoundTrips) {
  const CompletionRequest q = full_request();
  const std::string bytes = encode(q);
  auto back = decode_completion_request(bytes);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(encode(*back), bytes);
  EXPECT_EQ(back->model, q.model);
  ASSERT_EQ(back->prompts.size(), 4u);
  EXPECT_EQ(back->prompts[0].chat, q.prompts[0].chat);
  EXPECT_EQ(back->prompts[0].prefix_tokens, q.prompts[0].prefix_tokens);
  EXPECT_FALSE(back->prompts[0].add_special);
  EXPECT_EQ(back->prompts[0].untemplated_text, "hi");
  EXPECT_TRUE(back->prompts[1].fill_in_middle);
  EXPECT_EQ(back->prompts[1].suffix, "):");
  EXPECT_EQ(back->prompts[2].tokens, q.prompts[2].tokens);
  EXPECT_EQ(back->prompts[3].kind, PromptSource::Kind::kGoTemplate);
  EXPECT_EQ(back->prompts[3].template_fields, q.prompts[3].template_fields);
  EXPECT_EQ(back->n_choices, 3);
  EXPECT_EQ(back->sampling.seed, 42u);
  EXPECT_EQ(back->sampling.temperature, 0.25f);
  EXPECT_EQ(back->sampling.min_keep, 2u);
  ASSERT_EQ(back->sampling.logit_bias.size(), 2u);
  EXPECT_TRUE(std::isinf(back->sampling.logit_bias[0].second) && back->sampling.logit_bias[0].second < 0);
  EXPECT_EQ(back->sampling.order, q.sampling.order);
  EXPECT_EQ(back->dry_sequence_breakers, q.dry_sequence_breakers);
  EXPECT_EQ(back->stop, q.stop);
  EXPECT_EQ(back->constraint.kind, OutputConstraint::Kind::kJsonSchema);
  EXPECT_EQ(back->constraint.schema, q.constraint.schema);
  EXPECT_EQ(back->top_logprobs, 4);
  EXPECT_EQ(back->keep_alive_ms, -1);
  EXPECT_EQ(back->num_ctx, 8192);
  EXPECT_EQ(back->tag, q.tag);
}

TEST(ProtocolCodec, EventsCarryBytesAndNonFiniteNumbers) {
  Event e;
  e.kind = Event::Kind::kDone;
  e.text = "caf\xc3";  // half a UTF-8 character
  e.tokens.push_back({12, "\xa9", -std::numeric_limits<float>::infinity(), {{13, "x", -2.0f}}});
  e.stop_reason = StopReason::kStopString;
  e.stop_word = "END";
  e.timings.prompt_n = 10;
  e.timings.ttft_ms = 12.5;
  e.timings.reasoning_n = 7;
  e.slot = 2;
  e.eog_token = 2;
  e.seed = 0xFFFFFFFFull;
  auto back = decode_event(encode(e));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->text, e.text);
  ASSERT_EQ(back->tokens.size(), 1u);
  EXPECT_EQ(back->tokens[0].piece, "\xa9");
  EXPECT_TRUE(std::isinf(back->tokens[0].logprob));
  ASSERT_EQ(back->tokens[0].top.size(), 1u);
  EXPECT_EQ(back->tokens[0].top[0].token, 13);
  EXPECT_EQ(back->stop_reason, StopReason::kStopString);
  EXPECT_EQ(back->timings.ttft_ms, 12.5);
  EXPECT_EQ(back->timings.reasoning_n, 7);
  EXPECT_EQ(back->seed, 0xFFFFFFFFull);
  EXPECT_EQ(back->eog_token, 2);

  Event err;
  err.kind = Event::Kind::kError;
  err.error = make_error(ErrorKind::kUnavailable, "the queue is full");
  auto err_back = decode_event(encode(err));
  ASSERT_TRUE(err_back.ok());
  EXPECT_EQ(err_back->error.kind, ErrorKind::kUnavailable);
  EXPECT_EQ(err_back->error.message, "the queue is full");

  Event emb;
  emb.kind = Event::Kind::kEmbedding;
  emb.embedding = {0.5f, -1.0f, std::nanf("")};
  emb.n_tokens = 3;
  auto emb_back = decode_event(encode(emb));
  ASSERT_TRUE(emb_back.ok());
  ASSERT_EQ(emb_back->embedding.size(), 3u);
  EXPECT_EQ(emb_back->embedding[1], -1.0f);
  EXPECT_TRUE(std::isnan(emb_back->embedding[2]));
}

TEST(ProtocolCodec, ModelInfoAndEmbeddingRequestRoundTrip) {
  ModelInfo m;
  m.name = "stories";
  m.aliases = {"a", "b"};
  m.parameter_count = 292800;
  m.size_bytes = 1ull << 40;
  m.chat_template = "{{ messages }}";
  m.embedding_only = true;
  m.supports_tools = true;
  m.model_info = {{"general.architecture", "llama"}};
  m.fim_prefix = 1;
  m.fim_suffix = 2;
  m.fim_middle = 3;
  auto back = decode_model_info(encode(m));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(encode(*back), encode(m));
  EXPECT_EQ(back->size_bytes, 1ull << 40);
  EXPECT_TRUE(back->supports_tools);
  EXPECT_EQ(back->fim_middle, 3);
  EXPECT_TRUE(back->answers_to("B:latest"));

  EmbeddingRequest q;
  q.texts = {"a", "b"};
  q.token_inputs = {{1, 2}, {}};
  q.normalize = false;
  auto qb = decode_embedding_request(encode(q));
  ASSERT_TRUE(qb.ok()) << qb.error().message;
  EXPECT_EQ(qb->texts, q.texts);
  EXPECT_EQ(qb->token_inputs, q.token_inputs);
  EXPECT_FALSE(qb->normalize);
}

TEST(ProtocolCodec, BadMessagesNameTheField) {
  struct Case {
    const char* bytes;
    const char* expect;
  };
  const Case cases[] = {
      {"", "not JSON"},
      {"[1,2]", "'the message' must be an object"},
      {R"({"n_choices":"two"})", "'n_choices' must be an integer"},
      {R"({"n_choices":9999999999})", "'n_choices' must be a smaller integer"},
      {R"({"prompts":[{"kind":"poem"}]})", "'prompts[0].kind' must be a known name"},
      {R"({"prompts":[{"tokens":[1,"x"]}]})", "'prompts[0].tokens' must be an array of token ids"},
      {R"({"sampling":{"temperature":"hot"}})", "'sampling.temperature' must be a number"},
      {R"({"sampling":{"order":["nope"]}})", "'sampling.order' must be an array of sampler names"},
      {R"({"sampling":{"logit_bias":[[1]]}})", "'sampling.logit_bias' must be an array of [id, bias] pairs"},
      {R"({"sampling":{"seed":-1}})", "'sampling.seed' must be a non-negative integer"},
      {R"({"constraint":{"kind":"xml"}})", "'constraint.kind' must be a known name"},
  };
  for (const auto& c : cases) {
    auto r = decode_completion_request(c.bytes);
    ASSERT_FALSE(r.ok()) << c.bytes;
    EXPECT_EQ(r.error().kind, ErrorKind::kCorrupt);
    EXPECT_NE(r.error().message.find(c.expect), std::string::npos) << c.bytes << " -> " << r.error().message;
  }
  auto ev = decode_event(R"({"kind":"text","tokens":[{"piece":[300]}]})");
  ASSERT_FALSE(ev.ok());
  EXPECT_NE(ev.error().message.find("'tokens[0].piece' must be an array of bytes"), std::string::npos) << ev.error().message;
  EXPECT_FALSE(decode_event(R"({"kind":"done","stop_reason":"bored"})").ok());
  EXPECT_FALSE(decode_model_info(R"({"fim":[1,2]})").ok());
  EXPECT_FALSE(decode_completion_request("{\"prompts\":" + std::string(200, '[') + std::string(200, ']') + "}").ok());
  EXPECT_TRUE(decode_completion_request(R"({"tag":"[[[[{{{{"})").ok());  // brackets inside strings do not count
  // A field an older sender does not know is left at its default; an unknown one is ignored.
  auto minimal = decode_completion_request(R"({"model":"m","future_field":1})");
  ASSERT_TRUE(minimal.ok());
  EXPECT_EQ(minimal->n_choices, 1);
  EXPECT_EQ(minimal->sampling.temperature, SamplingOptions{}.temperature);
}

}  // namespace
}  // namespace hearth::protocol
