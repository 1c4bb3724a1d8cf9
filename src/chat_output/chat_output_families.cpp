// What chat_output knows about each template family besides parsing: its name, how it is
// recognised in a template's source (the markers the template prints, checked in the reference
// engine's order), its reasoning markers, the structural markers a model must print as text, and
// the literal syntax a forced call is written in.
#include "chat_output/chat_output_parser.h"

#include "chat_output/family_markers.h"

namespace hearth {
namespace {

using namespace chat_output_markers;

struct FamilyName {
  ChatOutputFamily family;
  const char* name;
};
constexpr FamilyName kFamilyNames[] = {
    {ChatOutputFamily::kPlain, "plain"},
    {ChatOutputFamily::kHermes, "hermes"},
    {ChatOutputFamily::kLlama3, "llama3"},
    {ChatOutputFamily::kMistral, "mistral"},
    {ChatOutputFamily::kDeepSeekR1, "deepseek_r1"},
    {ChatOutputFamily::kCommandR7B, "command_r7b"},
    {ChatOutputFamily::kFunctionaryV31, "functionary_v3_1"},
    {ChatOutputFamily::kFunctionaryV32, "functionary_v3_2"},
    {ChatOutputFamily::kFirefunction, "firefunction_v2"},
    {ChatOutputFamily::kGranite, "granite"},
    {ChatOutputFamily::kKimiK2, "kimi_k2"},
    {ChatOutputFamily::kGptOss, "gpt_oss"},
    {ChatOutputFamily::kGeneric, "generic"},
};

bool has(std::string_view source, std::string_view marker) { return source.find(marker) != std::string_view::npos; }

}  // namespace

const char* chat_output_family_name(ChatOutputFamily family) {
  for (const auto& f : kFamilyNames) if (f.family == family) return f.name;
  return "plain";
}

bool chat_output_family_from_name(std::string_view name, ChatOutputFamily& out) {
  for (const auto& f : kFamilyNames) {
    if (name == f.name) {
      out = f.family;
      return true;
    }
  }
  return false;
}

ChatOutputFamily detect_chat_output_family(std::string_view source) {
  // The reference engine's dispatch order; the families it added later (harmony, Kimi-K2,
  // Granite) test markers no other family's template prints.
  if (has(source, kChannel) && has(source, kHarmonyMessage)) return ChatOutputFamily::kGptOss;
  if (has(source, kKimiSectionOpen) && has(source, kKimiCallOpen)) return ChatOutputFamily::kKimiK2;
  if (has(source, kDeepSeekOpen)) return ChatOutputFamily::kDeepSeekR1;
  if (has(source, "<|END_THINKING|><|START_ACTION|>")) return ChatOutputFamily::kCommandR7B;
  if (has(source, kGraniteCall)) return ChatOutputFamily::kGranite;
  if (has(source, kHermesOpen)) return ChatOutputFamily::kHermes;
  if (has(source, ">>>all")) return ChatOutputFamily::kFunctionaryV32;
  if (has(source, " functools[")) return ChatOutputFamily::kFirefunction;
  if (has(source, "<|start_header_id|>") && has(source, kFunctionOpen)) return ChatOutputFamily::kFunctionaryV31;
  if (has(source, "<|start_header_id|>ipython<|end_header_id|>")) return ChatOutputFamily::kLlama3;
  if (has(source, kMistralOpen)) return ChatOutputFamily::kMistral;
  // A template that renders tools but has no call syntax of its own: the generic JSON reply.
  if (has(source, "tools") || has(source, "tool_calls")) return ChatOutputFamily::kGeneric;
  return ChatOutputFamily::kPlain;
}

bool template_writes_reasoning(std::string_view source) {
  return has(source, kThinkOpen) || has(source, kR7bThinkingOpen) ||
         (detect_chat_output_family(source) == ChatOutputFamily::kGptOss);
}

bool family_frames_replies(ChatOutputFamily family) { return family == ChatOutputFamily::kFunctionaryV32; }

ReasoningMarkers reasoning_markers(ChatOutputFamily family) {
  if (family == ChatOutputFamily::kCommandR7B) return {kR7bThinkingOpen, kR7bThinkingClose, kR7bThinkingCut};
  if (family == ChatOutputFamily::kGptOss) return {kHarmonyAnalysis, kHarmonyEnd, kHarmonyAnalysisCut};
  return {kThinkOpen, kThinkClose, kThinkCut};
}

std::vector<std::string_view> family_markers(ChatOutputFamily family) {
  switch (family) {
    case ChatOutputFamily::kPlain:
    case ChatOutputFamily::kGeneric: return {};
    case ChatOutputFamily::kHermes: return {kHermesOpen, kHermesClose};
    case ChatOutputFamily::kLlama3: return {kPythonTag};
    case ChatOutputFamily::kMistral: return {kMistralOpen};
    case ChatOutputFamily::kDeepSeekR1: return {kDeepSeekOpen, kDeepSeekClose, kDeepSeekCallOpen, kDeepSeekCallClose, kDeepSeekSep};
    case ChatOutputFamily::kCommandR7B:
      return {kR7bActionOpen, kR7bActionClose, kR7bResponseOpen, kR7bResponseClose, kR7bThinkingOpen, kR7bThinkingClose};
    case ChatOutputFamily::kFunctionaryV31: return {kPythonTag};
    case ChatOutputFamily::kFunctionaryV32: return {};
    case ChatOutputFamily::kFirefunction: return {};
    case ChatOutputFamily::kGranite: return {kGraniteCall};
    case ChatOutputFamily::kKimiK2:
      return {kKimiSectionOpen, kKimiSectionClose, kKimiCallOpen, kKimiArgsOpen, kKimiCallClose};
    case ChatOutputFamily::kGptOss:
      return {kChannel, kHarmonyMessage, kHarmonyStart, kHarmonyEnd, kHarmonyConstrain, kHarmonyCall, kHarmonyReturn};
  }
  return {};
}

bool is_family_marker(std::string_view text) {
  for (int f = 0; f < kChatOutputFamilyCount; ++f) {
    for (std::string_view m : family_markers(static_cast<ChatOutputFamily>(f))) {
      if (m == text) return true;
    }
  }
  return false;
}

bool tool_call_syntax(ChatOutputFamily family, ToolCallSyntax& out) {
  out = ToolCallSyntax{};
  switch (family) {
    case ChatOutputFamily::kPlain:
    case ChatOutputFamily::kHermes:
      out.before_call = std::string(kHermesOpen) + "\n";
      out.after_call = "\n" + std::string(kHermesClose);
      out.between_calls = "\n";
      return true;
    case ChatOutputFamily::kLlama3:
      out.arguments_key = "parameters";
      out.parallel = false;
      out.trigger = "{\"name\"";
      out.trigger_at_start = true;
      return true;
    case ChatOutputFamily::kMistral:
      out.before_calls = std::string(kMistralOpen) + "[";
      out.between_calls = ", ";
      out.after_calls = "]";
      return true;
    case ChatOutputFamily::kDeepSeekR1:
      // <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{...}\n```
      // <｜tool▁call▁end｜>, calls joined by "\n", then <｜tool▁calls▁end｜> (as the template renders them).
      out.name_key.clear();
      out.before_calls = std::string(kDeepSeekOpen);
      out.before_call = std::string(kDeepSeekCallOpen) + "function" + std::string(kDeepSeekSep);
      out.name_after = "\n```json\n";
      out.after_call = "\n```" + std::string(kDeepSeekCallClose);
      out.between_calls = "\n";
      out.after_calls = std::string(kDeepSeekClose);
      out.trigger = std::string(kDeepSeekOpen);
      return true;
    case ChatOutputFamily::kCommandR7B:
      out.before_calls = std::string(kR7bActionOpen) + "[";
      out.between_calls = ", ";
      out.after_calls = "]" + std::string(kR7bActionClose);
      out.name_key = "tool_name";
      out.arguments_key = "parameters";
      out.id_key = "tool_call_id";
      return true;
    case ChatOutputFamily::kFunctionaryV31:
      out.name_key.clear();
      out.before_call = std::string(kFunctionOpen);
      out.name_after = ">";
      out.after_call = std::string(kFunctionClose);
      return true;
    case ChatOutputFamily::kFunctionaryV32:
      // The prompt ends with ">>>": the first call's name comes first.
      out.name_key.clear();
      out.name_after = "\n";
      out.between_calls = std::string(kFunctionaryRecipient);
      return true;
    case ChatOutputFamily::kFirefunction:
      out.before_calls = std::string(kFirefunctionOpen) + "[";
      out.between_calls = ", ";
      out.after_calls = "]";
      return true;
    case ChatOutputFamily::kGranite:
      out.before_calls = std::string(kGraniteCall) + "[";
      out.between_calls = ", ";
      out.after_calls = "]";
      return true;
    case ChatOutputFamily::kKimiK2:
      out.name_key.clear();
      out.before_calls = std::string(kKimiSectionOpen);
      out.before_call = std::string(kKimiCallOpen) + "functions.";
      out.name_after = ":0" + std::string(kKimiArgsOpen);
      out.after_call = std::string(kKimiCallClose);
      out.after_calls = std::string(kKimiSectionClose);
      return true;
    case ChatOutputFamily::kGptOss:
      // One call per message; <|call|> ends the turn (an end-of-generation token).
      out.name_key.clear();
      out.before_call = std::string(kChannel) + "commentary to=functions.";
      out.name_after = " " + std::string(kHarmonyConstrain) + "json" + std::string(kHarmonyMessage);
      out.parallel = false;
      return true;
    case ChatOutputFamily::kGeneric:
      out.before_calls = "{\"tool_calls\": [";
      out.between_calls = ", ";
      out.after_calls = "]}";
      return true;
  }
  return false;
}

}  // namespace hearth
