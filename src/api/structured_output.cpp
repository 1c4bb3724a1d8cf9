// Structured-output request fields → engine grammar (see structured_output.h).
#include "api/structured_output.h"

#include "sampler/grammar/compiled_grammar.h"
#include "sampler/grammar/json_schema_grammar.h"

namespace hearth::api {
namespace {

Error invalid(std::string message) { return make_error(ErrorKind::kInvalidArgument, std::move(message)); }

// The one grammar a request ends up with, and the field it came from (for the "only one" error).
struct GrammarChoice {
  std::string field;
  std::string gbnf;
};

// Compiles the grammar here too (the engine compiles it again at submission), so that a bad one
// is a 400 even for a streamed response, whose status is sent before the engine sees it.
Status choose(GrammarChoice& choice, std::string field, std::string gbnf) {
  if (!choice.field.empty()) {
    return invalid("'" + choice.field + "' and '" + field + "' both constrain the output; give only one");
  }
  auto compiled = sampler::compile_gbnf(gbnf);
  if (!compiled.ok()) return make_error(compiled.error().kind, "'" + field + "': " + compiled.error().message);
  choice.field = std::move(field);
  choice.gbnf = std::move(gbnf);
  return ok_status();
}

// A JSON Schema at `field` → its grammar; errors name the field.
Status choose_schema(GrammarChoice& choice, const std::string& field, const Json& schema) {
  if (!schema.is_object() && !schema.is_boolean()) return field_type_error("", field, "a JSON schema object", schema);
  auto gbnf = sampler::json_schema_to_gbnf(schema);
  if (!gbnf.ok()) return make_error(gbnf.error().kind, "'" + field + "': " + gbnf.error().message);
  return choose(choice, field, std::move(gbnf).value());
}

// OpenAI's response_format and the Responses API's text.format share their types; the schema
// sits in `json_schema.schema` (chat) or `schema` (Responses, and llama-server's json_object).
Status read_format_object(const Json& format, const std::string& field, GrammarChoice& choice) {
  HEARTH_ASSIGN(auto type, read_string(format, "type", field + "."));
  const std::string t = type.value_or("text");
  if (t == "text") return ok_status();
  if (t == "json_object") {
    auto schema = format.find("schema");
    if (schema != format.end() && !schema->is_null()) return choose_schema(choice, field + ".schema", *schema);
    return choose(choice, field, sampler::json_object_gbnf());
  }
  if (t == "json_schema") {
    HEARTH_ASSIGN(const Json* wrapper, read_object(format, "json_schema", field + "."));
    const Json& holder = wrapper ? *wrapper : format;
    const std::string at = wrapper ? field + ".json_schema.schema" : field + ".schema";
    auto schema = holder.find("schema");
    if (schema == holder.end() || schema->is_null()) return invalid("'" + at + "' is required for type 'json_schema'");
    return choose_schema(choice, at, *schema);
  }
  return invalid("'" + field + ".type' must be 'text', 'json_object' or 'json_schema'; got '" + t + "'");
}

// llama-server's `grammar` (GBNF) and `json_schema` body fields.
Status read_llama_server_fields(const Json& body, GrammarChoice& choice) {
  HEARTH_ASSIGN(auto grammar, read_string(body, "grammar"));
  if (grammar && !grammar->empty()) HEARTH_TRY(choose(choice, "grammar", *grammar));
  auto schema = body.find("json_schema");
  if (schema != body.end() && !schema->is_null()) HEARTH_TRY(choose_schema(choice, "json_schema", *schema));
  return ok_status();
}

}  // namespace

Status read_ollama_format(const Json& body, CompletionJob& job) {
  auto format = body.find("format");
  if (format == body.end() || format->is_null()) return ok_status();
  GrammarChoice choice;
  if (format->is_string()) {
    const std::string f = format->get<std::string>();
    if (f.empty()) return ok_status();
    if (f != "json") return invalid("'format' must be \"json\" or a JSON schema object; got \"" + f + "\"");
    HEARTH_TRY(choose(choice, "format", sampler::json_object_gbnf()));
  } else {
    HEARTH_TRY(choose_schema(choice, "format", *format));
  }
  job.request.grammar = std::move(choice.gbnf);
  return ok_status();
}

Status read_openai_structured_output(const Json& body, CompletionJob& job) {
  GrammarChoice choice;
  HEARTH_ASSIGN(const Json* response_format, read_object(body, "response_format"));
  if (response_format) HEARTH_TRY(read_format_object(*response_format, "response_format", choice));
  HEARTH_TRY(read_llama_server_fields(body, choice));
  job.request.grammar = std::move(choice.gbnf);
  return ok_status();
}

Status read_responses_structured_output(const Json& body, CompletionJob& job) {
  GrammarChoice choice;
  HEARTH_ASSIGN(const Json* text, read_object(body, "text"));
  if (text) {
    HEARTH_ASSIGN(const Json* format, read_object(*text, "format", "text."));
    if (format) {
      HEARTH_TRY(read_format_object(*format, "text.format", choice));
      job.text_format = *format;
    }
  }
  HEARTH_TRY(read_llama_server_fields(body, choice));
  job.request.grammar = std::move(choice.gbnf);
  return ok_status();
}

}  // namespace hearth::api
