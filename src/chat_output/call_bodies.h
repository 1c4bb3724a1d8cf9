// Reading the text of tool calls once the parser has cut it out of the reply: the JSON helpers
// every family needs and one reader per family whose calls are not plain {"name", "arguments"}
// objects. Internal to chat_output (the parser and its tests use it).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat_output/chat_output_parser.h"

namespace hearth::chat_output_detail {

using Json = nlohmann::ordered_json;

// End (one past) of the JSON object or array starting at `from`, or npos while it is
// incomplete. `from` must point at '{' or '['.
size_t json_value_end(std::string_view text, size_t from);
// Arguments as compact JSON object text: an object as is, or a string holding one.
bool arguments_text(const Json& args, std::string& out);
// Compact JSON text of any value (invalid UTF-8 replaced, never thrown).
std::string compact(const Json& value);
// `text` (after whitespace) is exactly one JSON object: its compact form.
bool object_text(std::string_view text, std::string& out);

// {"name"|name_key: ..., "arguments"|"parameters"|args_key: {...}, "id"|id_key?} -> a call.
bool call_from_object(const Json& obj, ParsedToolCall& call, const char* name_key = "name",
                      const char* args_key = nullptr, const char* id_key = "id");
// An object or a non-empty array of call objects (Hermes, Mistral, Llama 3, Firefunction, Granite).
bool parse_json_calls(std::string_view body, std::vector<ParsedToolCall>& calls);
// <｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{...}\n```<｜tool▁call▁end｜>...
bool parse_deepseek_calls(std::string_view body, std::vector<ParsedToolCall>& calls);
// [{"tool_call_id": "0", "tool_name": ..., "parameters": {...}}, ...] (Command R7B).
bool parse_command_r7b_calls(std::string_view body, std::vector<ParsedToolCall>& calls);
// NAME>{...} (Functionary v3.1, between <function= and </function>).
bool parse_functionary_call(std::string_view body, std::vector<ParsedToolCall>& calls);
// <|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{...}<|tool_call_end|>... (Kimi-K2).
bool parse_kimi_calls(std::string_view body, std::vector<ParsedToolCall>& calls);
// The generic reply: {"tool_call": {...}}, {"tool_calls": [...]} or {"response": ...}.
bool parse_generic_reply(std::string_view body, std::vector<ParsedToolCall>& calls, std::string& content);
// A generic reply cut off inside its answer ({"response": "Hello, wor): the text of the response
// string so far, unescaped (an escape cut in half is left out); false for anything else.
bool salvage_generic_response(std::string_view body, std::string& content);

}  // namespace hearth::chat_output_detail
