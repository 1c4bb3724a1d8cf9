// Anthropic Messages API requests and responses (see anthropic.h). Content blocks become an
// OpenAI-style chat for the template: text blocks join, tool_use blocks become tool calls,
// tool_result blocks become tool messages; images and documents are refused (no vision).
// Streaming follows Anthropic's event sequence: message_start, content_block_start, ping,
// content_block_delta..., content_block_stop, message_delta (stop_reason, usage), message_stop.
#include "api/anthropic.h"

#include "api/choice_state.h"
#include "api/generation_options.h"
#include "api/reasoning_options.h"
#include "api/response_encoder.h"
#include "api/stream_framing.h"
#include "api/tool_definitions.h"

namespace hearth::api {
namespace {

Error invalid(std::string message) { return make_error(ErrorKind::kInvalidArgument, std::move(message)); }

// Text of a tool_result's content: a string or text blocks.
Result<std::string> tool_result_text(const Json& content, const std::string& where) {
  if (content.is_null()) return std::string();
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return field_type_error(where + ".", "content", "a string or an array of blocks", content);
  std::string text;
  for (const auto& b : content) {
    if (!b.is_object()) return invalid("'" + where + ".content' blocks must be objects");
    std::string type = string_field(b, "type", "");
    if (type == "text") {
      if (!b.contains("text") || !b["text"].is_string()) return invalid("'" + where + ".content' text blocks need a string 'text'");
      text += b["text"].get<std::string>();
    } else if (type == "image") {
      return make_error(ErrorKind::kUnsupported, "'" + where + "' has an image; the loaded model cannot read images");
    } else {
      return make_error(ErrorKind::kUnsupported, "'" + where + "' has a block of type '" + type + "'");
    }
  }
  return text;
}

// Appends the chat messages of one Anthropic message (one, or several when tool results are
// present) to `out`.
Status convert_message(const Json& m, size_t index, Json& out) {
  const std::string where = "messages[" + std::to_string(index) + "]";
  if (!m.is_object()) return invalid("'" + where + "' must be an object");
  HEARTH_ASSIGN(auto role, read_string(m, "role", where + "."));
  if (!role || (*role != "user" && *role != "assistant")) return invalid("'" + where + ".role' must be 'user' or 'assistant'");
  auto content = m.find("content");
  if (content == m.end() || content->is_null()) return invalid("'" + where + ".content' is required");
  if (content->is_string()) {
    out.push_back(Json{{"role", *role}, {"content", *content}});
    return ok_status();
  }
  if (!content->is_array()) return field_type_error(where + ".", "content", "a string or an array of blocks", *content);
  if (content->empty()) return invalid("'" + where + ".content' must not be empty");
  Json parts = Json::array();
  Json tool_calls = Json::array();
  for (size_t b = 0; b < content->size(); ++b) {
    const Json& block = (*content)[b];
    const std::string bw = where + ".content[" + std::to_string(b) + "]";
    if (!block.is_object()) return invalid("'" + bw + "' must be an object");
    HEARTH_ASSIGN(auto type, read_string(block, "type", bw + "."));
    if (!type) return invalid("'" + bw + ".type' is required");
    if (*type == "text") {
      HEARTH_ASSIGN(auto text, read_string(block, "text", bw + "."));
      if (!text) return invalid("'" + bw + ".text' is required");
      parts.push_back(Json{{"type", "text"}, {"text", *text}});
    } else if (*type == "tool_use") {
      if (*role != "assistant") return invalid("'" + bw + "': tool_use blocks belong to assistant messages");
      HEARTH_ASSIGN(auto name, read_string(block, "name", bw + "."));
      if (!name) return invalid("'" + bw + ".name' is required");
      tool_calls.push_back(Json{{"id", string_field(block, "id", "")},
                                {"type", "function"},
                                {"function", {{"name", *name}, {"arguments", block.value("input", Json::object())}}}});
    } else if (*type == "tool_result") {
      HEARTH_ASSIGN(std::string text, tool_result_text(block.value("content", Json()), bw));
      out.push_back(Json{{"role", "tool"}, {"tool_call_id", string_field(block, "tool_use_id", "")}, {"content", text}});
    } else if (*type == "thinking" || *type == "redacted_thinking") {
      continue;
    } else if (*type == "image" || *type == "document") {
      return make_error(ErrorKind::kUnsupported, "'" + bw + "' is an " + *type + " block; the loaded model reads text only");
    } else {
      return make_error(ErrorKind::kUnsupported, "'" + bw + "' has unsupported block type '" + *type + "'");
    }
  }
  if (!parts.empty() || !tool_calls.empty()) {
    Json msg = {{"role", *role}, {"content", parts.empty() ? Json() : parts}};
    if (!tool_calls.empty()) msg["tool_calls"] = std::move(tool_calls);
    out.push_back(std::move(msg));
  }
  return ok_status();
}

Result<std::string> system_text(const Json& system) {
  if (system.is_string()) return system.get<std::string>();
  if (!system.is_array()) return field_type_error("", "system", "a string or an array of text blocks", system);
  std::string text;
  for (const auto& b : system) {
    if (!b.is_object() || string_field(b, "type", "") != "text" || !b.contains("text") || !b["text"].is_string()) {
      return invalid("'system' blocks must be {\"type\": \"text\", \"text\": ...}");
    }
    if (!text.empty()) text += "\n\n";
    text += b["text"].get<std::string>();
  }
  return text;
}

const char* stop_reason_of(protocol::StopReason r) {
  switch (r) {
    case protocol::StopReason::kLength:
    case protocol::StopReason::kContext: return "max_tokens";
    case protocol::StopReason::kStopString: return "stop_sequence";
    default: return "end_turn";
  }
}

class AnthropicEncoder final : public ResponseEncoder {
 public:
  AnthropicEncoder(const CompletionJob& job, ResponseMeta meta) : meta_(std::move(meta)), stream_(job.stream) {}

