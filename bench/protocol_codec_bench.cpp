// What the protocol's JSON serialisation costs per message, for the request a chat client
// typically sends (a system prompt, a few turns, two tools, a JSON schema) and for the events
// a runner streams back (one token each). The baseline is copying the same request in memory,
// what an in-process call costs. Compare with decode speed: a token takes milliseconds.
#include <benchmark/benchmark.h>

#include <string>

#include "protocol/codec.h"

namespace {

using hearth::protocol::CompletionRequest;

CompletionRequest typical_chat_request() {
  CompletionRequest q;
  q.model = "qwen3:8b";
  hearth::protocol::PromptSource p;
  p.kind = hearth::protocol::PromptSource::Kind::kChat;
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  messages.push_back({{"role", "system"}, {"content", std::string(1500, 's')}});
  for (int i = 0; i < 6; ++i) {
    messages.push_back({{"role", i % 2 ? "assistant" : "user"}, {"content", std::string(300, 'a' + i)}});
  }
  nlohmann::ordered_json tool = nlohmann::ordered_json::parse(
      R"({"type":"function","function":{"name":"get_weather","description":"Weather for a city",
          "parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"enum":["c","f"]}},"required":["city"]}}})");
  p.chat = {{"messages", messages}, {"tools", {tool, tool}}, {"add_generation_prompt", true}};
  q.prompts.push_back(p);
  q.stop = {"<|im_end|>"};
  q.constraint.kind = hearth::protocol::OutputConstraint::Kind::kJsonSchema;
  q.constraint.field = "format";
  q.constraint.schema = tool["function"]["parameters"];
  return q;
}

void BM_CopyRequest(benchmark::State& state) {
  const CompletionRequest q = typical_chat_request();
  for (auto _ : state) {
    CompletionRequest copy = q;
    benchmark::DoNotOptimize(copy);
  }
}
BENCHMARK(BM_CopyRequest);

void BM_EncodeDecodeRequest(benchmark::State& state) {
  const CompletionRequest q = typical_chat_request();
  size_t bytes = 0;
  for (auto _ : state) {
    std::string wire = hearth::protocol::encode(q);
    bytes = wire.size();
    auto back = hearth::protocol::decode_completion_request(wire);
    benchmark::DoNotOptimize(back);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_EncodeDecodeRequest);

void BM_EncodeDecodeTokenEvent(benchmark::State& state) {
  hearth::protocol::Event e;
  e.text = " weather";
  e.tokens.push_back({4521, " weather", -0.25f, {}});
  for (auto _ : state) {
    std::string wire = hearth::protocol::encode(e);
    auto back = hearth::protocol::decode_event(wire);
    benchmark::DoNotOptimize(back);
  }
}
BENCHMARK(BM_EncodeDecodeTokenEvent);

}  // namespace

BENCHMARK_MAIN();
