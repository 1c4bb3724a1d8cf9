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
  add_route(s, "GET", kStreamPattern, [](State& st, const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
    uint64_t from = 0;
    if (req.has_param("from")) {
      const std::string text = req.get_param_value("from");
      char* end = nullptr;
      unsigned long long v = std::strtoull(text.c_str(), &end, 10);
      if (text.empty() || *end != '\0' || text[0] == '-') {
        send_error(res, api::Dialect::kOpenAI, HttpError{400, "'from' must be a byte offset (a non-negative integer)"});
        return;
      }
      from = v;
    }
    auto stream = st.streams.find(id);
    if (!stream) {
      send_error(res, api::Dialect::kOpenAI, http_not_found("no stream for conversation '" + id + "'"));
      return;
    }
    serve_stream_follow(st, req, res, stream, from);
  });
  add_route(s, "DELETE", kStreamPattern, [](State& st, const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
    auto stream = st.streams.find(id);
    if (!stream) {
      send_error(res, api::Dialect::kOpenAI, http_not_found("no stream for conversation '" + id + "'"));
      return;
    }
    stream->cancel();
    stream->join();
    send_json(res, Json{{"conversation_id", id}, {"status", stream_state_name(stream->state())},
                        {"bytes", stream->buffer().end_offset()}});
  });
  add_route(s, "POST", "/v1/streams/lookup", [](State& st, const httplib::Request& req, httplib::Response& res) {
    auto body = require_json(req, res);
    if (!body) return;
    auto ids = api::read_array(*body, "conversation_ids");
    if (!ids.ok() || !*ids) {
      send_error(res, api::Dialect::kOpenAI, HttpError{400, "'conversation_ids' must be an array of strings"});
      return;
    }
    std::vector<std::string> wanted;
    for (const auto& v : **ids) {
      if (!v.is_string()) {
        send_error(res, api::Dialect::kOpenAI, HttpError{400, "'conversation_ids' must be an array of strings"});
        return;
      }
      wanted.push_back(v.get<std::string>());
    }
    if (wanted.size() > 1000) {
      send_error(res, api::Dialect::kOpenAI, HttpError{400, "at most 1000 conversation ids per lookup"});
      return;
    }
    Json streams = Json::array();
    for (const auto& status : st.streams.lookup(wanted)) {
      Json entry = {{"conversation_id", status.id}, {"status", status.found ? stream_state_name(status.state) : "not_found"}};
      if (status.found) {
        entry["bytes"] = status.bytes;
        entry["first_byte"] = status.first_byte;
      }
      streams.push_back(std::move(entry));
    }
    send_json(res, Json{{"streams", std::move(streams)}});
  });
}

}  // namespace hearth::server
