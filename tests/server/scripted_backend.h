// An InferenceBackend for route tests that needs no inference: the real engine-side backend
// (engine::LocalBackend: prompt preparation with a real tokenizer from a small shared GGUF and
// the ChatML template) over a scripted generation service that streams a fixed reply one token
// per tick on its own thread, honouring n_predict, stop strings, logprobs, cancellation,
// truncation and grammar compile errors (the reply itself ignores the grammar), and records
// what it was asked. Its submission checks are the serving engine's own functions (prompt
// fitting, grammar compilation). Embeddings are deterministic functions of the tokens. Lets the
// tests check HTTP behaviour (framing, errors, disconnects, replay) exactly and quickly.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/local_backend.h"
#include "protocol/backend.h"

namespace hearth::test {

class ScriptedEngine;

class ScriptedBackend : public protocol::InferenceBackend {
 public:
  // `gguf_path` provides the vocabulary. `reply` is what every completion generates (repeated
  // when n_predict asks for more); `tick` is the time between tokens.
  static std::shared_ptr<ScriptedBackend> create(const std::string& gguf_path, std::string reply,
                                                 std::chrono::milliseconds tick = std::chrono::milliseconds(1));
  ~ScriptedBackend() override;

  const protocol::ModelInfo& model_info() const override { return local_->model_info(); }
  Result<protocol::CompletionSubmission> submit(const protocol::CompletionRequest& request) override {
    return local_->submit(request);
  }
  Result<protocol::EmbeddingSubmission> submit(const protocol::EmbeddingRequest& request) override {
    return local_->submit(request);
  }
  Result<protocol::PromptInfo> render_prompt(const protocol::PromptSource& source) const override {
    return local_->render_prompt(source);
  }
  Result<std::vector<protocol::TokenPiece>> tokenize(const std::string& text, bool add_special, bool parse_special,
                                                     bool with_pieces) const override {
    return local_->tokenize(text, add_special, parse_special, with_pieces);
  }
  Result<std::string> detokenize(const std::vector<int32_t>& ids) const override { return local_->detokenize(ids); }
  Result<std::string> apply_template(const nlohmann::ordered_json& chat) const override {
    return local_->apply_template(chat);
  }
  protocol::EngineMetrics metrics() const override { return local_->metrics(); }
  std::vector<protocol::SlotInfo> slots() const override { return local_->slots(); }

  const Tokenizer& tokenizer() const { return tokenizer_; }
  // Every submission is refused with the serving engine's queue-full error (503).
  void set_overloaded(bool v);
  void set_n_ctx_slot(int32_t n);
  // Completions whose prompt text contains this marker fail with an engine error.
  void set_failure_marker(std::string marker);

  // What happened to each completion so far, in submission order.
  struct Record {
    engine::GenerationRequest request;
    std::atomic<int32_t> generated{0};
    std::atomic<bool> cancelled{false};
    std::atomic<bool> finished{false};
  };
  std::vector<std::shared_ptr<Record>> records() const;
  // Waits until `n` completions were submitted (false on timeout).
  bool wait_for_records(size_t n, std::chrono::milliseconds timeout) const;

 private:
  friend class ScriptedEngine;
  ScriptedBackend() = default;
  void run_completion(std::shared_ptr<engine::ResultStream> stream, std::shared_ptr<Record> record);
  std::shared_ptr<engine::ResultStream> submit_generation(engine::GenerationRequest request);
  std::shared_ptr<engine::ResultStream> submit_embedding(engine::EmbeddingInput request);
  protocol::EngineMetrics engine_metrics() const;
  std::vector<protocol::SlotInfo> engine_slots() const;

  Tokenizer tokenizer_;
  std::shared_ptr<engine::LocalBackend> local_;
  std::string reply_;
  std::vector<int32_t> reply_tokens_;
  std::chrono::milliseconds tick_{1};
  std::atomic<int32_t> n_ctx_slot_{256};
  std::atomic<bool> overloaded_{false};
  std::string failure_marker_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<Record>> records_;
  std::vector<std::thread> threads_;
  std::atomic<int64_t> next_id_{1};
  std::atomic<uint64_t> generated_total_{0};
  std::atomic<uint64_t> prompt_total_{0};
};

}  // namespace hearth::test
