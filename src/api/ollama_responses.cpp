// ollama responses: the NDJSON stream and single-object bodies of /api/generate and /api/chat
// (final object with done_reason, context and the nanosecond timings), /api/embed, and the
// model listings (/api/tags, /api/show, /api/ps, /api/version).
#include <ctime>

#include "api/choice_state.h"
#include "api/ollama.h"
#include "api/response_encoder.h"
#include "api/stream_framing.h"

namespace hearth::api {
namespace {

int64_t ms_to_ns(double ms) { return static_cast<int64_t>(ms * 1e6); }

Json logprob_list(const std::vector<protocol::TokenOutput>& tokens) {
  Json out = Json::array();
  for (const auto& t : tokens) {
    Json top = Json::array();
    for (const auto& alt : t.top) {
      Json bytes = Json::array();
      for (unsigned char c : alt.piece) bytes.push_back(static_cast<int>(c));
      top.push_back(Json{{"token", alt.piece}, {"logprob", alt.logprob}, {"bytes", std::move(bytes)}});
    }
    Json bytes = Json::array();
    for (unsigned char c : t.piece) bytes.push_back(static_cast<int>(c));
    out.push_back(Json{{"token", t.piece}, {"logprob", t.logprob}, {"bytes", std::move(bytes)}, {"top_logprobs", std::move(top)}});
  }
  return out;
}

Json details_json(const protocol::ModelInfo& card) {
  return Json{{"parent_model", ""},
              {"format", "gguf"},
              {"family", card.architecture},
              {"families", Json::array({card.architecture})},
              {"parameter_size", card.parameter_size},
              {"quantization_level", card.quantization}};
}

std::string modified_at(const protocol::ModelInfo& card) {
  return rfc3339_nano(std::chrono::system_clock::time_point(std::chrono::seconds(card.modified_unix)));
}

// /api/generate (chat = false) and /api/chat (chat = true) share everything but the text field.
class OllamaEncoder final : public ResponseEncoder {
 public:
  OllamaEncoder(const CompletionJob& job, ResponseMeta meta, bool chat)
      : meta_(std::move(meta)), chat_(chat), stream_(job.stream), logprobs_(job.request.logprobs) {}

  const char* content_type() const override { return stream_ ? "application/x-ndjson" : "application/json"; }
  std::string begin() override { return ""; }

  std::string on_event(int32_t, const protocol::Event& event) override {
    choice_.absorb(event);
    for (const auto& t : event.tokens) generated_ids_.push_back(t.token);
    if (!stream_) return "";
    std::string out;
    if (!event.text.empty() || !event.reasoning.empty() || !event.tool_calls.empty() || (logprobs_ && !event.tokens.empty())) {
      Json chunk = head();
      put_text(chunk, event.text, event.reasoning, event.tool_calls);
      chunk["done"] = false;
      if (logprobs_) chunk["logprobs"] = logprob_list(event.tokens);
      out += ndjson_line(chunk);
    }
    return out;
  }

  std::string end() override {
    Json last = head();
    if (stream_) put_text(last, std::string(), std::string(), {});
    else put_text(last, choice_.text, choice_.reasoning, choice_.tool_calls);
    if (!stream_ && logprobs_) last["logprobs"] = logprob_list(choice_.tokens);
    last["done"] = true;
    last["done_reason"] = finish_reason_stop_or_length(choice_.stop_reason);
    if (!chat_) {
      Json context = Json::array();
      if (!meta_.prompt_ids.empty()) {
        for (int32_t id : meta_.prompt_ids[0]) context.push_back(id);
      }
      for (int32_t id : generated_ids_) context.push_back(id);
      last["context"] = std::move(context);
    }
    const protocol::Timings& t = choice_.timings;
    auto total = std::chrono::steady_clock::now() - meta_.started;
    last["total_duration"] = std::chrono::duration_cast<std::chrono::nanoseconds>(total).count();
    last["load_duration"] = 0;
    last["prompt_eval_count"] = t.prompt_n;
    last["prompt_eval_duration"] = ms_to_ns(t.prompt_ms);
    last["eval_count"] = t.predicted_n;
    last["eval_duration"] = ms_to_ns(t.predicted_ms);
    return stream_ ? ndjson_line(last) : dump_json(last);
  }

  std::string error_chunk(const Json& body) override { return ndjson_line(body); }

 private:
  Json head() const {
    return Json{{"model", meta_.model}, {"created_at", rfc3339_nano(std::chrono::system_clock::now())}};
  }
  // The answer text, with ollama's `thinking` and (chat) `tool_calls` (arguments as an object)
  // when the reply had them.
  void put_text(Json& chunk, const std::string& text, const std::string& reasoning,
                const std::vector<protocol::ToolCallOutput>& calls) const {
    if (chat_) {
      Json message = {{"role", "assistant"}, {"content", text}};
      if (!reasoning.empty()) message["thinking"] = reasoning;
      if (!calls.empty()) {
        message["tool_calls"] = Json::array();
        for (const auto& c : calls) {
          Json args = Json::parse(c.arguments, nullptr, /*allow_exceptions=*/false);
          message["tool_calls"].push_back(Json{{"id", c.id},
                                               {"function", {{"index", c.index}, {"name", c.name},
                                                             {"arguments", args.is_discarded() ? Json::object() : args}}}});
        }
      }
      chunk["message"] = std::move(message);
    } else {
      chunk["response"] = text;
      if (!reasoning.empty()) chunk["thinking"] = reasoning;
    }
  }

