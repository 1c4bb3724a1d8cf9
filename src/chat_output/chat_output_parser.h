// The generated text of a chat model mixes the answer with reasoning (`<think>...</think>`) and
// tool calls written in the syntax of the model's template family (`<tool_call>{json}</tool_call>`
// for Hermes/Qwen, `[TOOL_CALLS][...]` for Mistral, a bare JSON object or `<|python_tag|>` for
// Llama 3.x, ...). ChatOutputParser splits that text as it streams in: answer text is released
// as soon as it cannot be the start of a marker, reasoning likewise, and each tool call once its
// JSON is complete. Feeding the text in any chunking gives the same concatenated result.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hearth {

// Template families whose tool-call syntax the parser knows.
enum class ChatOutputFamily {
  kPlain,       // no syntax of its own: calls are read (and forced) in the Hermes syntax
  kHermes,      // <tool_call>{"name": ..., "arguments": {...}}</tool_call> (Hermes 2/3, Qwen 2.5/3, QwQ)
  kLlama3,      // {"name": ..., "parameters": {...}} as the whole answer, or after <|python_tag|>
  kMistral,     // [TOOL_CALLS][{"name": ..., "arguments": {...}, "id": ...}, ...]
  kDeepSeekR1,  // <｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{...}\n```<｜tool▁call▁end｜>
  kCommandR7B,  // <|START_ACTION|>[{"tool_call_id": ..., "tool_name": ..., "parameters": {...}}]<|END_ACTION|>,
                //   reasoning in <|START_THINKING|>...<|END_THINKING|>, answer in <|START_RESPONSE|>...
  kFunctionaryV31,  // <function=NAME>{...}</function>, or <|python_tag|> code (Llama 3.1 based)
  kFunctionaryV32,  // NAME\n{...} (the prompt ends with >>>), then >>>NAME\n{...}; text as all\n...
  kFirefunction,    // " functools[{"name": ..., "arguments": {...}}, ...]"
  kGranite,         // <|tool_call|>[{"name": ..., "arguments": {...}}], <think>/<response> sections
  kKimiK2,          // <|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX
                    //   <|tool_call_argument_begin|>{...}<|tool_call_end|>...<|tool_calls_section_end|>
  kGptOss,          // harmony: <|channel|>analysis<|message|>...<|end|><|start|>assistant<|channel|>final
                    //   <|message|>...; a call is a commentary message to=functions.NAME
  kGeneric,         // a template with tools but no syntax of its own: the whole reply is JSON,
                    //   {"tool_call": {...}}, {"tool_calls": [...]} or {"response": "..."}
};
constexpr int kChatOutputFamilyCount = static_cast<int>(ChatOutputFamily::kGeneric) + 1;

// "plain", "hermes", "llama3", "mistral", "deepseek_r1", "command_r7b", "functionary_v3_1",
// "functionary_v3_2", "firefunction_v2", "granite", "kimi_k2", "gpt_oss", "generic".
const char* chat_output_family_name(ChatOutputFamily family);
// The inverse of chat_output_family_name; false for an unknown name.
bool chat_output_family_from_name(std::string_view name, ChatOutputFamily& out);
// The family a chat template's source writes tool calls in (as the reference engine detects it:
// by the markers the template prints).
ChatOutputFamily detect_chat_output_family(std::string_view template_source);
// Whether a template writes reasoning the parser can split (<think>, Command R7B's thinking
// section, harmony's analysis channel).
bool template_writes_reasoning(std::string_view template_source);
// The markers that open and close reasoning in the family's replies (gpt-oss: its analysis
// message), and `cut`: what an engine writes to end the reasoning early (a thinking budget).
struct ReasoningMarkers {
  std::string_view open, close, cut;
};
ReasoningMarkers reasoning_markers(ChatOutputFamily family);
// The family's structural markers: a model that has them as control tokens must print those
// tokens as text in a chat reply, or the parser (and a forced-call grammar) cannot see them.
std::vector<std::string_view> family_markers(ChatOutputFamily family);
// Whether `text` is a structural marker of any family (a control token with this text is printed
// as text in chat replies and may be produced by a forced-call grammar).
bool is_family_marker(std::string_view text);

