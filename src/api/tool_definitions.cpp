// One check of tool definitions and tool_choice for every dialect (see tool_definitions.h).
#include "api/tool_definitions.h"

#include <algorithm>
#include <vector>

namespace hearth::api {
namespace {

Error invalid(std::string message) { return make_error(ErrorKind::kInvalidArgument, std::move(message)); }

enum class ToolChoiceKind {
  kAuto,      // the model decides (the default)
  kNone,      // no tool may be called: the template sees no tools
  kRequired,  // some tool must be called (OpenAI "required", Anthropic "any")
  kNamed,     // this one function must be called
};

struct ToolChoice {
  ToolChoiceKind kind = ToolChoiceKind::kAuto;
  std::string name;      // kNamed: the function
  std::string spelling;  // what the request said ("required", "any"), for messages
};

// A required, non-empty string field.
Result<std::string> read_name(const Json& obj, std::string_view key, const std::string& where) {
  HEARTH_ASSIGN(auto name, read_string(obj, key, where));
  if (!name) return invalid("'" + where + std::string(key) + "' is required");
  if (name->empty()) return invalid("'" + where + std::string(key) + "' must not be empty");
  return *name;
}

// name, description and the parameter schema (`schema_key`) of one function, in the template's
// form {name, description?, parameters?}. `where` ends with '.'.
Result<Json> read_function(const Json& fn, const std::string& where, std::string_view schema_key) {
  HEARTH_ASSIGN(std::string name, read_name(fn, "name", where));
  HEARTH_ASSIGN(auto description, read_string(fn, "description", where));
  HEARTH_ASSIGN(const Json* schema, read_object(fn, schema_key, where));
  Json out = {{"name", std::move(name)}};
  if (description) out["description"] = *description;
  if (schema) out["parameters"] = *schema;
  return out;
}

// `type` must be absent or "function" (absent only where `optional_type`).
Status check_function_type(const Json& tool, const std::string& where, bool optional_type) {
  HEARTH_ASSIGN(auto type, read_string(tool, "type", where + "."));
  if (!type && optional_type) return ok_status();
  if (!type) return invalid("'" + where + ".type' is required");
  if (*type != "function") {
    return make_error(ErrorKind::kUnsupported,
                      "'" + where + "' has type '" + *type + "'; only tools of type 'function' are supported");
  }
  return ok_status();
}

// One tool → the template's {"type": "function", "function": {name, ...}}.
Result<Json> read_tool(const Json& tool, size_t index, ToolSpelling spelling) {
  const std::string where = "tools[" + std::to_string(index) + "]";
  if (!tool.is_object()) return field_type_error("", where, "an object", tool);
  switch (spelling) {
    case ToolSpelling::kChat:
    case ToolSpelling::kOllama: {
      HEARTH_TRY(check_function_type(tool, where, /*optional_type=*/true));
      HEARTH_ASSIGN(const Json* fn, read_object(tool, "function", where + "."));
      if (!fn) return invalid("'" + where + ".function' is required");
      HEARTH_TRY(read_function(*fn, where + ".function.", "parameters"));
      return tool;  // as sent: the template may read fields beyond the three checked ones
    }
    case ToolSpelling::kResponses: {
      HEARTH_TRY(check_function_type(tool, where, /*optional_type=*/false));
      HEARTH_ASSIGN(Json fn, read_function(tool, where + ".", "parameters"));
      return Json{{"type", "function"}, {"function", std::move(fn)}};
    }
    case ToolSpelling::kAnthropic: {
      HEARTH_ASSIGN(Json fn, read_function(tool, where + ".", "input_schema"));
      if (!fn.contains("parameters")) fn["parameters"] = Json::object();
      return Json{{"type", "function"}, {"function", std::move(fn)}};
    }
  }
  return invalid("unknown tool spelling");
}

const char* kChoiceForms[] = {
    // kChat
    R"('tool_choice' must be "none", "auto", "required" or {"type": "function", "function": {"name": ...}})",
    // kResponses
    R"('tool_choice' must be "none", "auto", "required" or {"type": "function", "name": ...})",
};

Result<ToolChoice> read_string_choice(const Json& value, const char* forms) {
  const std::string s = value.get<std::string>();
  if (s == "auto") return ToolChoice{ToolChoiceKind::kAuto, "", s};
  if (s == "none") return ToolChoice{ToolChoiceKind::kNone, "", s};
  if (s == "required") return ToolChoice{ToolChoiceKind::kRequired, "", s};
  return invalid(std::string(forms) + "; got \"" + s + "\"");
}

// OpenAI chat: "none" | "auto" | "required" | {"type": "function", "function": {"name": ...}};
// Responses: the same strings | {"type": "function", "name": ...}.
Result<ToolChoice> read_openai_choice(const Json& value, bool responses) {
  const char* forms = kChoiceForms[responses ? 1 : 0];
  if (value.is_string()) return read_string_choice(value, forms);
  if (!value.is_object()) return invalid(std::string(forms) + "; got " + json_type_name(value));
  HEARTH_ASSIGN(auto type, read_string(value, "type", "tool_choice."));
  if (!type) return invalid("'tool_choice.type' is required");
  if (*type != "function") {
    return make_error(ErrorKind::kUnsupported,
                      "'tool_choice' has type '" + *type + "'; only function tools can be chosen");
  }
  ToolChoice choice{ToolChoiceKind::kNamed, "", "function"};
  if (responses) {
    HEARTH_ASSIGN(choice.name, read_name(value, "name", "tool_choice."));
  } else {
    HEARTH_ASSIGN(const Json* fn, read_object(value, "function", "tool_choice."));
    if (!fn) return invalid("'tool_choice.function' is required");
    HEARTH_ASSIGN(choice.name, read_name(*fn, "name", "tool_choice.function."));
  }
  return choice;
}

// Anthropic: {"type": "auto" | "any" | "none"} | {"type": "tool", "name": ...}, each with an
// optional disable_parallel_tool_use.
Result<ToolChoice> read_anthropic_choice(const Json& value) {
  if (!value.is_object()) return field_type_error("", "tool_choice", "an object", value);
  HEARTH_ASSIGN(auto type, read_string(value, "type", "tool_choice."));
  if (!type) return invalid("'tool_choice.type' is required");
  HEARTH_TRY(read_bool(value, "disable_parallel_tool_use", "tool_choice."));
  if (*type == "auto") return ToolChoice{ToolChoiceKind::kAuto, "", *type};
  if (*type == "none") return ToolChoice{ToolChoiceKind::kNone, "", *type};
  if (*type == "any") return ToolChoice{ToolChoiceKind::kRequired, "", *type};
  if (*type == "tool") {
    HEARTH_ASSIGN(std::string name, read_name(value, "name", "tool_choice."));
    return ToolChoice{ToolChoiceKind::kNamed, std::move(name), *type};
  }
  return invalid("'tool_choice.type' must be 'auto', 'any', 'tool' or 'none'; got '" + *type + "'");
}

// What every dialect shares: a forced choice needs tools, a named one must be among them.
Status check_choice(const ToolChoice& choice, const Json& tools) {
  if (choice.kind == ToolChoiceKind::kRequired && tools.empty()) {
    return invalid("'tool_choice' is \"" + choice.spelling + "\" but no 'tools' are given");
  }
  if (choice.kind == ToolChoiceKind::kNamed) {
    bool found = std::any_of(tools.begin(), tools.end(),
                             [&](const Json& t) { return string_field(t.value("function", Json::object()), "name") == choice.name; });
    if (!found) return invalid("'tool_choice' names function '" + choice.name + "', which is not in 'tools'");
  }
  return ok_status();
}

}  // namespace

Status put_tools(const Json& body, ToolSpelling spelling, Json& chat) {
  HEARTH_ASSIGN(const Json* list, read_array(body, "tools"));
  Json tools = Json::array();
  if (list) {
    for (size_t i = 0; i < list->size(); ++i) {
      HEARTH_ASSIGN(Json tool, read_tool((*list)[i], i, spelling));
      tools.push_back(std::move(tool));
    }
  }
  ToolChoice choice;
  bool one_call = false;
  auto value = body.find("tool_choice");
  // ollama has no tool_choice; Hearth accepts OpenAI chat's spelling there too (to force a call).
  if (value != body.end() && !value->is_null()) {
    if (spelling == ToolSpelling::kAnthropic) {
      HEARTH_ASSIGN(choice, read_anthropic_choice(*value));
      one_call = value->is_object() && value->value("disable_parallel_tool_use", false) == true;
    } else {
      HEARTH_ASSIGN(choice, read_openai_choice(*value, spelling == ToolSpelling::kResponses));
    }
    HEARTH_TRY(check_choice(choice, tools));
  }
  if (choice.kind == ToolChoiceKind::kNone || tools.empty()) return ok_status();
  auto parallel = body.find("parallel_tool_calls");
  if (parallel != body.end() && parallel->is_boolean() && !parallel->get<bool>()) one_call = true;
  chat["tools"] = std::move(tools);
  // A forced choice reaches the engine, which enforces it with a grammar in the template
  // family's call syntax: "required", or {"name": ...}.
  if (choice.kind == ToolChoiceKind::kRequired) chat["tool_choice"] = "required";
  if (choice.kind == ToolChoiceKind::kNamed) chat["tool_choice"] = Json{{"name", choice.name}};
  if (one_call) chat["parallel_tool_calls"] = false;
  return ok_status();
}

}  // namespace hearth::api
