// SSE and NDJSON framing (see stream_framing.h).
#include "api/stream_framing.h"

#include "api/json_fields.h"

namespace hearth::api {

std::string sse_data(const nlohmann::ordered_json& payload) { return "data: " + dump_json(payload) + "\n\n"; }

std::string sse_event(std::string_view name, const nlohmann::ordered_json& payload) {
  std::string out = "event: ";
  out += name;
  out += "\ndata: ";
  out += dump_json(payload);
  out += "\n\n";
  return out;
}

std::string sse_done() { return "data: [DONE]\n\n"; }

std::string ndjson_line(const nlohmann::ordered_json& payload) { return dump_json(payload) + "\n"; }

}  // namespace hearth::api
