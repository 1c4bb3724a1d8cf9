// What a stored model is, read back from its layers: the GGUF blob to load, the Modelfile's
// template, system prompt, parameters, messages, adapters and licenses, the config, and (when
// asked) the GGUF's own facts for /api/show. The server applies the Modelfile parts to
// requests; the loader loads `model_path`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/model_store.h"
#include "store/modelfile.h"

namespace hearth::store {

struct ModelDescription {
  StoredModel stored;
  std::string model_path;        // the GGUF blob
  std::string model_digest;      // its digest
  uint64_t model_size = 0;
  ModelConfig config;
  std::optional<std::string> template_text;  // TEMPLATE (Go template); nullopt: the GGUF's own
  std::optional<std::string> system;
  nlohmann::json parameters = nlohmann::json::object();
  std::vector<ChatMessage> messages;
  std::vector<std::string> licenses;
  std::vector<std::string> adapter_paths;

  // Filled only by describe_model(..., true):
  nlohmann::ordered_json model_info = nlohmann::ordered_json::object();  // GGUF metadata summary
  std::string gguf_template;     // tokenizer.chat_template
  int32_t context_length = 0;    // <arch>.context_length
  bool embedding_only = false;   // an encoder (bert family)

  // The Modelfile that recreates this model (FROM the blob path).
  Modelfile modelfile() const;
  // ollama's `parameters` text in /api/show: "name value" lines, values padded to a column.
  std::string parameters_text() const;
};

// Reads every layer of `model` (sizes checked against the manifest); `read_gguf` also opens the
// GGUF for its metadata. Errors: a missing or unreadable layer, a model without a GGUF layer.
Result<ModelDescription> describe_model(const ModelStore& store, const StoredModel& model, bool read_gguf);

}  // namespace hearth::store
