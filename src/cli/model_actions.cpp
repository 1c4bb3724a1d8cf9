// Shared server calls of the CLI commands (see model_actions.h).
#include "cli/model_actions.h"

#include <ostream>

#include "cli/human_format.h"
#include "cli/progress_view.h"
#include "util/sha256.h"

namespace hearth::cli {

using Json = nlohmann::json;

Status stream_progress(OllamaClient& client, const std::string& path, const Json& body, Console& console) {
  ProgressView view(console.err_terminal, console.width);
  Status st = client.stream(path, body, [&](const Json& chunk) {
    console.err << view.update(progress_event_from_json(chunk), monotonic_seconds());
    console.err.flush();
    return true;
  });
  console.err << view.finish(monotonic_seconds());
  console.err.flush();
  return st;
}

Status pull_model(OllamaClient& client, const std::string& name, bool insecure, Console& console) {
  Json body = {{"model", name}, {"stream", true}};
  if (insecure) body["insecure"] = true;
  Status st = stream_progress(client, "/api/pull", body, console);
  if (!st.ok()) return st.error().with_context("pulling '" + name + "' failed");
  return ok_status();
}

Result<Json> show_model(OllamaClient& client, const std::string& name) {
  Json body = {{"model", name}};
  return client.call("POST", "/api/show", &body);
}

Result<Json> ensure_model(OllamaClient& client, const std::string& name, bool insecure, Console& console) {
  auto shown = show_model(client, name);
  if (shown.ok() || shown.error().kind != ErrorKind::kNotFound) return shown;
  Status pulled = pull_model(client, name, insecure, console);
  if (!pulled.ok()) {
    return make_error(ErrorKind::kNotFound, shown.error().message + "; " + pulled.error().message);
  }
  return show_model(client, name);
}

Result<std::string> upload_file_blob(OllamaClient& client, const std::string& path, Console& console) {
  HEARTH_ASSIGN(std::string hex, sha256_file_hex(path));
  const std::string digest = "sha256:" + hex;
  HEARTH_ASSIGN(bool present, client.blob_exists(digest));
  if (present) return digest;
  ProgressView view(console.err_terminal, console.width);
  const std::string label = "copying file " + digest.substr(0, 19);
  Status st = client.upload_blob(digest, path, [&](uint64_t sent, uint64_t total) {
    console.err << view.update(ProgressEvent{label, digest, total, sent}, monotonic_seconds());
  });
  console.err << view.finish(monotonic_seconds());
  if (!st.ok()) return st.error().with_context("uploading '" + path + "'");
  return digest;
}

Status create_model(OllamaClient& client, CreatePlan plan, Console& console) {
  if (!plan.model_file.empty()) {
    HEARTH_ASSIGN(std::string digest, upload_file_blob(client, plan.model_file, console));
    plan.request["files"] = Json{{upload_file_key(plan.model_file), digest}};
  }
  for (const auto& adapter : plan.adapter_files) {
    HEARTH_ASSIGN(std::string digest, upload_file_blob(client, adapter, console));
    if (!plan.request.contains("adapters")) plan.request["adapters"] = Json::object();
    plan.request["adapters"][upload_file_key(adapter)] = digest;
  }
  return stream_progress(client, "/api/create", plan.request, console);
}

}  // namespace hearth::cli
