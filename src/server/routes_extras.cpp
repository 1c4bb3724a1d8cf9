// Routes outside the three dialects: GET / ("Hearth is running"), /health (503 while the
// model loads), /metrics (Prometheus text), and llama-server's /props, /slots, /tokenize,
// /detokenize and /apply-template.
#include "api/openai.h"
#include "server/server_state.h"

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

void tokenize(State& st, const httplib::Request& req, httplib::Response& res) {
  auto body = require_json(req, res);
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
      send_status_error(res, req, s.error());
      return;
    }
  }
  if (!*content) {
    send_error(res, api::Dialect::kOpenAI, HttpError{400, "'content' is required"});
    return;
  }
  auto model = require_model(st, req, res);
  if (!model) return;
  const bool with = with_pieces->value_or(false);
  auto pieces = model->tokenize(**content, add_special->value_or(false), parse_special->value_or(true), with);
  if (!pieces.ok()) {
    send_status_error(res, req, pieces.error());
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
  send_json(res, Json{{"tokens", std::move(tokens)}});
}

void detokenize(State& st, const httplib::Request& req, httplib::Response& res) {
  auto body = require_json(req, res);
  if (!body) return;
  auto tokens = api::read_array(*body, "tokens");
  if (!tokens.ok()) {
    send_status_error(res, req, tokens.error());
    return;
  }
  auto model = require_model(st, req, res);
  if (!model) return;
  std::vector<int32_t> ids;
  if (*tokens) {
    for (const auto& t : **tokens) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX) {
        send_error(res, api::Dialect::kOpenAI, HttpError{400, "'tokens' must be token ids of this model's vocabulary"});
        return;
      }
      ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
    }
  }
  auto text = model->detokenize(ids);
  if (!text.ok()) {
    send_status_error(res, req, text.error());
    return;
  }
  send_json(res, Json{{"content", *text}});
}

void apply_template(State& st, const httplib::Request& req, httplib::Response& res) {
  auto body = require_json(req, res);
  if (!body) return;
  auto job = api::parse_openai_chat(*body);
  if (!job.ok()) {
    send_status_error(res, req, job.error());
    return;
  }
  auto model = require_model(st, req, res);
  if (!model) return;
  auto prompt = model->apply_template(job->request.prompts.at(0).chat);
  if (!prompt.ok()) {
    send_status_error(res, req, prompt.error());
    return;
  }
  send_json(res, Json{{"prompt", *prompt}});
}

}  // namespace

void register_extra_routes(State& s) {
  add_route(s, "GET", "/", [](State&, const httplib::Request&, httplib::Response& res) {
    res.set_content("Hearth is running", "text/plain");
  });
  add_route(s, "GET", "/health", [](State& st, const httplib::Request&, httplib::Response& res) {
    if (st.model()) {
      send_json(res, Json{{"status", "ok"}});
    } else {
      send_json(res, Json{{"status", "loading model"}}, 503);
    }
  });
  add_route(s, "GET", "/metrics", [](State& st, const httplib::Request& req, httplib::Response& res) {
    auto model = require_model(st, req, res);
    if (!model) return;
    res.set_content(metrics_text(model->metrics(), st.counters()), "text/plain; version=0.0.4; charset=utf-8");
  });
  add_route(s, "GET", "/props", [](State& st, const httplib::Request& req, httplib::Response& res) {
    auto model = require_model(st, req, res);
    if (!model) return;
    const protocol::ModelInfo& card = model->model_info();
    send_json(res, Json{{"default_generation_settings", {{"n_ctx", card.n_ctx_slot}, {"model", card.name}}},
                        {"total_slots", card.n_slots},
                        {"model_path", card.path},
                        {"model_alias", card.name},
                        {"chat_template", card.chat_template},
                        {"bos_token", card.bos_token},
                        {"eos_token", card.eos_token},
                        {"build_info", "hearth " + st.options.version},
                        {"modalities", {{"vision", false}, {"audio", false}}},
                        {"embedding_only", card.embedding_only}});
  });
  add_route(s, "GET", "/slots", [](State& st, const httplib::Request& req, httplib::Response& res) {
    auto model = require_model(st, req, res);
    if (!model) return;
    Json slots = Json::array();
    for (const auto& slot : model->slots()) {
      slots.push_back(Json{{"id", slot.id},
                           {"n_ctx", slot.n_ctx},
                           {"is_processing", slot.busy},
                           {"id_task", slot.request_id},
                           {"n_cached", slot.cached_tokens},
                           {"n_prompt_pending", slot.prompt_pending},
                           {"n_decoded", slot.generated}});
    }
    send_json(res, slots);
  });
  add_route(s, "POST", "/tokenize", tokenize);
  add_route(s, "POST", "/detokenize", detokenize);
  add_route(s, "POST", "/apply-template", apply_template);
}

}  // namespace hearth::server
