// `create`: builds a model's layers and manifest from a GGUF (registered in place by hard link
// or reflink when it is a local file, or a blob already in the store), from an existing model,
// or from a blob digest, plus the Modelfile's template, system prompt, parameters, messages,
// adapters and licenses. Layers follow ollama: model, adapters, template, system, params,
// messages, licenses; without a TEMPLATE the GGUF's own (Jinja) chat template is used as is.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/model_store.h"
#include "store/modelfile.h"

namespace hearth::store {

struct CreateRequest {
  // A model name, "sha256:<hex>" (a GGUF blob in the store), or a local GGUF path (only with
  // CreateOptions::allow_local_paths). May be empty when `files` names the GGUF.
  std::string from;
  std::vector<std::pair<std::string, std::string>> files;     // file name -> digest (API form)
  std::vector<std::pair<std::string, std::string>> adapters;  // file name -> digest (API form)
  std::vector<std::string> adapter_sources;                   // Modelfile ADAPTER: path or digest
  std::optional<std::string> template_text;
  std::optional<std::string> system;
  std::vector<std::string> licenses;
  std::optional<std::vector<ChatMessage>> messages;
  nlohmann::json parameters = nlohmann::json::object();  // typed (model_parameters.h)
  std::string requires_version;
  std::string quantize;  // "" or a type for quantize_model_layer (model_quantize.h): "Q4_K_M", ...
};

struct CreateOptions {
  bool allow_local_paths = false;  // `from`/ADAPTER may name files outside the store
  std::string base_dir = ".";      // relative paths are read from here
};

// Status lines as ollama's /api/create streams them ("using existing layer sha256:...").
using CreateProgress = std::function<void(const std::string& status)>;

CreateRequest create_request_from(const Modelfile& modelfile);

// True when `from` names a file rather than a model or a digest: it starts with '/', './',
// '../' or '~', or ends with ".gguf".
bool names_local_file(const std::string& from);

// Errors: kInvalidArgument (bad request, local file refused), kNotFound (model or blob
// missing), kCorrupt (a blob that is not GGUF). Nothing is published unless every layer is in
// the store.
Result<StoredModel> create_model(const ModelStore& store, const ModelName& name, const CreateRequest& request,
                                 const CreateOptions& options, const CreateProgress& progress);

}  // namespace hearth::store
