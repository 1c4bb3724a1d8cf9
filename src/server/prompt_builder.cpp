// Prompt rendering, tokenization and the checks that need the model (see prompt_builder.h).
#include "server/prompt_builder.h"

#include <algorithm>

namespace hearth::server {
namespace {

Error invalid(std::string message) { return make_error(ErrorKind::kInvalidArgument, std::move(message)); }

Status check_token_ids(const ModelBackend& model, const std::vector<int32_t>& ids, const char* what) {
  const int32_t n_vocab = model.tokenizer().n_vocab();
  for (int32_t id : ids) {
    if (id < 0 || id >= n_vocab) {
      return invalid(std::string(what) + " has token id " + std::to_string(id) + ", outside the vocabulary (0.." +
                     std::to_string(n_vocab - 1) + ")");
    }
  }
  return ok_status();
}

Status check_length(const ModelBackend& model, size_t n_tokens, bool truncate) {
  if (n_tokens == 0) return invalid("the prompt is empty after tokenization");
  const auto n_ctx = static_cast<size_t>(model.n_ctx_slot());
  if (!truncate && n_tokens >= n_ctx) {
    return make_error(ErrorKind::kOutOfRange, "the prompt is " + std::to_string(n_tokens) +
                                                  " tokens long, but a request's context holds " + std::to_string(n_ctx) +
                                                  " tokens; shorten it or start the server with a larger --ctx-size");
  }
  return ok_status();
}

}  // namespace

Result<BuiltPrompt> build_prompt(const ModelBackend& model, const api::PromptSource& source) {
  const Tokenizer& tok = model.tokenizer();
  BuiltPrompt out;
  out.tokens = source.prefix_tokens;
  HEARTH_TRY(check_token_ids(model, out.tokens, "'context'"));
  switch (source.kind) {
    case api::PromptSource::Kind::kChat: {
      if (source.untemplated_text && model.card().chat_template_builtin) {
        out.text = *source.untemplated_text;
        auto ids = tok.encode(out.text, source.add_special, /*parse_special=*/false);
        out.tokens.insert(out.tokens.end(), ids.begin(), ids.end());
        break;
      }
      HEARTH_ASSIGN(out.text, model.chat_template().render(source.chat));
      auto ids = tok.encode(out.text, source.add_special, /*parse_special=*/true);
      out.tokens.insert(out.tokens.end(), ids.begin(), ids.end());
      break;
    }
    case api::PromptSource::Kind::kText: {
      out.text = source.text;
      if (source.fill_in_middle) {
        const api::ModelCard& card = model.card();
        if (card.fim_prefix < 0 || card.fim_suffix < 0 || card.fim_middle < 0) {
          return make_error(ErrorKind::kUnsupported, "'suffix' needs a model with fill-in-the-middle tokens; '" +
                                                         card.name + "' has none");
        }
        if (source.add_special && tok.add_bos() && tok.bos_id() >= 0) out.tokens.push_back(tok.bos_id());
        out.tokens.push_back(card.fim_prefix);
        auto pre = tok.encode(source.text, false, false);
        out.tokens.insert(out.tokens.end(), pre.begin(), pre.end());
        out.tokens.push_back(card.fim_suffix);
        auto suf = tok.encode(source.suffix, false, false);
        out.tokens.insert(out.tokens.end(), suf.begin(), suf.end());
        out.tokens.push_back(card.fim_middle);
      } else {
        auto ids = tok.encode(source.text, source.add_special, /*parse_special=*/true);
        out.tokens.insert(out.tokens.end(), ids.begin(), ids.end());
      }
      break;
    }
    case api::PromptSource::Kind::kTokens:
      HEARTH_TRY(check_token_ids(model, source.tokens, "the prompt"));
      out.tokens.insert(out.tokens.end(), source.tokens.begin(), source.tokens.end());
      out.text = tok.decode(source.tokens, /*special=*/true);
      break;
  }
  return out;
}

Result<PreparedCompletion> prepare_completion(const ModelBackend& model, const api::CompletionJob& job) {
  if (model.card().embedding_only) {
    return make_error(ErrorKind::kUnsupported,
                      "'" + model.card().name + "' is an embedding model; it cannot generate text (use the embeddings routes)");
  }
  engine::CompletionRequest base = job.request;
  std::vector<int32_t> bias_ids;
  for (const auto& [id, bias] : base.sampling.logit_bias) bias_ids.push_back(id);
  HEARTH_TRY(check_token_ids(model, bias_ids, "'logit_bias'"));
  if (base.sampling.dry_multiplier > 0.0f) {
    std::vector<std::string> breakers = job.dry_breakers;
    if (breakers.empty()) breakers = {"\n", ":", "\"", "*"};  // llama-server's defaults
    for (const auto& b : breakers) {
      for (int32_t id : model.tokenizer().encode(b, false, false)) base.sampling.dry_breakers.push_back(id);
    }
  }
  if (base.top_logprobs > 0) base.logprobs = true;
  base.sampling.n_probs = std::max(base.sampling.n_probs, base.top_logprobs);

  PreparedCompletion out;
  for (const auto& source : job.prompts) {
    HEARTH_ASSIGN(BuiltPrompt prompt, build_prompt(model, source));
    HEARTH_TRY(check_length(model, prompt.tokens.size(), base.truncate));
    out.prompt_tokens.push_back(static_cast<int32_t>(prompt.tokens.size()));
    out.prompt_texts.push_back(prompt.text);
    for (int32_t j = 0; j < job.n_choices; ++j) {
      engine::CompletionRequest r = base;
      r.prompt = prompt.tokens;
      if (j > 0 && r.sampling.seed != 0xFFFFFFFFu) r.sampling.seed += static_cast<uint64_t>(j);
      out.requests.push_back(std::move(r));
    }
    out.prompt_ids.push_back(std::move(prompt.tokens));
  }
  return out;
}

Result<std::vector<std::vector<int32_t>>> prepare_embedding_inputs(const ModelBackend& model, const api::EmbeddingJob& job) {
  std::vector<std::vector<int32_t>> out;
  const auto n_ctx = static_cast<size_t>(model.max_embedding_tokens());
  for (const auto& text : job.texts) out.push_back(model.tokenizer().encode(text, true, false));
  for (const auto& ids : job.token_inputs) {
    HEARTH_TRY(check_token_ids(model, ids, "'input'"));
    out.push_back(ids);
  }
  for (auto& ids : out) {
    if (ids.empty()) return invalid("an input is empty after tokenization");
    if (ids.size() > n_ctx) {
      if (!job.truncate) {
        return make_error(ErrorKind::kOutOfRange, "an input is " + std::to_string(ids.size()) +
                                                      " tokens long, but the context holds " + std::to_string(n_ctx) +
                                                      " tokens (set truncate to cut it)");
      }
      ids.resize(n_ctx);
    }
  }
  return out;
}

}  // namespace hearth::server
