// protocol::InferenceBackend over a model in this process (see local_backend.h).
#include "engine/local_backend.h"

#include <fstream>
#include <vector>

#include "engine/default_chat_template.h"
#include "util/log.h"
#include "util/sha256.h"

namespace hearth::engine {

Result<std::shared_ptr<LocalBackend>> LocalBackend::create(std::unique_ptr<InferenceContext> context,
                                                           const ServingOptions& options, protocol::ModelInfo info) {
  std::shared_ptr<LocalBackend> b(new LocalBackend());
  HEARTH_ASSIGN(std::unique_ptr<ServingEngine> engine, ServingEngine::create(*context, options));
  b->service_ = std::shared_ptr<GenerationService>(std::move(engine));
  b->tokenizer_ = &context->tokenizer();
  b->context_ = std::move(context);
  info.n_slots = options.n_slots;
  HEARTH_TRY(b->init(std::move(info)));
  return b;
}

Result<std::shared_ptr<LocalBackend>> LocalBackend::create(const Tokenizer& tokenizer,
                                                           std::shared_ptr<GenerationService> service,
                                                           protocol::ModelInfo info) {
  std::shared_ptr<LocalBackend> b(new LocalBackend());
  b->tokenizer_ = &tokenizer;
  b->service_ = std::move(service);
  HEARTH_TRY(b->init(std::move(info)));
  return b;
}

Status LocalBackend::init(protocol::ModelInfo info) {
  // A model without a usable chat template reports "" as its template (/api/show, /props) and
  // chats through the plain transcript fallback; it is never dressed up as ChatML.
  Result<ChatTemplate> tmpl = make_error(ErrorKind::kNotFound, "no chat template");
  if (!info.chat_template.empty() && !info.chat_template_builtin) {
    tmpl = ChatTemplate::create(info.chat_template, info.bos_token, info.eos_token, "chat template");
    if (!tmpl.ok()) log_warn("chat template does not parse; using the plain fallback", {{"model", info.name}, {"error", tmpl.error().message}});
  } else if (info.chat_template.empty()) {
    log_warn("model has no chat template; chat requests use the plain fallback (System:/User:/Assistant:)",
             {{"model", info.name}});
  }
  if (!tmpl.ok() && info.chat_template_builtin && !info.chat_template.empty()) {
    tmpl = ChatTemplate::create(info.chat_template, info.bos_token, info.eos_token, "built-in chat template");
  }
  if (!tmpl.ok()) {
    info.chat_template.clear();
    info.chat_template_builtin = true;
    tmpl = ChatTemplate::create(kPlainChatTemplate, info.bos_token, info.eos_token, "plain fallback");
    if (!tmpl.ok()) return tmpl.error();
  }
  template_ = std::make_unique<ChatTemplate>(std::move(tmpl).value());
  info.supports_tools = template_->capabilities().supports_tools;
  info.n_ctx_slot = service_->n_ctx_slot();
  info_ = std::move(info);
  if (!info_.digest.empty() || info_.path.empty()) {
    digest_ = info_.digest;
    return ok_status();
  }
  hasher_ = std::thread([this, path = info_.path] {
    std::ifstream in(path, std::ios::binary);
    if (!in) return;
    Sha256 hash;
    std::vector<char> buf(1 << 20);
    while (!stop_hashing_.load() && in) {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      if (in.gcount() > 0) hash.update(buf.data(), static_cast<size_t>(in.gcount()));
    }
    if (stop_hashing_.load() || !in.eof()) return;
    std::string hex = hash.finish_hex();
    std::lock_guard lock(digest_mu_);
    digest_ = std::move(hex);
  });
  return ok_status();
}

LocalBackend::~LocalBackend() {
  stop_hashing_ = true;
  if (hasher_.joinable()) hasher_.join();
  service_.reset();
}

void LocalBackend::shut_down() {
  stop_hashing_ = true;
  service_->stop(make_error(ErrorKind::kUnavailable, "the server is shutting down"));
}

std::string LocalBackend::digest() const {
  std::lock_guard lock(digest_mu_);
  return digest_;
}

// Submits every prepared piece; when the service refuses one, the ones already queued are
// cancelled and the refusal is the answer.
template <typename Piece>
Result<std::vector<std::shared_ptr<protocol::EventStream>>> LocalBackend::submit_all(std::vector<Piece> pieces) {
  std::vector<std::shared_ptr<protocol::EventStream>> streams;
  for (auto& piece : pieces) {
    std::shared_ptr<ResultStream> stream = service_->submit(std::move(piece));
    if (std::optional<Error> rejected = stream->rejection()) {
      for (auto& s : streams) s->cancel();
      return *rejected;
    }
    streams.push_back(std::move(stream));
  }
  return streams;
}

Result<protocol::CompletionSubmission> LocalBackend::submit(const protocol::CompletionRequest& request) {
  HEARTH_ASSIGN(PreparedPrompts prepared, prepare_completion(prompt_model(), request));
  protocol::CompletionSubmission out;
  HEARTH_ASSIGN(out.streams, submit_all(std::move(prepared.requests)));
  out.prompts = std::move(prepared.prompts);
  return out;
}

Result<protocol::EmbeddingSubmission> LocalBackend::submit(const protocol::EmbeddingRequest& request) {
  protocol::EmbeddingSubmission out;
  HEARTH_ASSIGN(out.streams, submit_all(prepare_embedding(*tokenizer_, request)));
  return out;
}

Result<std::vector<protocol::TokenPiece>> LocalBackend::tokenize(const std::string& text, bool add_special,
                                                                 bool parse_special, bool with_pieces) const {
  std::vector<protocol::TokenPiece> out;
  for (int32_t id : tokenizer_->encode(text, add_special, parse_special)) {
    out.push_back({id, with_pieces ? tokenizer_->token_to_piece(id, true) : std::string()});
  }
  return out;
}

Result<std::string> LocalBackend::detokenize(const std::vector<int32_t>& ids) const {
  for (int32_t id : ids) {
    if (id < 0 || id >= tokenizer_->n_vocab()) {
      return make_error(ErrorKind::kInvalidArgument, "'tokens' must be token ids of this model's vocabulary");
    }
  }
  return tokenizer_->decode(ids, true);
}

Result<std::string> LocalBackend::apply_template(const nlohmann::ordered_json& chat) const {
  return template_->render(chat);
}

}  // namespace hearth::engine
