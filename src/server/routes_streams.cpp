// Resumable stream routes: GET /v1/stream/{id}?from=N (replay from byte N, then follow live),
// DELETE /v1/stream/{id} (stop it), POST /v1/streams/lookup {conversation_ids: [...]} (status
// of the named ids only). No route lists conversations: knowing an id is what grants access.
#include <cstdlib>

#include "server/completion_route.h"

namespace hearth::server {
namespace {

using api::Json;

const char* const kStreamPattern = R"(/v1/stream/([A-Za-z0-9._:\-]{1,128}))";

}  // namespace

void register_stream_routes(State& s) {
  constexpr api::Dialect kDialect = api::Dialect::kOpenAI;
  add_route(s, kDialect, "GET", kStreamPattern, [](const RouteCall& call) {
    const std::string id = call.req.matches[1];
    uint64_t from = 0;
    if (call.req.has_param("from")) {
      const std::string text = call.req.get_param_value("from");
      char* end = nullptr;
      unsigned long long v = std::strtoull(text.c_str(), &end, 10);
      if (text.empty() || *end != '\0' || text[0] == '-') {
        send_error(call.res, call.dialect, HttpError{400, "'from' must be a byte offset (a non-negative integer)"});
        return;
      }
      from = v;
    }
    auto stream = call.state.streams.find(id);
    if (!stream) {
      send_error(call.res, call.dialect, http_not_found("no stream for conversation '" + id + "'"));
      return;
    }
    serve_stream_follow(call, stream, from);
  });
  add_route(s, kDialect, "DELETE", kStreamPattern, [](const RouteCall& call) {
    const std::string id = call.req.matches[1];
    auto stream = call.state.streams.find(id);
    if (!stream) {
      send_error(call.res, call.dialect, http_not_found("no stream for conversation '" + id + "'"));
      return;
    }
    stream->cancel();
    stream->join();
    send_json(call.res, Json{{"conversation_id", id}, {"status", stream_state_name(stream->state())},
                             {"bytes", stream->buffer().end_offset()}});
  });
  add_route(s, kDialect, "POST", "/v1/streams/lookup", [](const RouteCall& call) {
    auto body = require_json(call);
    if (!body) return;
    auto ids = api::read_array(*body, "conversation_ids");
    if (!ids.ok() || !*ids) {
      send_error(call.res, call.dialect, HttpError{400, "'conversation_ids' must be an array of strings"});
      return;
    }
    std::vector<std::string> wanted;
    for (const auto& v : **ids) {
      if (!v.is_string()) {
        send_error(call.res, call.dialect, HttpError{400, "'conversation_ids' must be an array of strings"});
        return;
      }
      wanted.push_back(v.get<std::string>());
    }
    if (wanted.size() > 1000) {
      send_error(call.res, call.dialect, HttpError{400, "at most 1000 conversation ids per lookup"});
      return;
    }
    Json streams = Json::array();
    for (const auto& status : call.state.streams.lookup(wanted)) {
      Json entry = {{"conversation_id", status.id}, {"status", status.found ? stream_state_name(status.state) : "not_found"}};
      if (status.found) {
        entry["bytes"] = status.bytes;
        entry["first_byte"] = status.first_byte;
      }
      streams.push_back(std::move(entry));
    }
    send_json(call.res, Json{{"streams", std::move(streams)}});
  });
}

}  // namespace hearth::server
