// The OpenAI responses that are plain lists: /v1/embeddings and /v1/models.
#include <cstring>
#include <ctime>

#include "api/openai.h"

namespace hearth::api {

std::string base64_floats(const std::vector<float>& values) {
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(values.size() * sizeof(float), '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, &values[i], sizeof(bits));
    for (int b = 0; b < 4; ++b) bytes[i * 4 + static_cast<size_t>(b)] = static_cast<char>((bits >> (8 * b)) & 0xFF);
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t n = (static_cast<uint8_t>(bytes[i]) << 16) | (static_cast<uint8_t>(bytes[i + 1]) << 8) |
                 static_cast<uint8_t>(bytes[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += kAlphabet[n & 63];
  }
  if (i < bytes.size()) {
    uint32_t n = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) n |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

Json openai_embeddings_response(const EmbeddingJob& job, const std::vector<std::vector<float>>& embeddings,
                                int32_t prompt_tokens) {
  Json data = Json::array();
  for (size_t i = 0; i < embeddings.size(); ++i) {
    Json e = {{"object", "embedding"}, {"index", i}};
    if (job.base64) {
      e["embedding"] = base64_floats(embeddings[i]);
    } else {
      e["embedding"] = embeddings[i];
    }
    data.push_back(std::move(e));
  }
  return Json{{"object", "list"},
              {"data", std::move(data)},
              {"model", job.request.model},
              {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
}

Json openai_models_response(const protocol::ModelInfo& card) { return openai_models_response(std::vector<protocol::ModelInfo>{card}); }

Json openai_models_response(const std::vector<protocol::ModelInfo>& cards) {
  Json data = Json::array();
  for (const auto& card : cards) data.push_back(openai_model_object(card));
  return Json{{"object", "list"}, {"data", std::move(data)}};
}

Json anthropic_models_response(const protocol::ModelInfo& card) {
  std::string created = "1970-01-01T00:00:00Z";
  char buf[32];
  std::time_t t = static_cast<std::time_t>(card.modified_unix);
  std::tm tm{};
  if (gmtime_r(&t, &tm) && std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm) > 0) created = buf;
  Json model = {{"type", "model"}, {"id", card.name}, {"display_name", card.name}, {"created_at", created}};
  return Json{{"data", Json::array({std::move(model)})}, {"has_more", false}, {"first_id", card.name}, {"last_id", card.name}};
}

Json openai_model_object(const protocol::ModelInfo& card) {
  return Json{{"id", card.name},
                {"object", "model"},
                {"created", card.modified_unix},
                {"owned_by", "hearth"},
                {"meta",
                 {{"n_ctx_train", card.context_length},
                  {"n_params", card.parameter_count},
                  {"size", card.size_bytes},
                  {"architecture", card.architecture}}}};
}

}  // namespace hearth::api
