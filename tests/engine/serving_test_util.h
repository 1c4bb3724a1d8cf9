// Helpers shared by the serving engine tests: loading a context, collecting a stream's events,
// greedy requests, and a step observer that records every batch.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/test_paths.h"
#include "engine/generation.h"
#include "engine/serving_engine.h"
#include "util/log.h"

namespace hearth::engine {

inline std::string stories() { return test::models_dir() + "/stories260K-llama-f32.gguf"; }

inline std::unique_ptr<InferenceContext> open(const std::string& path, int32_t n_ctx) {
  ContextOptions o;
  o.n_ctx = n_ctx;
  o.n_threads = 2;
  auto ctx = InferenceContext::load(path, o);
  EXPECT_TRUE(ctx.ok()) << ctx.error().to_string();
  return ctx.ok() ? std::move(ctx).value() : nullptr;
}

// Everything one stream delivered.
struct Collected {
  std::string text;
  std::vector<int32_t> tokens;
  std::vector<TokenOutput> outputs;
  int n_text_events = 0;
  EngineEvent final;
  bool complete = false;
};

inline Collected collect(ResultStream& stream) {
  Collected c;
  EngineEvent ev;
  while (stream.next(ev, std::chrono::seconds(60))) {
    c.text += ev.text;
    for (const auto& t : ev.tokens) {
      c.tokens.push_back(t.token);
      c.outputs.push_back(t);
    }
    if (ev.kind == EngineEvent::Kind::kText) {
      ++c.n_text_events;
      continue;
    }
    c.final = ev;
    c.complete = true;
    break;
  }
  return c;
}

// Waits for the stream's first event (the request is then running in a slot).
inline EngineEvent first_event(ResultStream& stream) {
  EngineEvent ev;
  EXPECT_TRUE(stream.next(ev, std::chrono::seconds(60)));
  return ev;
}

inline GenerationRequest greedy(std::vector<int32_t> prompt, int32_t n_predict) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0;
  r.n_predict = n_predict;
  r.ignore_eos = true;
  return r;
}

inline GenerateOptions greedy_alone(int32_t n) {
  GenerateOptions o;
  o.n_predict = n;
  o.sampling.temperature = 0;
  o.stop_at_eog = false;
  return o;
}

// Records every step the engine decodes.
struct StepLog {
  std::mutex mu;
  std::vector<StepRecord> steps;
  std::function<void(const StepRecord&)> observer() {
    return [this](const StepRecord& r) {
      std::lock_guard lock(mu);
      steps.push_back(r);
    };
  }
  std::vector<StepRecord> snapshot() {
    std::lock_guard lock(mu);
    return steps;
  }
  uint64_t last_step() {
    std::lock_guard lock(mu);
    return steps.empty() ? 0 : steps.back().step;
  }
};

class ServingEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_level_ = log_level();
    set_log_level(LogLevel::kWarn);
  }
  void TearDown() override { set_log_level(saved_level_); }

  std::unique_ptr<ServingEngine> start(InferenceContext& ctx, ServingOptions o) {
    auto e = ServingEngine::create(ctx, o);
    EXPECT_TRUE(e.ok()) << e.error().to_string();
    return e.ok() ? std::move(e).value() : nullptr;
  }

  LogLevel saved_level_ = LogLevel::kInfo;
};

}  // namespace hearth::engine
