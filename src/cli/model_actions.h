// The server calls the commands share: /api/show, pulling a model that is missing, and the
// progress streams of pull, push and create (drawn with ProgressView on stderr, as ollama
// does), plus the blob uploads that precede a create from local files.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "cli/console.h"
#include "cli/create_plan.h"
#include "cli/ollama_client.h"

namespace hearth::cli {

// POSTs `body` to a progress route (/api/pull, /api/push, /api/create) and draws its events.
Status stream_progress(OllamaClient& client, const std::string& path, const nlohmann::json& body, Console& console);
// /api/pull with progress; an error says what was being pulled.
Status pull_model(OllamaClient& client, const std::string& name, bool insecure, Console& console);
// /api/show for `name` (kNotFound when the server has no such model).
Result<nlohmann::json> show_model(OllamaClient& client, const std::string& name);
// /api/show, pulling the model first when the server does not have it.
Result<nlohmann::json> ensure_model(OllamaClient& client, const std::string& name, bool insecure, Console& console);
// Uploads a local file as a blob unless the server has it; returns "sha256:<hex>".
Result<std::string> upload_file_blob(OllamaClient& client, const std::string& path, Console& console);
// Uploads the plan's files, fills in `files`/`adapters` and streams /api/create.
Status create_model(OllamaClient& client, CreatePlan plan, Console& console);

}  // namespace hearth::cli
