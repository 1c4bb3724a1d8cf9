// forced_tool_call_grammar: each allowed function becomes the JSON schema of its call object
// ({"name": const, arguments: parameters}); the schemas' anyOf is converted to GBNF as rule
// `tool-call-object`, and a root rule adds the family's literal text around the calls. Families
// that write the name outside the JSON (Functionary, Kimi-K2, harmony) get one rule per
// function instead: the literal name, then that function's parameters schema under its own
// rule-name prefix. tool_call_grammar: the same calls for tool_choice "auto" as a lazy grammar
// that switches on at the family's call opener (the generic family's whole-reply grammar is
// never lazy).
#include "engine/tool_call_grammar.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

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

bool is_rule_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }

// `gbnf` with every rule it defines renamed to `prefix` + name (definitions and references;
// quoted literals and character classes are left alone).
std::string prefix_rules(const std::string& gbnf, const std::string& prefix) {
  std::set<std::string> defined;
  for (size_t at = 0; at < gbnf.size();) {
    size_t eol = gbnf.find('\n', at);
    if (eol == std::string::npos) eol = gbnf.size();
    std::string_view line(gbnf.data() + at, eol - at);
    size_t def = line.find(" ::=");
    if (def != std::string_view::npos) defined.insert(std::string(line.substr(0, def)));
    at = eol + 1;
  }
  std::string out;
  for (size_t i = 0; i < gbnf.size();) {
    char c = gbnf[i];
    if (c == '"' || c == '[') {
      const char close = c == '"' ? '"' : ']';
      size_t j = i + 1;
      while (j < gbnf.size() && gbnf[j] != close) j += gbnf[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, gbnf.size());
      out.append(gbnf, i, j - i);
      i = j;
    } else if (is_rule_char(c)) {
      size_t j = i;
      while (j < gbnf.size() && is_rule_char(gbnf[j])) ++j;
      std::string word = gbnf.substr(i, j - i);
      out += defined.count(word) ? prefix + word : word;
      i = j;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

// The grammar for families whose calls are NAME then an arguments object; `first` is what the
// reply still writes of the first call's opener (all of it unless a prefill wrote some).
Result<std::string> name_first_grammar(const ToolCallSyntax& syntax, const std::vector<std::pair<std::string, Json>>& functions,
                                       bool parallel, const std::string& first) {
  std::string rules, alternatives, first_alternatives;
  for (size_t i = 0; i < functions.size(); ++i) {
    const auto& [name, params] = functions[i];
    auto gbnf = sampler::json_schema_to_gbnf(params);
    if (!gbnf.ok()) return make_error(gbnf.error().kind, "'tools': " + name + ": " + gbnf.error().message);
    const std::string prefix = "fn" + std::to_string(i) + "-";
    rules += prefix_rules(*gbnf, prefix);
    if (!rules.empty() && rules.back() != '\n') rules += "\n";
    const std::string sep = alternatives.empty() ? "" : " | ";
    alternatives += sep + gbnf_quote(syntax.before_call + name + syntax.name_after) + " " + prefix + "root";
    first_alternatives += sep + gbnf_quote(first + name + syntax.name_after) + " " + prefix + "root";
  }
  std::string root = "root ::= ( " + first_alternatives + " ) " + gbnf_quote(syntax.after_call);
  if (parallel) root += " (" + gbnf_quote(syntax.between_calls) + " tool-call)*";
  root += " " + gbnf_quote(syntax.after_calls) + "\n";
  root += "tool-call ::= ( " + alternatives + " ) " + gbnf_quote(syntax.after_call) + "\n";
  return root + rules;
}

// The calls grammar in the family's syntax for the tools `choice` allows; `written`: bytes of
// the first call's opener that the prompt already holds (an assistant prefill).
Result<std::string> calls_grammar(const ToolCallSyntax& syntax, const Json& chat, const Json& choice, size_t written = 0) {
  std::string named = choice.is_object() ? choice.value("name", "") : "";
  const bool parallel = syntax.parallel && !(chat.contains("parallel_tool_calls") && chat["parallel_tool_calls"] == false);
  const std::string opener = syntax.before_calls + syntax.before_call;
  const std::string first = opener.substr(std::min(written, opener.size()));
  if (syntax.name_key.empty()) {
    std::vector<std::pair<std::string, Json>> functions;
    for (const auto& tool : chat["tools"]) {
      const Json fn = tool.value("function", Json::object());
      const std::string name = fn.value("name", "");
      if (!named.empty() && name != named) continue;
      functions.emplace_back(name, fn.contains("parameters") && fn["parameters"].is_object() ? fn["parameters"] : Json{{"type", "object"}});
    }
    if (functions.empty()) return make_error(ErrorKind::kInvalidArgument, "'tool_choice' names a function that is not in 'tools'");
    return name_first_grammar(syntax, functions, parallel, first);
  }
  Json options = Json::array();
  for (const auto& tool : chat["tools"]) {
    const Json fn = tool.value("function", Json::object());
    const std::string name = fn.value("name", "");
    if (!named.empty() && name != named) continue;
    Json params = fn.contains("parameters") && fn["parameters"].is_object() ? fn["parameters"] : Json{{"type", "object"}};
    Json properties = Json::object();
    Json required = Json::array();
    if (!syntax.id_key.empty()) {
      properties[syntax.id_key] = Json{{"type", "string"}, {"pattern", "^[0-9]{1,10}$"}};
      required.push_back(syntax.id_key);
    }
    properties[syntax.name_key] = Json{{"const", name}};
    properties[syntax.arguments_key] = params;
    required.push_back(syntax.name_key);
    required.push_back(syntax.arguments_key);
    options.push_back(Json{{"type", "object"}, {"properties", properties}, {"required", required}, {"additionalProperties", false}});
  }
  if (options.empty()) return make_error(ErrorKind::kInvalidArgument, "'tool_choice' names a function that is not in 'tools'");
  Json schema = options.size() == 1 ? options[0] : Json{{"anyOf", options}};
  auto gbnf = sampler::json_schema_to_gbnf(schema);
  if (!gbnf.ok()) return make_error(gbnf.error().kind, "'tools': " + gbnf.error().message);
  static const std::regex kRootRef("(^|[^A-Za-z0-9_-])root([^A-Za-z0-9_-]|$)");
  std::string body = std::regex_replace(*gbnf, kRootRef, "$1tool-call-object$2");
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
  // A prefill that already opened the call (e.g. "<tool_call>"): the grammar goes on after it.
  const size_t written = prefilled_opener(syntax, chat, call_trigger(syntax).text);
  return calls_grammar(syntax, chat, chat["tool_choice"], written == std::string::npos ? 0 : written);
}

Result<ToolCallGrammar> tool_call_grammar(ChatOutputFamily family, const Json& chat) {
  ToolCallGrammar out;
  if (!chat.is_object() || !chat.contains("tools") || !chat["tools"].is_array() || chat["tools"].empty()) return out;
  if (chat.contains("tool_choice")) {
    HEARTH_ASSIGN(out.gbnf, forced_tool_call_grammar(family, chat));
    return out;
  }
  // The generic family's reply is JSON from its first byte: the whole-reply grammar, not lazy.
  if (family == ChatOutputFamily::kGeneric) {
    auto gbnf = generic_reply_grammar(chat);
    if (gbnf.ok()) out.gbnf = std::move(gbnf).value();
    return out;
  }
  ToolCallSyntax syntax;
  if (!tool_call_syntax(family, syntax)) return out;
  const sampler::GrammarTrigger trigger = call_trigger(syntax);
  if (trigger.text.empty()) return out;
  // A schema the grammar cannot express leaves "auto" unconstrained rather than failing a
  // request that forces nothing. A prefill that opened a call: the grammar holds from the
  // first token, after its opener.
  const size_t written = prefilled_opener(syntax, chat, trigger.text);
  auto gbnf = calls_grammar(syntax, chat, Json(), written == std::string::npos ? 0 : written);
  if (!gbnf.ok()) return out;
  out.gbnf = std::move(gbnf).value();
  if (written == std::string::npos) out.triggers.push_back(trigger);
  return out;
}

Result<std::string> generic_reply_grammar(const Json& chat) {
  if (!chat.is_object() || !chat.contains("tools") || !chat["tools"].is_array() || chat["tools"].empty()) return std::string();
  if (chat.contains("tool_choice") && chat["tool_choice"] == "none") return std::string();
  Json required = chat;
  required["tool_choice"] = "required";
  HEARTH_ASSIGN(std::string calls, forced_tool_call_grammar(ChatOutputFamily::kGeneric, required));
  const Json response = {{"type", "object"},
                         {"properties", {{"response", {{"type", "string"}}}}},
                         {"required", Json::array({"response"})},
                         {"additionalProperties", false}};
  auto answer = sampler::json_schema_to_gbnf(response);
  if (!answer.ok()) return make_error(answer.error().kind, answer.error().message);
  std::string out = "root ::= calls-root | answer-root\n" + prefix_rules(calls, "calls-");
  if (out.back() != '\n') out += "\n";
  return out + prefix_rules(*answer, "answer-");
}

bool is_printed_marker(const Tokenizer& tokenizer, int32_t id) {
  if (!tokenizer.is_control(id) || tokenizer.is_eog(id)) return false;
  return is_family_marker(tokenizer.vocabulary().tokens[static_cast<size_t>(id)]);
}

}  // namespace hearth::engine