  const char* content_type() const override { return stream_ ? "text/event-stream" : "application/json"; }

  std::string begin() override {
    if (!stream_) return "";
    Json message = message_json(false);
    std::string out = sse_event("message_start", Json{{"type", "message_start"}, {"message", std::move(message)}});
    out += open_block(Block::kText, Json{{"type", "text"}, {"text", ""}});
    out += sse_event("ping", Json{{"type", "ping"}});
    return out;
  }

  // Blocks open as the reply needs them: the text block begin() opened, a thinking block when
  // reasoning arrives, a tool_use block per call (its input as one input_json_delta).
  std::string on_event(int32_t, const protocol::Event& event) override {
    choice_.absorb(event);
    if (!stream_) return "";
    std::string out;
    if (!event.reasoning.empty()) {
      if (open_ != Block::kThinking) {
        out += close_block();
        out += open_block(Block::kThinking, Json{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}});
      }
      out += delta(Json{{"type", "thinking_delta"}, {"thinking", event.reasoning}});
    }
    if (!event.text.empty()) {
      if (open_ != Block::kText) {
        out += close_block();
        out += open_block(Block::kText, Json{{"type", "text"}, {"text", ""}});
      }
      out += delta(Json{{"type", "text_delta"}, {"text", event.text}});
    }
    for (const auto& call : event.tool_calls) {
      out += close_block();
      out += open_block(Block::kToolUse, Json{{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", Json::object()}});
      out += delta(Json{{"type", "input_json_delta"}, {"partial_json", call.arguments}});
      out += close_block();
    }
    return out;
  }

  std::string end() override {
    if (!stream_) return dump_json(message_json(true));
    std::string out = close_block();
    out += sse_event("message_delta", Json{{"type", "message_delta"},
                                           {"delta", {{"stop_reason", stop_reason()}, {"stop_sequence", stop_sequence()}}},
                                           {"usage", {{"output_tokens", choice_.timings.predicted_n}}}});
    out += sse_event("message_stop", Json{{"type", "message_stop"}});
    return out;
  }

  std::string error_chunk(const Json& body) override { return sse_event("error", body); }

 private:
  enum class Block { kNone, kText, kThinking, kToolUse };
  std::string open_block(Block kind, Json block) {
    open_ = kind;
    return sse_event("content_block_start", Json{{"type", "content_block_start"}, {"index", block_index_}, {"content_block", std::move(block)}});
  }
  std::string close_block() {
    if (open_ == Block::kNone) return "";
    open_ = Block::kNone;
    return sse_event("content_block_stop", Json{{"type", "content_block_stop"}, {"index", block_index_++}});
  }
  std::string delta(Json d) const {
    return sse_event("content_block_delta", Json{{"type", "content_block_delta"}, {"index", block_index_}, {"delta", std::move(d)}});
  }
  const char* stop_reason() const { return choice_.tool_calls.empty() ? stop_reason_of(choice_.stop_reason) : "tool_use"; }
  Json stop_sequence() const {
    return choice_.stop_reason == protocol::StopReason::kStopString ? Json(choice_.stop_word) : Json();
  }
  Json message_json(bool finished) const {
    int32_t input = meta_.prompt_tokens.empty() ? 0 : meta_.prompt_tokens[0];
    Json content = Json::array();
    if (finished) {
      if (!choice_.reasoning.empty()) content.push_back(Json{{"type", "thinking"}, {"thinking", choice_.reasoning}, {"signature", ""}});
      if (!choice_.text.empty() || choice_.tool_calls.empty()) content.push_back(Json{{"type", "text"}, {"text", choice_.text}});
      for (const auto& call : choice_.tool_calls) {
        Json input = Json::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
        content.push_back(Json{{"type", "tool_use"}, {"id", call.id}, {"name", call.name},
                               {"input", input.is_discarded() ? Json::object() : input}});
      }
    }
    Json usage = {{"input_tokens", input}, {"output_tokens", finished ? choice_.timings.predicted_n : 0}};
    if (finished) usage["cache_read_input_tokens"] = choice_.timings.cached_n;
    return Json{{"id", meta_.id},
                {"type", "message"},
                {"role", "assistant"},
                {"model", meta_.model},
                {"content", std::move(content)},
                {"stop_reason", finished ? Json(stop_reason()) : Json()},
                {"stop_sequence", finished ? stop_sequence() : Json()},
                {"usage", std::move(usage)}};
  }

  ResponseMeta meta_;
  bool stream_;
  ChoiceState choice_;
  Block open_ = Block::kNone;
  int block_index_ = 0;
};

}  // namespace

Result<CompletionJob> parse_anthropic_messages(const Json& body, bool require_max_tokens) {
  CompletionJob job;
  job.dialect = Dialect::kAnthropic;
  job.request.sampling = llama_server_default_sampling();
  HEARTH_ASSIGN(auto model, read_string(body, "model"));
  if (model) job.request.model = *model;
  HEARTH_ASSIGN(auto max_tokens, read_integer(body, "max_tokens"));
  if (max_tokens) {
    HEARTH_TRY(check_range("max_tokens", *max_tokens, 1, 1 << 30));
    job.request.n_predict = static_cast<int32_t>(*max_tokens);
  } else if (require_max_tokens) {
    return invalid("'max_tokens' is required");
  }
  HEARTH_ASSIGN(auto stream, read_bool(body, "stream"));
  job.stream = stream.value_or(false);
  HEARTH_TRY(read_generation_options(body, "", job));
  auto stop_sequences = body.find("stop_sequences");
  if (stop_sequences != body.end() && !stop_sequences->is_null()) {
    if (!stop_sequences->is_array()) return field_type_error("", "stop_sequences", "an array of strings", *stop_sequences);
    for (const auto& s : *stop_sequences) {
      if (!s.is_string()) return field_type_error("", "stop_sequences", "an array of strings", *stop_sequences);
      if (!s.get<std::string>().empty()) job.request.stop.push_back(s.get<std::string>());
    }
  }
  HEARTH_ASSIGN(const Json* messages, read_array(body, "messages"));
  if (!messages || messages->empty()) return invalid("'messages' must be a non-empty array");
  Json chat = Json::array();
  auto system = body.find("system");
  if (system != body.end() && !system->is_null()) {
    HEARTH_ASSIGN(std::string text, system_text(*system));
    if (!text.empty()) chat.push_back(Json{{"role", "system"}, {"content", text}});
  }
  for (size_t i = 0; i < messages->size(); ++i) HEARTH_TRY(convert_message((*messages)[i], i, chat));
  PromptSource p;
  p.kind = PromptSource::Kind::kChat;
  p.chat = Json{{"messages", std::move(chat)}};
  HEARTH_TRY(put_tools(body, ToolSpelling::kAnthropic, p.chat));
  // thinking: {"type": "disabled"} turns a thinking template's reasoning off; "enabled" keeps it,
  // and its budget_tokens is the thinking budget (not held to Anthropic's 1024 minimum).
  auto thinking = body.find("thinking");
  if (thinking != body.end() && !thinking->is_null()) {
    if (!thinking->is_object() || !thinking->contains("type") || !(*thinking)["type"].is_string()) {
      return field_type_error("", "thinking", "an object with a 'type'", *thinking);
    }
    p.chat["enable_thinking"] = (*thinking)["type"].get<std::string>() != "disabled";
    if ((*thinking)["type"] == "enabled") HEARTH_TRY(put_thinking_budget(*thinking, "budget_tokens", p.chat, "thinking."));
  }
  job.request.prompts.push_back(std::move(p));
  HEARTH_TRY(validate_completion_job(job));
  return job;
}

Json anthropic_count_tokens_response(int32_t input_tokens) { return Json{{"input_tokens", input_tokens}}; }

std::unique_ptr<ResponseEncoder> make_anthropic_messages_encoder(const CompletionJob& job, ResponseMeta meta) {
  return std::make_unique<AnthropicEncoder>(job, std::move(meta));
}

}  // namespace hearth::api
