// Routes outside the three dialects (the web UI at / is web_ui.cpp's): /health (503 while the
// model loads; 200 at once in store mode, where models load on demand), /metrics (Prometheus
// text), and llama-server's /props, /slots, /tokenize, /detokenize and /apply-template.
// In store and router mode those five answer for the model a `model` query parameter or JSON
// field names (loading it first, as llama-server's router does); without one, for the loaded
// model (router mode: the loaded model whose key sorts last, when several are; /props then
// answers with the store's summary, as before any model is loaded).
#include "api/openai.h"
#include "server/server_state.h"
#include "server/stored_models.h"

namespace hearth::server {
namespace {

using api::Json;

bool valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

// The model a single-model route answers for: the one `model` names (query parameter, else the
// JSON body's field) in store mode, else the loaded one; nullopt after answering the error.
// The returned lease (router mode) keeps the model loaded while the route uses it.
std::optional<LoadedModel> model_for(const RouteCall& call, const Json* body) {
  std::string name = call.req.has_param("model") ? call.req.get_param_value("model") : "";
  if (name.empty() && body != nullptr && body->contains("model")) {
    const Json& m = (*body)["model"];
    if (!m.is_string()) {
      send_error(call.res, call.dialect, HttpError{400, "'model' must be a string (a stored model's name)"});
      return std::nullopt;
    }
    name = m.get<std::string>();
  }
  if (!name.empty() && call.state.store_mode()) return require_stored_model(call, name, false);
  auto m = require_model(call);
  if (!m) return std::nullopt;
  return LoadedModel{m, nullptr};
}

void tokenize(const RouteCall& call) {
  auto body = require_json(call);
  if (!body) return;
  auto content = api::read_string(*body, "content");
  auto add_special = api::read_bool(*body, "add_special");
  auto parse_special = api::read_bool(*body, "parse_special");
  auto with_pieces = api::read_bool(*body, "with_pieces");
  for (const Status& s : {content.ok() ? ok_status() : Status(content.error()),
                          add_special.ok() ? ok_status() : Status(add_special.error()),
                          parse_special.ok() ? ok_status() : Status(parse_special.error()),
                          with_pieces.ok() ? ok_status() : Status(with_pieces.error())}) {
    if (!s.ok()) {
      send_status_error(call, s.error());
      return;
    }
  }
  if (!*content) {
    send_error(call.res, call.dialect, HttpError{400, "'content' is required"});
    return;
  }
  auto loaded = model_for(call, &*body);
  if (!loaded) return;
  const auto& model = loaded->backend;
  const bool with = with_pieces->value_or(false);
  auto pieces = model->tokenize(**content, add_special->value_or(false), parse_special->value_or(true), with);
  if (!pieces.ok()) {
    send_status_error(call, pieces.error());
    return;
  }
  Json tokens = Json::array();
  for (const protocol::TokenPiece& t : *pieces) {
    if (with) {
      Json p = valid_utf8(t.piece) ? Json(t.piece) : Json::array();
      if (p.is_array()) {
        for (unsigned char c : t.piece) p.push_back(static_cast<int>(c));
      }
      tokens.push_back(Json{{"id", t.id}, {"piece", std::move(p)}});
    } else {
      tokens.push_back(t.id);
    }
  }
  send_json(call.res, Json{{"tokens", std::move(tokens)}});
}

void detokenize(const RouteCall& call) {
  auto body = require_json(call);
  if (!body) return;
  auto tokens = api::read_array(*body, "tokens");
  if (!tokens.ok()) {
    send_status_error(call, tokens.error());
    return;
  }
  auto loaded = model_for(call, &*body);
  if (!loaded) return;
  const auto& model = loaded->backend;
  std::vector<int32_t> ids;
  if (*tokens) {
    for (const auto& t : **tokens) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX) {
        send_error(call.res, call.dialect, HttpError{400, "'tokens' must be token ids of this model's vocabulary"});
        return;
      }
      ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
    }
  }
  auto text = model->detokenize(ids);
  if (!text.ok()) {
    send_status_error(call, text.error());
    return;
  }
  send_json(call.res, Json{{"content", *text}});
}

