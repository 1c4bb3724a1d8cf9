// Structured-output request fields → the request's output constraint (see structured_output.h).
#include "api/structured_output.h"


namespace hearth::api {
namespace {

Error invalid(std::string message) { return make_error(ErrorKind::kInvalidArgument, std::move(message)); }

using Constraint = protocol::OutputConstraint;

// A request may constrain its output one way only; the engine side compiles the one it has.
Status choose(Constraint& choice, Constraint wanted) {
  if (choice.kind != Constraint::Kind::kNone) {
    return invalid("'" + choice.field + "' and '" + wanted.field + "' both constrain the output; give only one");
  }
  choice = std::move(wanted);
  return ok_status();
}

Status choose_gbnf(Constraint& choice, std::string field, std::string gbnf) {
  return choose(choice, Constraint{Constraint::Kind::kGbnf, std::move(field), std::move(gbnf), {}});
}

Status choose_json_object(Constraint& choice, std::string field) {
  return choose(choice, Constraint{Constraint::Kind::kJsonObject, std::move(field), {}, {}});
}

// A JSON Schema at `field`; the engine side turns it into a grammar (errors name the field).
Status choose_schema(Constraint& choice, const std::string& field, const Json& schema) {
  if (!schema.is_object() && !schema.is_boolean()) return field_type_error("", field, "a JSON schema object", schema);
  return choose(choice, Constraint{Constraint::Kind::kJsonSchema, field, {}, schema});
}

// OpenAI's response_format and the Responses API's text.format share their types; the schema
// sits in `json_schema.schema` (chat) or `schema` (Responses, and llama-server's json_object).
Status read_format_object(const Json& format, const std::string& field, Constraint& choice) {
  HEARTH_ASSIGN(auto type, read_string(format, "type", field + "."));
  const std::string t = type.value_or("text");
  if (t == "text") return ok_status();
  if (t == "json_object") {
    auto schema = format.find("schema");
    if (schema != format.end() && !schema->is_null()) return choose_schema(choice, field + ".schema", *schema);
    return choose_json_object(choice, field);
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
Status read_llama_server_fields(const Json& body, Constraint& choice) {
  HEARTH_ASSIGN(auto grammar, read_string(body, "grammar"));
  if (grammar) {
    // Present means a grammar is asked for; text with no rule cannot be one.
    if (grammar->find_first_not_of(" \t\r\n") == std::string::npos) {
      return invalid("'grammar' is empty: give GBNF text with a 'root' rule, or leave 'grammar' out");
    }
    HEARTH_TRY(choose_gbnf(choice, "grammar", *grammar));
  }
  auto schema = body.find("json_schema");
  if (schema != body.end() && !schema->is_null()) HEARTH_TRY(choose_schema(choice, "json_schema", *schema));
  return ok_status();
}

}  // namespace

Status read_ollama_format(const Json& body, CompletionJob& job) {
  auto format = body.find("format");
  if (format == body.end() || format->is_null()) return ok_status();
  Constraint choice;
  if (format->is_string()) {
    const std::string f = format->get<std::string>();
    if (f.empty()) return ok_status();
    if (f != "json") return invalid("'format' must be \"json\" or a JSON schema object; got \"" + f + "\"");
    HEARTH_TRY(choose_json_object(choice, "format"));
  } else {
    HEARTH_TRY(choose_schema(choice, "format", *format));
  }
  job.request.constraint = std::move(choice);
  return ok_status();
}

Status read_openai_structured_output(const Json& body, CompletionJob& job) {
  Constraint choice;
  HEARTH_ASSIGN(const Json* response_format, read_object(body, "response_format"));
  if (response_format) HEARTH_TRY(read_format_object(*response_format, "response_format", choice));
  HEARTH_TRY(read_llama_server_fields(body, choice));
  job.request.constraint = std::move(choice);
  return ok_status();
}

Status read_responses_structured_output(const Json& body, CompletionJob& job) {
  Constraint choice;
  HEARTH_ASSIGN(const Json* text, read_object(body, "text"));
  if (text) {
    HEARTH_ASSIGN(const Json* format, read_object(*text, "format", "text."));
    if (format) {
      HEARTH_TRY(read_format_object(*format, "text.format", choice));
      job.text_format = *format;
    }
  }
  HEARTH_TRY(read_llama_server_fields(body, choice));
  job.request.constraint = std::move(choice);
  return ok_status();
}

}  // namespace hearth::api
