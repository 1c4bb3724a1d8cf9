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
};

// "plain", "hermes", "llama3", "mistral", "deepseek_r1".
const char* chat_output_family_name(ChatOutputFamily family);
// The inverse of chat_output_family_name; false for an unknown name.
bool chat_output_family_from_name(std::string_view name, ChatOutputFamily& out);
// The family a chat template's source writes tool calls in (as the reference engine detects it:
// by the markers the template prints).
ChatOutputFamily detect_chat_output_family(std::string_view template_source);

// How a family writes calls, as literal text around each call's JSON object (for the grammar
// that forces a call): [before_calls] before_call {obj} after_call [between_calls ...] after_calls.
// `arguments_key` names the arguments in the object; `parallel` is false when the family writes
// one call per reply. Families without a JSON-object syntax (DeepSeek R1) have none.
struct ToolCallSyntax {
  std::string before_calls, before_call, after_call, between_calls, after_calls;
  std::string arguments_key = "arguments";
  bool parallel = true;
  // Where a call starts when the model may choose (tool_choice "auto"): the lazy grammar
  // switches on at this text. Empty: before_calls + before_call without trailing whitespace.
  std::string trigger;
  bool trigger_at_start = false;  // only as the first text of the reply (a bare JSON call)
};
// false for a family whose calls are not JSON objects.
bool tool_call_syntax(ChatOutputFamily family, ToolCallSyntax& out);

struct ChatOutputFormat {
  ChatOutputFamily family = ChatOutputFamily::kPlain;
  bool parse_tool_calls = false;  // the request offered tools
  bool parse_reasoning = false;   // split <think>...</think> into reasoning
  bool reasoning_open = false;    // the prompt ended inside <think>: the text starts as reasoning
};

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
  enum class State { kContent, kReasoning, kCallBody, kJsonBody };
  void run(ChatOutputDelta& out, bool final);
  bool step_content(ChatOutputDelta& out, bool final);
  bool step_reasoning(ChatOutputDelta& out, bool final);
  bool step_call_body(ChatOutputDelta& out, bool final);
  bool step_json_body(ChatOutputDelta& out, bool final);
  void emit_content(ChatOutputDelta& out, std::string text);
  // Parses a call body in the family's shape; false when it is not a valid call.
  bool parse_calls(const std::string& body, std::vector<ParsedToolCall>& calls) const;

  ChatOutputFormat format_;
  State state_ = State::kContent;
  std::string buffer_;        // text not yet released
  std::string opener_;        // the marker that opened the current call (put back if it fails)
  std::string closer_;        // kCallBody: the marker that ends it
  bool at_start_ = true;      // nothing released yet (Llama 3's bare JSON call)
  bool skip_space_ = false;   // drop whitespace before the next answer text (after </think> or a call)
};

}  // namespace hearth
