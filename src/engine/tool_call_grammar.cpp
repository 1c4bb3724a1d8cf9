// forced_tool_call_grammar: each allowed function becomes the JSON schema of its call object
// ({"name": const, arguments: parameters}); the schemas' anyOf is converted to GBNF as rule
// `tool-call-object`, and a root rule adds the family's literal text around the calls.
#include "engine/tool_call_grammar.h"

#include <regex>

#include "sampler/grammar/json_schema_grammar.h"

namespace hearth::engine {
namespace {

using Json = nlohmann::ordered_json;

std::string gbnf_quote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '\n') out += "\\n";
    else if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else out += c;
  }
  return out + "\"";
}

}  // namespace

Result<std::string> forced_tool_call_grammar(ChatOutputFamily family, const Json& chat) {
  if (!chat.is_object() || !chat.contains("tool_choice") || !chat.contains("tools")) return std::string();
  const Json& choice = chat["tool_choice"];
  ToolCallSyntax syntax;
  if (!tool_call_syntax(family, syntax)) {
    return make_error(ErrorKind::kUnsupported, "'tool_choice': this model's template writes tool calls in a form Hearth cannot force; use \"auto\"");
  }
  std::string named = choice.is_object() ? choice.value("name", "") : "";
  Json options = Json::array();
  for (const auto& tool : chat["tools"]) {
    const Json fn = tool.value("function", Json::object());
    const std::string name = fn.value("name", "");
    if (!named.empty() && name != named) continue;
    Json params = fn.contains("parameters") && fn["parameters"].is_object() ? fn["parameters"] : Json{{"type", "object"}};
    options.push_back(Json{{"type", "object"},
                           {"properties", {{"name", {{"const", name}}}, {syntax.arguments_key, params}}},
                           {"required", Json::array({"name", syntax.arguments_key})},
                           {"additionalProperties", false}});
  }
  if (options.empty()) return make_error(ErrorKind::kInvalidArgument, "'tool_choice' names a function that is not in 'tools'");
  Json schema = options.size() == 1 ? options[0] : Json{{"anyOf", options}};
  auto gbnf = sampler::json_schema_to_gbnf(schema);
  if (!gbnf.ok()) return make_error(gbnf.error().kind, "'tools': " + gbnf.error().message);
  static const std::regex kRootRef("(^|[^A-Za-z0-9_-])root([^A-Za-z0-9_-]|$)");
  std::string body = std::regex_replace(*gbnf, kRootRef, "$1tool-call-object$2");
  const bool parallel = syntax.parallel && !(chat.contains("parallel_tool_calls") && chat["parallel_tool_calls"] == false);
  std::string root = "root ::= " + gbnf_quote(syntax.before_calls) + " tool-call";
  if (parallel) root += " (" + gbnf_quote(syntax.between_calls) + " tool-call)*";
  root += " " + gbnf_quote(syntax.after_calls) + "\n";
  root += "tool-call ::= " + gbnf_quote(syntax.before_call) + " tool-call-object " + gbnf_quote(syntax.after_call) + "\n";
  return root + body;
}

}  // namespace hearth::engine
