// Anthropic's Messages API: /v1/messages and /v1/messages/count_tokens.
#include "api/anthropic.h"
#include "server/completion_route.h"

namespace hearth::server {

void register_anthropic_routes(State& s) {
  constexpr api::Dialect kDialect = api::Dialect::kAnthropic;
  add_route(s, kDialect, "POST", "/v1/messages", [](const RouteCall& call) {
    auto body = require_json(call);
    if (!body) return;
    serve_completion(call, api::parse_anthropic_messages(*body), api::make_anthropic_messages_encoder, "msg_");
  });
  add_route(s, kDialect, "POST", "/v1/messages/count_tokens", [](const RouteCall& call) {
    auto body = require_json(call);
    if (!body) return;
    auto job = api::parse_anthropic_messages(*body, /*require_max_tokens=*/false);
    if (!job.ok()) {
      send_status_error(call, job.error());
      return;
    }
    auto model = require_model(call);
    if (!model) return;
    auto prompt = model->render_prompt(job->request.prompts.at(0));
    if (!prompt.ok()) {
      send_status_error(call, prompt.error());
      return;
    }
    send_json(call.res, api::anthropic_count_tokens_response(static_cast<int32_t>(prompt->ids.size())));
  });
}

}  // namespace hearth::server
