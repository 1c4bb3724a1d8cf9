// The engine side of the protocol in this process: a protocol::InferenceBackend over a loaded
// model. Requests are prepared here (chat template, tokenizer, output constraint; see
// prompt_preparation.h) and submitted to a GenerationService — the serving engine, or a
// scripted one in tests — whose submission checks are the only ones. Also answers the
// tokenizer and template routes, and computes the model file's sha256 in the background so
// that start-up does not wait for it.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "engine/inference_context.h"
#include "engine/prompt_preparation.h"
#include "engine/serving_engine.h"
#include "protocol/backend.h"

namespace hearth::engine {

class LocalBackend final : public protocol::InferenceBackend {
 public:
  // Serves `context` with a ServingEngine. The chat template is info.chat_template; one that
  // does not parse falls back to ChatML (logged). Errors: serving options that do not fit.
  static Result<std::shared_ptr<LocalBackend>> create(std::unique_ptr<InferenceContext> context,
                                                      const ServingOptions& options, protocol::ModelInfo info);
  // Over any generation service; `tokenizer` must outlive the backend.
  static Result<std::shared_ptr<LocalBackend>> create(const Tokenizer& tokenizer,
                                                      std::shared_ptr<GenerationService> service,
                                                      protocol::ModelInfo info);
  ~LocalBackend() override;

  const protocol::ModelInfo& model_info() const override { return info_; }
  std::string digest() const override;
  Result<protocol::CompletionSubmission> submit(const protocol::CompletionRequest& request) override;
  Result<protocol::EmbeddingSubmission> submit(const protocol::EmbeddingRequest& request) override;
  Result<protocol::PromptInfo> render_prompt(const protocol::PromptSource& source) const override {
    return engine::render_prompt(prompt_model(), source);
  }
  Result<std::vector<protocol::TokenPiece>> tokenize(const std::string& text, bool add_special, bool parse_special,
                                                     bool with_pieces) const override;
  Result<std::string> detokenize(const std::vector<int32_t>& ids) const override;
  Result<std::string> apply_template(const nlohmann::ordered_json& chat) const override;
  protocol::EngineMetrics metrics() const override { return service_->metrics(); }
  std::vector<protocol::SlotInfo> slots() const override { return service_->slots(); }
  void shut_down() override;
  // The serving engine's KV cap (0: none) and KV use (GenerationService), for the KV budget glue.
  void set_kv_limit(size_t bytes) { service_->set_kv_limit(bytes); }
  kv::KvPoolStats kv_pool_stats() const { return service_->kv_pool_stats(); }

 private:
  LocalBackend() = default;
  Status init(protocol::ModelInfo info);
  PromptModel prompt_model() const { return PromptModel{*tokenizer_, *template_, info_}; }
  template <typename Piece>
  Result<std::vector<std::shared_ptr<protocol::EventStream>>> submit_all(std::vector<Piece> pieces);

  std::unique_ptr<InferenceContext> context_;   // when this backend owns the model
  const Tokenizer* tokenizer_ = nullptr;
  std::shared_ptr<GenerationService> service_;  // destroyed before context_
  std::unique_ptr<ChatTemplate> template_;
  protocol::ModelInfo info_;
  // The file's sha256, computed on a background thread after start-up.
  mutable std::mutex digest_mu_;
  std::string digest_;
  std::atomic<bool> stop_hashing_{false};
  std::thread hasher_;
};

}  // namespace hearth::engine
