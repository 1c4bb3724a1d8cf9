// Anthropic's Messages API: /v1/messages and /v1/messages/count_tokens.
#include "api/anthropic.h"
#include "server/completion_route.h"

namespace hearth::server {

void register_anthropic_routes(State& s) {
  add_route(s, "POST", "/v1/messages", [](State& st, const httplib::Request& req, httplib::Response& res) {
    auto body = require_json(req, res);
    if (!body) return;
    serve_completion(st, req, res, api::parse_anthropic_messages(*body), api::make_anthropic_messages_encoder, "msg_");
  });
  add_route(s, "POST", "/v1/messages/count_tokens", [](State& st, const httplib::Request& req, httplib::Response& res) {
    auto body = require_json(req, res);
    if (!body) return;
    auto job = api::parse_anthropic_messages(*body, /*require_max_tokens=*/false);
    if (!job.ok()) {
      send_status_error(res, req, job.error());
      return;
    }
    auto model = require_model(st, req, res);
    if (!model) return;
    auto prompt = model->render_prompt(job->request.prompts.at(0));
    if (!prompt.ok()) {
      send_status_error(res, req, prompt.error());
      return;
    }
    send_json(res, api::anthropic_count_tokens_response(static_cast<int32_t>(prompt->ids.size())));
  });
}

}  // namespace hearth::server
