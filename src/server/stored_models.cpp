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

// Router mode: the model loaded in its runner (loading it, or waiting for room, first).
static std::optional<LoadedModel> require_routed_model(const RouteCall& call, store::ModelDescription d, std::optional<int64_t> keep_alive_ms) {
  State& s = call.state;
  const std::string shown = d.stored.name.display();
  if (!d.adapter_paths.empty()) {
    send_error(call.res, call.dialect, HttpError{500, "cannot load model '" + shown + "': LoRA adapters (ADAPTER) are not supported by Hearth yet"});
    return std::nullopt;
  }
  const router::ModelLoadSpec spec = s.router_spec(d);
  auto lease = s.router->acquire(spec, keep_alive_ms);
  if (!lease.ok()) {
    HttpError e = http_error_from(lease.error());
    if (lease.error().kind != ErrorKind::kUnavailable) {
      e.message = "cannot load model '" + shown + "': " + lease.error().message;
      if (e.status == 404 || e.status == 400) e.status = 500;  // the model exists; what it needs does not
    }
    if (lease.error().kind == ErrorKind::kOutOfRange) e.status = 507;  // insufficient storage: memory
    send_error(call.res, call.dialect, e);
    return std::nullopt;
  }
  auto description = std::make_shared<const store::ModelDescription>(std::move(d));
  {
    std::lock_guard lock(s.routed_mu);
    s.routed[spec.key] = description;
  }
  return LoadedModel{(*lease)->backend(), description, *lease};
}

std::optional<LoadedModel> require_stored_model(const RouteCall& call, const std::string& name, bool fallback_to_loaded,
                                                std::optional<int64_t> keep_alive_ms) {
  State& s = call.state;
  if (s.router) {
    auto d = name.empty() ? Result<store::ModelDescription>(make_error(ErrorKind::kNotFound, "no model named"))
                          : describe(s, name, false);
    if (d.ok()) return require_routed_model(call, std::move(d).value(), keep_alive_ms);
    if (fallback_to_loaded || name.empty()) {
      if (auto b = routed_backend(s, "")) return LoadedModel{b, nullptr, nullptr};
    }
    if (name.empty()) {
      send_error(call.res, call.dialect, HttpError{400, "model is required"});
    } else if (d.error().kind == ErrorKind::kNotFound && d.error().message.find("blob") == std::string::npos) {
      send_error(call.res, call.dialect, http_model_not_found(name));
    } else {
      send_status_error(call, d.error());
    }
    return std::nullopt;
  }
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

api::Json routed_ps_response(State& s) {
  api::Json models = api::Json::array();
  const auto steady_now = router::RouterClock::now();
  const auto system_now = std::chrono::system_clock::now();
  for (const auto& m : s.router->loaded()) {
    if (!m.runner) continue;  // still loading
    std::shared_ptr<const store::ModelDescription> d;
    {
      std::lock_guard lock(s.routed_mu);
      if (auto it = s.routed.find(m.key); it != s.routed.end()) d = it->second;
    }
    protocol::ModelInfo card = d ? stored_model_card(*d) : m.runner->backend()->model_info();
    card.n_ctx_slot = m.runner->backend()->model_info().n_ctx_slot;
    std::string expires = "2318-01-01T00:00:00Z";  // kept forever (keep_alive < 0)
    if (m.expires) {
      expires = api::rfc3339_nano(system_now + std::chrono::duration_cast<std::chrono::system_clock::duration>(*m.expires - steady_now));
    }
    models.push_back(api::ollama_ps_entry(card, m.memory_bytes, expires));
  }
  return api::Json{{"models", std::move(models)}};
}

std::shared_ptr<protocol::InferenceBackend> routed_backend(State& s, const std::string& name) {
  auto parsed = store::parse_model_name(name);
  std::shared_ptr<protocol::InferenceBackend> latest;
  router::RouterClock::time_point latest_used{};
  for (const auto& m : s.router->loaded()) {
    if (!m.runner || !m.runner->alive()) continue;
    auto b = m.runner->backend();
    if (parsed.ok()) {
      std::lock_guard lock(s.routed_mu);
      auto it = s.routed.find(m.key);
      if (it != s.routed.end() && it->second->stored.name.same_as(*parsed)) return b;
    }
    if (!latest || m.last_used > latest_used) {
      latest = b;
      latest_used = m.last_used;
    }
  }
  return name.empty() ? latest : nullptr;
}

void unload_stored_model(State& s, const std::string& name) {
  if (s.router) {
    auto d = describe(s, name, false);
    if (d.ok()) s.router->unload(s.router_spec(*d).key);
    return;
  }
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
