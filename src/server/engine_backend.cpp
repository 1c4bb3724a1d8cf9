// ModelBackend over the serving engine (see engine_backend.h).
#include "server/engine_backend.h"

#include <fstream>
#include <vector>

#include "server/default_chat_template.h"
#include "util/sha256.h"
#include "util/log.h"

namespace hearth::server {

Result<std::shared_ptr<EngineBackend>> EngineBackend::create(std::unique_ptr<engine::InferenceContext> context,
                                                             const engine::ServingOptions& options, api::ModelCard card) {
  std::shared_ptr<EngineBackend> b(new EngineBackend());
  auto tmpl = ChatTemplate::create(card.chat_template, card.bos_token, card.eos_token, "chat template");
  if (!tmpl.ok()) {
    log_warn("chat template does not parse; using ChatML", {{"error", tmpl.error().message}});
    card.chat_template = kChatMlTemplate;
    card.chat_template_builtin = true;
    tmpl = ChatTemplate::create(card.chat_template, card.bos_token, card.eos_token, "ChatML");
    if (!tmpl.ok()) return tmpl.error();
  }
  b->template_ = std::make_unique<ChatTemplate>(std::move(tmpl).value());
  HEARTH_ASSIGN(b->engine_, engine::ServingEngine::create(*context, options));
  b->context_ = std::move(context);
  card.n_ctx_slot = b->engine_->n_ctx_slot();
  card.n_slots = options.n_slots;
  b->card_ = std::move(card);
  b->max_queue_ = options.max_queue;
  EngineBackend* self = b.get();
  b->hasher_ = std::thread([self, path = b->card_.path] {
    std::ifstream in(path, std::ios::binary);
    if (!in) return;
    Sha256 hash;
    std::vector<char> buf(1 << 20);
    while (!self->stop_hashing_.load() && in) {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      if (in.gcount() > 0) hash.update(buf.data(), static_cast<size_t>(in.gcount()));
    }
    if (self->stop_hashing_.load() || !in.eof()) return;
    std::string hex = hash.finish_hex();
    std::lock_guard lock(self->digest_mu_);
    self->digest_ = std::move(hex);
  });
  return b;
}

EngineBackend::~EngineBackend() {
  stop_hashing_ = true;
  if (hasher_.joinable()) hasher_.join();
  engine_.reset();
}

std::string EngineBackend::digest() const {
  std::lock_guard lock(digest_mu_);
  return digest_;
}

std::shared_ptr<engine::ResultStream> EngineBackend::submit(engine::CompletionRequest request) {
  return engine_->submit(std::move(request));
}

std::shared_ptr<engine::ResultStream> EngineBackend::submit(engine::EmbeddingRequest request) {
  return engine_->submit(std::move(request));
}

bool EngineBackend::overloaded() const { return max_queue_ > 0 && engine_->metrics().requests_waiting >= max_queue_; }

}  // namespace hearth::server
