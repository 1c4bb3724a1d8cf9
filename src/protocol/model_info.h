// What the HTTP side knows of a loaded model (/api/tags, /api/show, /api/ps, /v1/models,
// /props): names, file facts, capabilities and a summary of its GGUF metadata. Filled once by
// the engine side when the model is loaded and handed across with the backend; plain data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hearth::protocol {

struct ModelInfo {
  std::string name;                  // what responses call it: --alias, or the file stem
  std::vector<std::string> aliases;  // other accepted names (general.name, file stem), lower case
  std::string path;
  std::string architecture;          // general.architecture
  std::string parameter_size;        // "2.18M", ollama style
  uint64_t parameter_count = 0;
  std::string quantization;          // "Q8_0", "F32", ...
  uint64_t size_bytes = 0;
  uint64_t size_vram = 0;            // bytes of the model held in GPU memory (/api/ps)
  std::string digest;                // lower-case hex sha256 of the file ("" until computed)
  int64_t modified_unix = 0;         // file modification time
  std::string chat_template;         // the template in use
  // The file has no (usable) chat template: chat uses Hearth's plain fallback and
  // chat_template is "" (what /api/show reports); a generate prompt is used as it is.
  bool chat_template_builtin = false;
  int32_t context_length = 0;        // trained context (<arch>.context_length)
  int32_t n_ctx_slot = 0;            // context of one request here
  int32_t n_slots = 0;
  bool embedding_only = false;       // an encoder (bert): embeddings, no generation
  bool supports_tools = false;       // the chat template renders `tools`
  nlohmann::ordered_json model_info = nlohmann::ordered_json::object();  // GGUF scalars, small arrays
  std::string bos_token, eos_token;
  // Fill-in-the-middle control tokens (-1 when the model has none).
  int32_t fim_prefix = -1, fim_suffix = -1, fim_middle = -1;

  // True when `requested` names this model: empty, the name or an alias, compared without case
  // and with an optional ":latest" tag.
  bool answers_to(const std::string& requested) const;
  // The name with ":latest" added when it has no tag (ollama's listing form).
  std::string tagged_name() const;
};

}  // namespace hearth::protocol
