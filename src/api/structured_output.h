// Structured-output fields of each dialect → the GBNF grammar of an engine request:
//  - ollama `format`: "json" (any JSON object) or a JSON Schema object;
//  - OpenAI `response_format` (chat, completions) and Responses `text.format`: type "text",
//    "json_object" (any JSON object, or llama-server's `schema` beside it) or "json_schema"
//    (`json_schema.schema`; `text.format.schema` in the Responses API);
//  - llama-server's extras on the OpenAI routes: `grammar` (GBNF text) and `json_schema`.
// A request may constrain its output one way only. The result is the request's
// protocol::OutputConstraint; the engine side turns a schema into a grammar and compiles it, so
// schemas that are malformed or use keywords the grammar cannot enforce, and GBNF that does not
// parse, are 400s naming the field (and keyword) from there.
#pragma once

#include "api/generation_job.h"
#include "api/json_fields.h"

namespace hearth::api {

// ollama /api/generate and /api/chat.
Status read_ollama_format(const Json& body, CompletionJob& job);

// OpenAI /v1/chat/completions and /v1/completions: response_format, grammar, json_schema.
Status read_openai_structured_output(const Json& body, CompletionJob& job);

// OpenAI /v1/responses: text.format (plus llama-server's grammar and json_schema).
Status read_responses_structured_output(const Json& body, CompletionJob& job);

}  // namespace hearth::api
