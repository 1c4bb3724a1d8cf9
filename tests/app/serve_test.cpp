// `hearth serve` as a user runs it, with real models: the address line and /health, greedy
// output over HTTP equal to `hearth generate` and to llama.cpp's golden tokens, embeddings from
// an encoder model, `hearth chat` against it, and a clean exit on SIGTERM.
#include <gtest/gtest.h>
#include <httplib.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "app/hearth_process.h"
#include "app/server_process.h"
#include "common/test_paths.h"

namespace hearth::test {
namespace {

using Json = nlohmann::json;

Json post_json(int port, const std::string& path, const Json& body, int* status = nullptr) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(120, 0);
  auto r = cli.Post(path, body.dump(), "application/json");
  if (!r) return Json();
  if (status) *status = r->status;
  return Json::parse(r->body, nullptr, false);
}

TEST(ServeCommand, GreedyOverHttpEqualsGenerateAndTheGolden) {
  const std::string model = models_dir() + "/random/llama-F32.gguf";
  const std::string ref_path = reference_dir() + "/llama-F32/once-upon-a-time.json";
  HEARTH_REQUIRE_FILE(model);
  HEARTH_REQUIRE_FILE(ref_path);
  std::ifstream in(ref_path);
  Json ref = Json::parse(in);
  const std::string prompt = ref["prompt"].get<std::string>();
  ServerProcess server;
  ASSERT_TRUE(server.start({"-m", model, "--parallel", "2", "-c", "1024"})) << server.error();

  // ollama raw generate: `context` holds the prompt ids followed by the generated ids.
  Json gen = post_json(server.port(), "/api/generate",
                       {{"model", "llama-F32"}, {"prompt", prompt}, {"raw", true}, {"stream", false},
                        {"options", {{"temperature", 0}, {"num_predict", 32}, {"repeat_penalty", 1.0}, {"ignore_eos", true}}}});
  ASSERT_TRUE(gen.is_object()) << gen.dump();
  std::vector<int32_t> context = gen["context"].get<std::vector<int32_t>>();
  std::vector<int32_t> prompt_ids = ref["tokens"].get<std::vector<int32_t>>();
  ASSERT_EQ(context.size(), prompt_ids.size() + 32) << gen.dump();
  EXPECT_TRUE(std::equal(prompt_ids.begin(), prompt_ids.end(), context.begin()));
  std::vector<int32_t> generated(context.begin() + static_cast<long>(prompt_ids.size()), context.end());
  EXPECT_EQ(generated, ref["greedy"]["tokens"].get<std::vector<int32_t>>());

  // Without raw, a model with no chat template continues the bare prompt (ollama's default
  // template is the prompt itself), not a ChatML wrapper around it.
  Json templated = post_json(server.port(), "/api/generate",
                             {{"model", "llama-F32"}, {"prompt", prompt}, {"stream", false},
                              {"options", {{"temperature", 0}, {"num_predict", 32}, {"repeat_penalty", 1.0}, {"ignore_eos", true}}}});
  ASSERT_TRUE(templated.is_object()) << templated.dump();
  EXPECT_EQ(templated["context"], gen["context"]);
  EXPECT_EQ(templated["response"], gen["response"]);

  // OpenAI completions text equals `hearth generate` text.
  Json cmpl = post_json(server.port(), "/v1/completions",
                        {{"prompt", prompt}, {"temperature", 0}, {"max_tokens", 32}, {"ignore_eos", true}});
  auto local = run_hearth("generate -m " + shell_quote(model) + " -p " + shell_quote(prompt) + " -n 32 --temp 0 --ignore-eos --json");
  ASSERT_EQ(local.status, 0) << local.err;
  EXPECT_EQ(cmpl["choices"][0]["text"], Json::parse(local.out)["text"]);
  EXPECT_EQ(cmpl["usage"]["completion_tokens"], 32);
  EXPECT_EQ(server.stop(), 0);
}

TEST(ServeCommand, ChatAndEmbeddingsWithRealModels) {
  const std::string stories = models_dir() + "/stories260K-llama-f32.gguf";
  const std::string bert = models_dir() + "/random/bert-F32.gguf";
  HEARTH_REQUIRE_FILE(stories);
  HEARTH_REQUIRE_FILE(bert);
  ServerProcess chat_server;
  ASSERT_TRUE(chat_server.start({"-m", stories, "--alias", "stories"})) << chat_server.error();
  auto once = run_hearth("chat --host 127.0.0.1:" + std::to_string(chat_server.port()) +
                         " --temp 0 --seed 1 -n 12 'Once upon a time'");
  ASSERT_EQ(once.status, 0) << once.err;
  EXPECT_GT(once.out.size(), 1u);
  std::string script = "Tell me a story\n/bye\n";
  auto repl = run_hearth("chat --host 127.0.0.1:" + std::to_string(chat_server.port()) + " -m stories -n 8", &script);
  EXPECT_EQ(repl.status, 0) << repl.err;
  int status = 0;
  Json anthropic = post_json(chat_server.port(), "/v1/messages",
                             {{"model", "claude"}, {"max_tokens", 5}, {"messages", {{{"role", "user"}, {"content", "Hi"}}}}}, &status);
  EXPECT_EQ(status, 200) << anthropic.dump();
  EXPECT_EQ(anthropic["usage"]["output_tokens"], 5);
  EXPECT_EQ(chat_server.stop(), 0);

  ServerProcess embed_server;
  ASSERT_TRUE(embed_server.start({"-m", bert})) << embed_server.error();
  Json e = post_json(embed_server.port(), "/v1/embeddings", {{"input", {"hello world", "goodbye"}}}, &status);
  ASSERT_EQ(status, 200) << e.dump();
  ASSERT_EQ(e["data"].size(), 2u);
  auto local = run_hearth("embed -m " + shell_quote(bert) + " --json 'hello world'");
  ASSERT_EQ(local.status, 0) << local.err;
  auto want = Json::parse(local.out)["embeddings"][0].get<std::vector<float>>();
  auto got = e["data"][0]["embedding"].get<std::vector<float>>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4f) << i;
  Json refused = post_json(embed_server.port(), "/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}}, &status);
  EXPECT_EQ(status, 400);
  EXPECT_EQ(embed_server.stop(), 0);
}

// --kv-unified: four slots share a 512-token cache, so each may use all of it (split, each would
// get 128); /slots says so, a 300-token answer fits, and /metrics counts preemptions.
TEST(ServeCommand, KvUnifiedGivesEverySlotTheWholeContext) {
  const std::string model = models_dir() + "/stories260K-llama-f32.gguf";
  HEARTH_REQUIRE_FILE(model);
  ServerProcess server;
  ASSERT_TRUE(server.start({"-m", model, "--parallel", "4", "-c", "512", "--kv-unified"})) << server.error();
  httplib::Client cli("127.0.0.1", server.port());
  cli.set_read_timeout(120, 0);
  auto slots = cli.Get("/slots");
  ASSERT_TRUE(slots && slots->status == 200);
  Json list = Json::parse(slots->body);
  ASSERT_EQ(list.size(), 4u) << list.dump();
  for (const Json& slot : list) EXPECT_EQ(slot["n_ctx"], 512) << slot.dump();
  Json gen = post_json(server.port(), "/api/generate",
                       {{"model", "stories260K-llama-f32"}, {"prompt", "Once upon a time"}, {"raw", true}, {"stream", false},
                        {"options", {{"temperature", 0}, {"num_predict", 300}, {"ignore_eos", true}}}});
  ASSERT_TRUE(gen.is_object()) << gen.dump();
  EXPECT_EQ(gen["eval_count"], 300) << gen.dump();
  auto metrics = cli.Get("/metrics");
  ASSERT_TRUE(metrics && metrics->status == 200);
  EXPECT_NE(metrics->body.find("hearth_kv_preemptions_total 0"), std::string::npos);
  EXPECT_EQ(server.stop(), 0);
}

// The value of an unlabelled series in a /metrics body (NaN when absent).
double metric_value(const std::string& body, const std::string& name) {
  const size_t at = body.find("\n" + name + " ");
  if (at == std::string::npos) return std::nan("");
  return std::stod(body.substr(at + name.size() + 2));
}

// A sliding-window model (gemma3: 5 of 6 layers slide, window 32) keeps those layers' rows in a
// pool of their own: /metrics reports it beside the main pool, and /slots how much of it each
// slot's sequence holds (its window, however long the sequence).
TEST(ServeCommand, SlidingWindowPoolOnMetricsAndSlots) {
  const std::string model = shared_dir() + "/next/models/gemma3-F32.gguf";
  HEARTH_REQUIRE_FILE(model);
  ServerProcess server;
  ASSERT_TRUE(server.start({"-m", model, "--parallel", "1", "-c", "1024"})) << server.error();
  Json gen = post_json(server.port(), "/v1/completions",
                       {{"prompt", "Once upon a time"}, {"temperature", 0}, {"max_tokens", 200}, {"ignore_eos", true}});
  ASSERT_TRUE(gen.is_object() && gen.contains("usage")) << gen.dump();
  httplib::Client cli("127.0.0.1", server.port());
  auto metrics = cli.Get("/metrics");
  ASSERT_TRUE(metrics && metrics->status == 200);
  const std::string& body = metrics->body;
  const double total = metric_value(body, "hearth_kv_sliding_blocks_total");
  const double used = metric_value(body, "hearth_kv_sliding_blocks_used");
  const double reserved = metric_value(body, "hearth_kv_sliding_reserved_bytes");
  const double committed = metric_value(body, "hearth_kv_sliding_committed_bytes");
  EXPECT_EQ(total, metric_value(body, "hearth_kv_blocks_total")) << body;  // one sliding block per main block
  EXPECT_GT(used, 0) << body;
  // The finished sequence holds 200+ tokens (13+ blocks) in the main pool but only its window
  // (32 tokens: at most 3 blocks) in the sliding pool.
  EXPECT_GE(metric_value(body, "hearth_kv_blocks_used"), 13) << body;
  EXPECT_LE(used, 3) << body;
  EXPECT_GT(committed, 0) << body;
  EXPECT_GE(reserved, committed) << body;
  auto slots = cli.Get("/slots");
  ASSERT_TRUE(slots && slots->status == 200);
  const Json list = Json::parse(slots->body);
  ASSERT_EQ(list.size(), 1u) << list.dump();
  EXPECT_GE(list[0]["n_kv_sliding_blocks"].get<int>(), 1) << list.dump();
  EXPECT_LE(list[0]["n_kv_sliding_blocks"].get<int>(), 3) << list.dump();
  EXPECT_EQ(server.stop(), 0);

  // A model without sliding layers reports zeros.
  const std::string llama = models_dir() + "/stories260K-llama-f32.gguf";
  HEARTH_REQUIRE_FILE(llama);
  ServerProcess plain;
  ASSERT_TRUE(plain.start({"-m", llama})) << plain.error();
  auto plain_metrics = httplib::Client("127.0.0.1", plain.port()).Get("/metrics");
  ASSERT_TRUE(plain_metrics && plain_metrics->status == 200);
  EXPECT_EQ(metric_value(plain_metrics->body, "hearth_kv_sliding_blocks_total"), 0) << plain_metrics->body;
  EXPECT_EQ(plain.stop(), 0);
}

TEST(ServeCommand, BadStartsSayWhy) {
  // Without -m, serve serves the model store (tests/e2e/store.test.mjs); flags that need a
  // file are refused there before anything is bound.
  auto alias_without_model = run_hearth("serve --alias x");
  EXPECT_EQ(alias_without_model.status, 2);
  EXPECT_NE(alias_without_model.err.find("--alias needs -m FILE"), std::string::npos) << alias_without_model.err;
  auto local_files_with_model = run_hearth("serve -m x.gguf --allow-local-files");
  EXPECT_EQ(local_files_with_model.status, 2);
  EXPECT_NE(local_files_with_model.err.find("--allow-local-files is for serving the model store"), std::string::npos);
  auto badport = run_hearth("serve -m x.gguf --port 70000");
  EXPECT_EQ(badport.status, 2);
  EXPECT_NE(badport.err.find("option --port: 70000 is out of range (allowed: -1 to 65535)"), std::string::npos) << badport.err;
  setenv("HEARTH_PARALLEL", "0", 1);
  auto badenv = run_hearth("serve -m x.gguf");
  unsetenv("HEARTH_PARALLEL");
  EXPECT_EQ(badenv.status, 2);
  EXPECT_NE(badenv.err.find("environment variable HEARTH_PARALLEL (--parallel): 0 is out of range (allowed: 1 to 256)"),
            std::string::npos)
      << badenv.err;
  setenv("HEARTH_KV_IDLE_CACHE", "lots", 1);
  auto badsize = run_hearth("serve -m x.gguf");
  unsetenv("HEARTH_KV_IDLE_CACHE");
  EXPECT_EQ(badsize.status, 2);
  EXPECT_NE(badsize.err.find("--kv-idle-cache: 'lots' is not a size"), std::string::npos) << badsize.err;
  ServerProcess missing;
  EXPECT_FALSE(missing.start({"-m", "/nonexistent/model.gguf"}, 20));
  auto help = run_hearth("serve --help");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("HEARTH_API_KEY"), std::string::npos);
  EXPECT_NE(help.out.find("HEARTH_HOST"), std::string::npos);
  EXPECT_NE(help.out.find("(default: -1; range -1 to 65535) [env HEARTH_PORT]"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace hearth::test
