// Wire framing of streamed responses: Server-Sent Events (OpenAI, Anthropic) and
// newline-delimited JSON (ollama). JSON is dumped compactly, so a payload never contains a raw
// newline and one event is always one `data:` line.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace hearth::api {

// "data: {json}\n\n"
std::string sse_data(const nlohmann::ordered_json& payload);
// "event: NAME\ndata: {json}\n\n"
std::string sse_event(std::string_view name, const nlohmann::ordered_json& payload);
// "data: [DONE]\n\n", OpenAI's end-of-stream marker.
std::string sse_done();
// "{json}\n"
std::string ndjson_line(const nlohmann::ordered_json& payload);

}  // namespace hearth::api
