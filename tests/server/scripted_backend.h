// A ModelBackend for route tests that needs no inference: a real tokenizer (from a small
// shared GGUF), the ChatML template, and a scripted "engine" that streams a fixed reply one
// token per tick on its own thread, honouring n_predict, stop strings, logprobs, cancellation,
// truncation and grammar compile errors (the reply itself ignores the grammar), and records
// what it was asked. Embeddings are deterministic functions of the tokens. Lets the tests
// check HTTP behaviour (framing, errors, disconnects, replay) exactly and quickly.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/model_backend.h"

namespace hearth::test {

class ScriptedBackend : public server::ModelBackend {
 public:
  // `gguf_path` provides the vocabulary. `reply` is what every completion generates (repeated
  // when n_predict asks for more); `tick` is the time between tokens.
  static std::shared_ptr<ScriptedBackend> create(const std::string& gguf_path, std::string reply,
                                                 std::chrono::milliseconds tick = std::chrono::milliseconds(1));
  ~ScriptedBackend() override;

  const api::ModelCard& card() const override { return card_; }
  const Tokenizer& tokenizer() const override { return tokenizer_; }
  const ChatTemplate& chat_template() const override { return *template_; }
  int32_t n_ctx_slot() const override { return n_ctx_slot_; }
  std::shared_ptr<engine::ResultStream> submit(engine::CompletionRequest request) override;
  std::shared_ptr<engine::ResultStream> submit(engine::EmbeddingRequest request) override;
  engine::EngineMetrics metrics() const override;
  std::vector<engine::SlotInfo> slots() const override;
  bool overloaded() const override { return overloaded_.load(); }

  api::ModelCard& mutable_card() { return card_; }
  void set_overloaded(bool v) { overloaded_ = v; }
  void set_n_ctx_slot(int32_t n) { n_ctx_slot_ = n; }
  // Completions whose prompt text contains this marker fail with an engine error.
  void set_failure_marker(std::string marker) { failure_marker_ = std::move(marker); }

  // What happened to each completion so far, in submission order.
  struct Record {
    engine::CompletionRequest request;
    std::atomic<int32_t> generated{0};
    std::atomic<bool> cancelled{false};
    std::atomic<bool> finished{false};
  };
  std::vector<std::shared_ptr<Record>> records() const;
  // Waits until `n` completions were submitted (false on timeout).
  bool wait_for_records(size_t n, std::chrono::milliseconds timeout) const;

 private:
  ScriptedBackend() = default;
  void run_completion(std::shared_ptr<engine::ResultStream> stream, std::shared_ptr<Record> record);

  api::ModelCard card_;
  Tokenizer tokenizer_;
  std::unique_ptr<ChatTemplate> template_;
  std::string reply_;
  std::vector<int32_t> reply_tokens_;
  std::chrono::milliseconds tick_{1};
  int32_t n_ctx_slot_ = 256;
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
