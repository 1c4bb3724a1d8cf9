// Store-mode model selection and request shaping (see stored_models.h).
#include "server/stored_models.h"

#include "api/ollama.h"
#include "util/log.h"

namespace hearth::server {
namespace {

Result<store::ModelDescription> describe(const State& s, const std::string& name, bool read_gguf) {
  HEARTH_ASSIGN(const store::ModelName parsed, store::parse_model_name(name));
  HEARTH_ASSIGN(const store::StoredModel m, s.options.store->resolve(parsed));
  return store::describe_model(*s.options.store, m, read_gguf);
}

bool is_loaded(const State& s, const store::ModelDescription& d) {
  auto loaded = s.loaded_description();
  return loaded && s.model() && loaded->stored.manifest_digest == d.stored.manifest_digest && loaded->stored.name.same_as(d.stored.name);
}

}  // namespace

std::optional<LoadedModel> require_stored_model(const RouteCall& call, const std::string& name, bool fallback_to_loaded) {
  State& s = call.state;
  auto loaded_now = [&]() -> std::optional<LoadedModel> {
    auto backend = require_model(call);
    if (!backend) return std::nullopt;
    return LoadedModel{backend, s.loaded_description()};
  };
  if (name.empty()) return loaded_now();
  auto d = describe(s, name, false);
  if (!d.ok()) {
    if (fallback_to_loaded && s.model()) return loaded_now();
    if (d.error().kind == ErrorKind::kNotFound && d.error().message.find("blob") == std::string::npos) {
      send_error(call.res, call.dialect, http_model_not_found(name));
    } else {
      send_status_error(call, d.error());
    }
    return std::nullopt;
  }
  if (is_loaded(s, *d)) return LoadedModel{s.model(), s.loaded_description()};
  std::lock_guard lock(s.load_mu);
  if (is_loaded(s, *d)) return LoadedModel{s.model(), s.loaded_description()};
  if (!s.loader) {
    send_error(call.res, call.dialect, http_unavailable("this server cannot load stored models"));
    return std::nullopt;
  }
  const std::string shown = d->stored.name.display();
  log_info("loading stored model", {{"model", shown}, {"blob", d->model_digest}});
  // The old model goes first, so that two never sit in memory because of us (requests still
  // running on it hold it until they finish).
  s.set_model(nullptr);
  auto description = std::make_shared<const store::ModelDescription>(std::move(d).value());
  auto backend = s.loader(*description);
  if (!backend.ok()) {
    log_warn("cannot load stored model", {{"model", shown}, {"error", backend.error().to_string()}});
    HttpError e = http_error_from(backend.error());
    e.message = "cannot load model '" + shown + "': " + backend.error().message;
    if (e.status == 404) e.status = 500;  // the model exists; what it needs does not
    send_error(call.res, call.dialect, e);
    return std::nullopt;
  }
  s.set_loaded(*backend, description);
  return LoadedModel{*backend, description};
}

void unload_stored_model(State& s, const std::string& name) {
  auto parsed = store::parse_model_name(name);
  auto loaded = s.loaded_description();
  if (parsed.ok() && loaded && loaded->stored.name.same_as(*parsed)) {
    std::lock_guard lock(s.load_mu);
    s.set_model(nullptr);
  }
}

void merge_stored_options(const State& s, api::Json& body) {
  if (!s.store_mode()) return;
  const std::string name = api::ollama_model_field(body);
  if (name.empty()) return;
  auto loaded = s.loaded_description();
  std::optional<store::ModelDescription> d;
  auto parsed = store::parse_model_name(name);
  if (loaded && parsed.ok() && loaded->stored.name.same_as(*parsed)) {
    d = *loaded;
  } else if (auto fresh = describe(s, name, false); fresh.ok()) {
    d = std::move(fresh).value();
  }
  if (!d || d->parameters.empty()) return;
  if (!body.contains("options") || body["options"].is_null()) body["options"] = api::Json::object();
  if (!body["options"].is_object()) return;  // the parser reports it
  for (const auto& [k, v] : d->parameters.items()) {
    if (!body["options"].contains(k)) body["options"][k] = v;
  }
}

void apply_stored_prompt(api::CompletionJob& job, const store::ModelDescription& d) {
  for (auto& p : job.request.prompts) {
    if (p.kind == protocol::PromptSource::Kind::kGoTemplate && !p.chat.contains("messages")) {
      // ollama's /api/generate `template`: only the system prompt has a default.
      if (d.system && p.template_fields["System"].empty()) p.template_fields["System"] = *d.system;
      continue;
    }
    if (p.kind != protocol::PromptSource::Kind::kChat || !p.chat.contains("messages") || !p.chat["messages"].is_array()) continue;
    api::Json& msgs = p.chat["messages"];
    api::Json shaped = api::Json::array();
    bool has_system = false;
    for (const auto& m : msgs) has_system = has_system || (m.contains("role") && m["role"] == "system");
    if (d.system && !has_system) shaped.push_back({{"role", "system"}, {"content", *d.system}});
    for (const auto& m : d.messages) shaped.push_back({{"role", m.role}, {"content", m.content}});
    for (auto& m : msgs) shaped.push_back(std::move(m));
    msgs = std::move(shaped);
    if (p.untemplated_text && d.system && !has_system) p.untemplated_text = *d.system + "\n\n" + *p.untemplated_text;
    if (d.template_text) {
      p.kind = protocol::PromptSource::Kind::kGoTemplate;
      p.text = *d.template_text;
      p.untemplated_text.reset();
    }
  }
}

protocol::ModelInfo stored_model_card(const store::ModelDescription& d) {
  protocol::ModelInfo c;
  c.name = d.stored.name.display();
  c.path = d.model_path;
  c.architecture = d.config.model_family;
  c.parameter_size = d.config.model_type;
  c.quantization = d.config.file_type;
  c.size_bytes = d.stored.manifest.total_size();
  c.digest = d.stored.manifest_digest.substr(7);  // ollama lists the manifest digest's hex
  c.modified_unix = d.stored.modified_unix;
  c.chat_template = d.template_text.value_or(d.gguf_template);
  c.context_length = d.context_length;
  c.embedding_only = d.embedding_only;
  c.model_info = d.model_info;
  return c;
}

std::vector<protocol::ModelInfo> stored_model_cards(const State& s) {
  std::vector<protocol::ModelInfo> cards;
  for (const auto& m : s.options.store->list()) {
    auto d = store::describe_model(*s.options.store, m, false);
    if (!d.ok()) {
      log_warn("skipping a stored model that cannot be read", {{"model", m.name.display()}, {"error", d.error().to_string()}});
      continue;
    }
    cards.push_back(stored_model_card(*d));
  }
  return cards;
}

void show_stored_model(const RouteCall& call, const std::string& name, const api::Json&) {
  auto d = describe(call.state, name, true);
  if (!d.ok()) {
    if (d.error().kind == ErrorKind::kNotFound && d.error().message.find("blob") == std::string::npos) {
      send_error(call.res, call.dialect, http_model_not_found(name));
    } else {
      send_status_error(call, d.error());
    }
    return;
  }
  const protocol::ModelInfo card = stored_model_card(*d);
  // A Jinja or Go template that mentions tools can render them.
  const bool tools = card.chat_template.find("tools") != std::string::npos || card.chat_template.find(".Tools") != std::string::npos;
  api::Json out = api::ollama_show_response(card, tools);
  std::string license;
  for (const auto& l : d->licenses) license += (license.empty() ? "" : "\n") + l;
  out["license"] = license;
  out["modelfile"] = store::format_modelfile(d->modelfile(), d->stored.name.display());
  out["parameters"] = d->parameters_text();
  out["template"] = card.chat_template;
  if (d->system) out["system"] = *d->system;
  if (!d->messages.empty()) {
    api::Json msgs = api::Json::array();
    for (const auto& m : d->messages) msgs.push_back({{"role", m.role}, {"content", m.content}});
    out["messages"] = std::move(msgs);
  }
  out["details"]["parent_model"] = "";
  send_json(call.res, out);
}

}  // namespace hearth::server