// The sampling a request gets for the parameters it leaves out (the web UI shows them).
Json sampling_defaults() {
  const protocol::SamplingOptions d;
  return Json{{"temperature", d.temperature},       {"top_k", d.top_k},
              {"top_p", d.top_p},                   {"min_p", d.min_p},
              {"repeat_penalty", d.repeat_penalty}, {"repeat_last_n", d.repeat_last_n},
              {"presence_penalty", d.presence_penalty}, {"frequency_penalty", d.frequency_penalty}};
}

void apply_template(const RouteCall& call) {
  auto body = require_json(call);
  if (!body) return;
  auto job = api::parse_openai_chat(*body);
  if (!job.ok()) {
    send_status_error(call, job.error());
    return;
  }
  auto loaded = model_for(call, &*body);
  if (!loaded) return;
  auto prompt = loaded->backend->apply_template(job->request.prompts.at(0).chat);
  if (!prompt.ok()) {
    send_status_error(call, prompt.error());
    return;
  }
  send_json(call.res, Json{{"prompt", *prompt}});
}

}  // namespace

void register_extra_routes(State& s) {
  // Outside the three dialects; errors take OpenAI's shape, as llama-server's do.
  constexpr api::Dialect kDialect = api::Dialect::kOpenAI;
  add_route(s, kDialect, "GET", "/health", [](const RouteCall& call) {
    if (call.state.model() || call.state.store_mode()) {
      send_json(call.res, Json{{"status", "ok"}});
    } else {
      send_json(call.res, Json{{"status", "loading model"}}, 503);
    }
  });
  add_route(s, kDialect, "GET", "/metrics", [](const RouteCall& call) {
    if (call.state.router) {
      call.res.set_content(routed_metrics_text(call.state), "text/plain; version=0.0.4; charset=utf-8");
      return;
    }
    auto model = require_model(call);
    if (!model) return;
    call.res.set_content(metrics_text(model->metrics(), call.state.counters()), "text/plain; version=0.0.4; charset=utf-8");
  });
  add_route(s, kDialect, "GET", "/props", [](const RouteCall& call) {
    const char* mode = call.state.store_mode() ? "store" : "single";
    const bool named = call.req.has_param("model") && !call.req.get_param_value("model").empty();
    if (call.state.store_mode() && !named && !call.state.model()) {
      // Store mode before any model is loaded: what the web UI needs to offer the store.
      send_json(call.res, Json{{"hearth_mode", mode}, {"build_info", "hearth " + call.state.options.version}});
      return;
    }
    auto loaded = model_for(call, nullptr);
    if (!loaded) return;
    const protocol::ModelInfo& card = loaded->backend->model_info();
    send_json(call.res, Json{{"default_generation_settings", {{"n_ctx", card.n_ctx_slot}, {"model", card.name}, {"params", sampling_defaults()}}},
                             {"hearth_mode", mode},
                             {"total_slots", card.n_slots},
                             {"model_path", card.path},
                             {"model_alias", card.name},
                             {"chat_template", card.chat_template},
                             {"bos_token", card.bos_token},
                             {"eos_token", card.eos_token},
                             {"build_info", "hearth " + call.state.options.version},
                             {"modalities", {{"vision", false}, {"audio", false}}},
                             {"embedding_only", card.embedding_only}});
  });
  add_route(s, kDialect, "GET", "/slots", [](const RouteCall& call) {
    auto loaded = model_for(call, nullptr);
    if (!loaded) return;
    Json slots = Json::array();
    for (const auto& slot : loaded->backend->slots()) {
      slots.push_back(Json{{"id", slot.id},
                           {"n_ctx", slot.n_ctx},
                           {"is_processing", slot.busy},
                           {"id_task", slot.request_id},
                           {"n_cached", slot.cached_tokens},
                           {"n_prompt_pending", slot.prompt_pending},
                           {"n_decoded", slot.generated},
                           {"n_kv_blocks", slot.kv_blocks},
                           {"n_kv_blocks_shared", slot.kv_blocks_shared},
                           {"kv_device_bytes", slot.kv_device_bytes},
                           {"n_kv_sliding_blocks", slot.kv_sliding_blocks}});
    }
    send_json(call.res, slots);
  });
  add_route(s, kDialect, "POST", "/tokenize", tokenize);
  add_route(s, kDialect, "POST", "/detokenize", detokenize);
  add_route(s, kDialect, "POST", "/apply-template", apply_template);
}

}  // namespace hearth::server
