// What the HTTP side needs from the loaded model: its description, tokenizer and chat
// template (HTTP workers render and tokenize), and the serving engine's submit/metrics/slots.
// An interface so the routes can be tested against a scripted engine; EngineBackend is the
// real one over engine::ServingEngine.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "api/model_card.h"
#include "engine/serving_engine.h"
#include "template/chat_render.h"
#include "tokenizer/tokenizer.h"

namespace hearth::server {

class ModelBackend {
 public:
  virtual ~ModelBackend() = default;
  virtual const api::ModelCard& card() const = 0;
  virtual const Tokenizer& tokenizer() const = 0;
  virtual const ChatTemplate& chat_template() const = 0;
  // Tokens one request may hold (prompt + generated).
  virtual int32_t n_ctx_slot() const = 0;
  // The longest embedding input (an encoder may use more than one slot's share).
  virtual int32_t max_embedding_tokens() const { return n_ctx_slot(); }
  // Never block; see engine::ServingEngine::submit.
  virtual std::shared_ptr<engine::ResultStream> submit(engine::CompletionRequest request) = 0;
  virtual std::shared_ptr<engine::ResultStream> submit(engine::EmbeddingRequest request) = 0;
  virtual engine::EngineMetrics metrics() const = 0;
  virtual std::vector<engine::SlotInfo> slots() const = 0;
  // True when the engine's queue is full; new requests then get 503.
  virtual bool overloaded() const = 0;
  // sha256 of the model file in lower-case hex; "" while it is still being computed.
  virtual std::string digest() const { return card().digest; }
};

}  // namespace hearth::server