  ResponseMeta meta_;
  bool chat_;
  bool stream_;
  bool logprobs_;
  ChoiceState choice_;
  std::vector<int32_t> generated_ids_;
};

}  // namespace

std::string rfc3339_nano(std::chrono::system_clock::time_point t) {
  auto since = t.time_since_epoch();
  auto secs = std::chrono::duration_cast<std::chrono::seconds>(since);
  if (since < secs) secs -= std::chrono::seconds(1);
  auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(since - secs).count();
  std::time_t tt = static_cast<std::time_t>(secs.count());
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  size_t n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  char frac[16];
  std::snprintf(frac, sizeof(frac), ".%09lldZ", static_cast<long long>(nanos));
  return std::string(buf, n) + frac;
}

std::unique_ptr<ResponseEncoder> make_ollama_generate_encoder(const CompletionJob& job, ResponseMeta meta) {
  return std::make_unique<OllamaEncoder>(job, std::move(meta), false);
}

std::unique_ptr<ResponseEncoder> make_ollama_chat_encoder(const CompletionJob& job, ResponseMeta meta) {
  return std::make_unique<OllamaEncoder>(job, std::move(meta), true);
}

Json ollama_load_response(const std::string& model, bool chat, bool unload) {
  Json r = {{"model", model}, {"created_at", rfc3339_nano(std::chrono::system_clock::now())}};
  if (chat) {
    r["message"] = Json{{"role", "assistant"}, {"content", ""}};
  } else {
    r["response"] = "";
  }
  r["done"] = true;
  r["done_reason"] = unload ? "unload" : "load";
  return r;
}

Json ollama_embed_response(const EmbeddingJob& job, const std::vector<std::vector<float>>& embeddings,
                           int32_t prompt_tokens, int64_t total_ns) {
  if (job.legacy) return Json{{"embedding", embeddings.empty() ? std::vector<float>() : embeddings[0]}};
  Json list = Json::array();
  for (const auto& e : embeddings) list.push_back(e);
  return Json{{"model", job.request.model},
              {"embeddings", std::move(list)},
              {"total_duration", total_ns},
              {"load_duration", 0},
              {"prompt_eval_count", prompt_tokens}};
}

Json ollama_version_response(const std::string& version) { return Json{{"version", version}}; }

Json ollama_tags_response(const protocol::ModelInfo& card) { return ollama_tags_response(std::vector<protocol::ModelInfo>{card}); }

Json ollama_tags_response(const std::vector<protocol::ModelInfo>& cards) {
  Json models = Json::array();
  for (const auto& card : cards) {
    models.push_back({{"name", card.tagged_name()},
                      {"model", card.tagged_name()},
                      {"modified_at", modified_at(card)},
                      {"size", card.size_bytes},
                      {"digest", card.digest},
                      {"details", details_json(card)}});
  }
  return Json{{"models", std::move(models)}};
}

Json ollama_ps_empty_response() { return Json{{"models", Json::array()}}; }

Json ollama_show_response(const protocol::ModelInfo& card, bool tools_in_template) {
  Json capabilities = Json::array();
  if (card.embedding_only) {
    capabilities.push_back("embedding");
  } else {
    capabilities.push_back("completion");
    if (tools_in_template) capabilities.push_back("tools");
  }
  std::string modelfile = "# Modelfile generated by \"hearth show\"\nFROM " + card.path + "\n";
  return Json{{"license", ""},
              {"modelfile", modelfile},
              {"parameters", ""},
              {"template", card.chat_template},
              {"details", details_json(card)},
              {"model_info", card.model_info},
              {"capabilities", std::move(capabilities)},
              {"modified_at", modified_at(card)}};
}

Json ollama_ps_entry(const protocol::ModelInfo& card, uint64_t size, const std::string& expires_at) {
  return Json{{"name", card.tagged_name()},
              {"model", card.tagged_name()},
              {"size", size},
              {"digest", card.digest},
              {"details", details_json(card)},
              {"expires_at", expires_at},
              {"size_vram", card.size_vram},
              {"context_length", card.n_ctx_slot}};
}

Json ollama_ps_response(const protocol::ModelInfo& card) {
  // Single-model serving never unloads.
  return Json{{"models", Json::array({ollama_ps_entry(card, card.size_bytes, "2318-01-01T00:00:00Z")})}};
}

}  // namespace hearth::api