// How a family writes calls, as literal text around each call's JSON object (for the grammar
// that forces a call): [before_calls] before_call {obj} after_call [between_calls ...] after_calls.
// `arguments_key` names the arguments in the object and `name_key` the function; an empty
// name_key means the name is written outside the object, as before_call NAME name_after {args}
// after_call (the object is then the arguments themselves). `id_key` names a call id the object
// must carry (a digit string). `parallel` is false when the family writes one call per reply.
struct ToolCallSyntax {
  std::string before_calls, before_call, after_call, between_calls, after_calls;
  std::string arguments_key = "arguments";
  std::string name_key = "name";
  std::string name_after;
  std::string id_key;
  bool parallel = true;
  // Where a call starts when the model may choose (tool_choice "auto"): the lazy grammar
  // switches on at this text. Empty: before_calls + before_call without trailing whitespace.
  std::string trigger;
  bool trigger_at_start = false;  // only as the first text of the reply (a bare JSON call)
};
// Every family has one (false only for a value outside the enum).
bool tool_call_syntax(ChatOutputFamily family, ToolCallSyntax& out);

struct ChatOutputFormat {
  ChatOutputFamily family = ChatOutputFamily::kPlain;
  bool parse_tool_calls = false;  // the request offered tools
  bool parse_reasoning = false;   // split <think>...</think> into reasoning
  bool reasoning_open = false;    // the prompt ended inside <think>: the text starts as reasoning
  // The reply's text that the prompt already holds (an assistant prefill, e.g. "<tool_call>"):
  // read first, as if generated, so a call it opened is seen; nothing of it is released again.
  std::string prefilled;
};

// Whether the family frames every reply, tools or not (Functionary v3.2 starts each with a
// recipient line, "all\n" before answer text): its replies are always parsed.
bool family_frames_replies(ChatOutputFamily family);

struct ParsedToolCall {
  std::string id;         // from the model's output when it wrote one (Mistral), else empty
  std::string name;
  std::string arguments;  // a JSON object, compact
};

// What one feed() released.
struct ChatOutputDelta {
  std::string content;
  std::string reasoning;
  std::vector<ParsedToolCall> tool_calls;
  bool empty() const { return content.empty() && reasoning.empty() && tool_calls.empty(); }
};

class ChatOutputParser {
 public:
  explicit ChatOutputParser(ChatOutputFormat format);

  // Adds generated text; returns what can be released now.
  ChatOutputDelta feed(std::string_view text);
  // The text ended: releases everything held back (an unfinished or malformed tool call comes
  // back as answer text, never lost and never a crash).
  ChatOutputDelta finish();

 private:
  enum class State { kContent, kReasoning, kCallBody, kJsonBody, kRecipient, kHarmonyHeader, kHarmonyBody };
  void run(ChatOutputDelta& out, bool final);
  bool step_content(ChatOutputDelta& out, bool final);
  bool step_reasoning(ChatOutputDelta& out, bool final);
  bool step_call_body(ChatOutputDelta& out, bool final);
  bool step_json_body(ChatOutputDelta& out, bool final);
  bool step_recipient(ChatOutputDelta& out, bool final);       // Functionary v3.2: NAME\n after >>>
  bool step_harmony_header(ChatOutputDelta& out, bool final);  // gpt-oss: up to <|message|>
  bool step_harmony_body(ChatOutputDelta& out, bool final);    // gpt-oss: one message's text
  void emit_content(ChatOutputDelta& out, std::string text);
  // How many leading bytes of `text` (about to be released) the prefill wrote; counts them off.
  size_t drop_prefill(const std::string& text);
  // Parses a call body in the family's shape; false when it is not a valid call.
  bool parse_calls(const std::string& body, std::vector<ParsedToolCall>& calls) const;

  ChatOutputFormat format_;
  State state_ = State::kContent;
  std::string buffer_;        // text not yet released
  std::string opener_;        // the marker that opened the current call (put back if it fails)
  std::string closer_;        // kCallBody: the marker that ends it
  bool at_start_ = true;      // nothing released yet (Llama 3's bare JSON call)
  bool skip_space_ = false;   // drop whitespace before the next answer text (after </think> or a call)
  std::string call_name_;     // the function named before its arguments (Functionary v3.2, harmony)
  enum class Channel { kReasoning, kContent, kCall };
  Channel channel_ = Channel::kContent;  // kHarmonyBody: where the message's text goes
  size_t prefill_held_ = 0;   // leading bytes of buffer_ that the prefill wrote (not to release)
};

}  // namespace hearth
