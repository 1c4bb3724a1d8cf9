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

// The calls grammar in the family's syntax for the tools `choice` allows; `written`: bytes of
// the first call's opener that the prompt already holds (an assistant prefill).
Result<std::string> calls_grammar(const ToolCallSyntax& syntax, const Json& chat, const Json& choice, size_t written = 0) {
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
  const std::string first = (syntax.before_calls + syntax.before_call).substr(written);
  std::string root = "root ::= " + gbnf_quote(first) + " tool-call-object " + gbnf_quote(syntax.after_call);
  if (parallel) root += " (" + gbnf_quote(syntax.between_calls) + " tool-call)*";
  root += " " + gbnf_quote(syntax.after_calls) + "\n";
  root += "tool-call ::= " + gbnf_quote(syntax.before_call) + " tool-call-object " + gbnf_quote(syntax.after_call) + "\n";
  return root + body;
}

// The text that opens the first call, as the family declares it or from its literal syntax.
sampler::GrammarTrigger call_trigger(const ToolCallSyntax& syntax) {
  if (!syntax.trigger.empty()) return {syntax.trigger, syntax.trigger_at_start};
  std::string text = syntax.before_calls + syntax.before_call;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return {text, syntax.trigger_at_start};
}

// An assistant prefill that ends inside the family's call opener ("... <tool_call>"): how many
// bytes of the opener it wrote (the reply continues the call), or npos.
size_t prefilled_opener(const ToolCallSyntax& syntax, const Json& chat, const std::string& trigger) {
  if (!chat.contains("messages") || !chat["messages"].is_array() || chat["messages"].empty()) return std::string::npos;
  const Json& last = chat["messages"].back();
  if (!last.is_object() || last.value("role", "") != "assistant" || !last.contains("content") || !last["content"].is_string()) {
    return std::string::npos;
  }
  const std::string content = last["content"].get<std::string>();
  const std::string opener = syntax.before_calls + syntax.before_call;
  const size_t at = content.rfind(trigger);
  if (at == std::string::npos || opener.compare(0, trigger.size(), trigger) != 0) return std::string::npos;
  const size_t tail = content.size() - at;
  return tail <= opener.size() && opener.compare(0, tail, content, at, tail) == 0 ? tail : std::string::npos;
}

}  // namespace

Result<std::string> forced_tool_call_grammar(ChatOutputFamily family, const Json& chat) {
  if (!chat.is_object() || !chat.contains("tool_choice") || !chat.contains("tools")) return std::string();
  ToolCallSyntax syntax;
  if (!tool_call_syntax(family, syntax)) {
    return make_error(ErrorKind::kUnsupported, "'tool_choice': this model's template writes tool calls in a form Hearth cannot force; use \"auto\"");
  }
  return calls_grammar(syntax, chat, chat["tool_choice"]);
}

Result<ToolCallGrammar> tool_call_grammar(ChatOutputFamily family, const Json& chat) {
  ToolCallGrammar out;
  if (!chat.is_object() || !chat.contains("tools") || !chat["tools"].is_array() || chat["tools"].empty()) return out;
  if (chat.contains("tool_choice")) {
    HEARTH_ASSIGN(out.gbnf, forced_tool_call_grammar(family, chat));
    return out;
  }
  ToolCallSyntax syntax;
  if (!tool_call_syntax(family, syntax)) return out;
  const sampler::GrammarTrigger trigger = call_trigger(syntax);
  if (trigger.text.empty()) return out;
  // A schema the grammar cannot express leaves "auto" unconstrained rather than failing a
  // request that forces nothing.
  // A prefill that opened a call: the grammar holds from the first token, after its opener.
  const size_t written = prefilled_opener(syntax, chat, trigger.text);
  auto gbnf = calls_grammar(syntax, chat, Json(), written == std::string::npos ? 0 : written);
  if (!gbnf.ok()) return out;
  out.gbnf = std::move(gbnf).value();
  if (written == std::string::npos) out.triggers.push_back(trigger);
  return out;
}

}  // namespace hearth::engine
