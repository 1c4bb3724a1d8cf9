// The real ModelBackend: a loaded InferenceContext driven by engine::ServingEngine, the model's
// chat template (or the ChatML fallback), and the model's description for the listing routes
// (its sha256 digest is computed in the background, so start-up does not wait for it).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "server/model_backend.h"

namespace hearth::server {

class EngineBackend final : public ModelBackend {
 public:
  // Starts the serving engine over `context`. A chat template that does not parse falls back to
  // ChatML (logged). Errors: serving options that do not fit the context.
  static Result<std::shared_ptr<EngineBackend>> create(std::unique_ptr<engine::InferenceContext> context,
                                                       const engine::ServingOptions& options, api::ModelCard card);
  ~EngineBackend() override;

  const api::ModelCard& card() const override { return card_; }
  const Tokenizer& tokenizer() const override { return context_->tokenizer(); }
  const ChatTemplate& chat_template() const override { return *template_; }
  int32_t n_ctx_slot() const override { return engine_->n_ctx_slot(); }
  int32_t max_embedding_tokens() const override { return engine_->max_embedding_tokens(); }
  std::shared_ptr<engine::ResultStream> submit(engine::CompletionRequest request) override;
  std::shared_ptr<engine::ResultStream> submit(engine::EmbeddingRequest request) override;
  engine::EngineMetrics metrics() const override { return engine_->metrics(); }
  std::vector<engine::SlotInfo> slots() const override { return engine_->slots(); }
  bool overloaded() const override;
  std::string digest() const override;

 private:
  EngineBackend() = default;

  std::unique_ptr<engine::InferenceContext> context_;
  std::unique_ptr<engine::ServingEngine> engine_;  // after context_: destroyed first
  std::unique_ptr<ChatTemplate> template_;
  api::ModelCard card_;
  int32_t max_queue_ = 0;
  // The file's sha256, computed on a background thread after start-up.
  mutable std::mutex digest_mu_;
  std::string digest_;
  std::atomic<bool> stop_hashing_{false};
  std::thread hasher_;
};

}  // namespace hearth::server
