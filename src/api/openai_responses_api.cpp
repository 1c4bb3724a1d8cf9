// OpenAI's Responses API (POST /v1/responses), stateless: the request's `input` items and
// `instructions` become a chat, and the answer is one assistant message item. Nothing is
// stored, so previous_response_id and conversation are refused. Streaming uses the typed
// events (response.created ... response.completed) with sequence numbers.
//
// Output items, in order: a reasoning item when the model thought (its text as one
// "reasoning_text" content part, streamed as response.reasoning_text.delta; no summary), the
// assistant message, then one function_call item per call. reasoning.effort sets the level.
#include "api/choice_state.h"
#include "api/generation_options.h"
#include "api/openai.h"
#include "api/reasoning_options.h"
#include "api/response_encoder.h"
#include "api/stream_framing.h"
#include "api/structured_output.h"
#include "api/tool_definitions.h"

namespace hearth::api {
namespace {

Error invalid(std::string message) { return make_error(ErrorKind::kInvalidArgument, std::move(message)); }

// The text of an input message's content: a string or text parts.
Result<Json> message_content(const Json& content, const std::string& where) {
  if (content.is_string()) return content;
  if (!content.is_array()) return field_type_error(where + ".", "content", "a string or an array of parts", content);
  Json parts = Json::array();
  for (const auto& part : content) {
    if (!part.is_object()) return invalid("'" + where + ".content' parts must be objects");
    std::string type = string_field(part, "type", "");
    if (type == "input_text" || type == "output_text" || type == "text") {
      if (!part.contains("text") || !part["text"].is_string()) return invalid("'" + where + ".content' text parts need a string 'text'");
      parts.push_back(Json{{"type", "text"}, {"text", part["text"]}});
    } else if (type == "input_image") {
      return make_error(ErrorKind::kUnsupported, "'" + where + "' has an image; the loaded model cannot read images");
    } else {
      return make_error(ErrorKind::kUnsupported, "'" + where + "' has a content part of type '" + type + "'; only text is supported");
    }
  }
  return parts;
}

Result<Json> input_messages(const Json& input) {
  Json messages = Json::array();
  if (input.is_string()) {
    messages.push_back(Json{{"role", "user"}, {"content", input}});
    return messages;
  }
  if (!input.is_array()) return field_type_error("", "input", "a string or an array of items", input);
  for (size_t i = 0; i < input.size(); ++i) {
    const Json& item = input[i];
    const std::string where = "input[" + std::to_string(i) + "]";
    if (!item.is_object()) return invalid("'" + where + "' must be an object");
    std::string type = string_field(item, "type", "message");
    if (type == "message") {
      if (!item.contains("role") || !item["role"].is_string()) return invalid("'" + where + ".role' must be a string");
      std::string role = item["role"].get<std::string>();
      if (role == "developer") role = "system";
      if (role != "system" && role != "user" && role != "assistant") {
        return invalid("'" + where + ".role' must be user, assistant, system or developer");
      }
      if (!item.contains("content")) return invalid("'" + where + ".content' is required");
      HEARTH_ASSIGN(Json content, message_content(item["content"], where));
      messages.push_back(Json{{"role", role}, {"content", std::move(content)}});
    } else if (type == "function_call") {
      if (!item.contains("name") || !item["name"].is_string()) return invalid("'" + where + ".name' must be a string");
      Json call = {{"id", string_field(item, "call_id", "")},
                   {"type", "function"},
                   {"function", {{"name", item["name"]}, {"arguments", string_field(item, "arguments", "{}")}}}};
      if (!messages.empty() && messages.back()["role"] == "assistant" && messages.back().contains("tool_calls")) {
        messages.back()["tool_calls"].push_back(std::move(call));
      } else {
        messages.push_back(Json{{"role", "assistant"}, {"content", nullptr}, {"tool_calls", Json::array({std::move(call)})}});
      }
    } else if (type == "function_call_output") {
      Json output = item.value("output", Json(""));
      if (!output.is_string()) output = output.dump();
      messages.push_back(Json{{"role", "tool"}, {"tool_call_id", string_field(item, "call_id", "")}, {"content", output}});
    } else if (type == "reasoning") {
      continue;
    } else {
      return make_error(ErrorKind::kUnsupported, "'" + where + "' has type '" + type + "', which this server does not support");
    }
  }
  if (messages.empty()) return invalid("'input' must not be empty");
  return messages;
}

class ResponsesEncoder final : public ResponseEncoder {
 public:
  ResponsesEncoder(const CompletionJob& job, ResponseMeta meta)
      : meta_(std::move(meta)),
        stream_(job.stream),
        max_output_tokens_(job.request.n_predict),
        temperature_(job.request.sampling.temperature),
        top_p_(job.request.sampling.top_p),
        instructions_(job.instructions ? Json(*job.instructions) : Json()),
        text_format_(job.text_format),
        reasoning_(job.reasoning_effort ? Json{{"effort", *job.reasoning_effort}, {"summary", nullptr}} : Json()),
        message_id_("msg_" + meta_.id.substr(meta_.id.find('_') + 1)),
        reasoning_id_("rs_" + meta_.id.substr(meta_.id.find('_') + 1)) {}

  const char* content_type() const override { return stream_ ? "text/event-stream" : "application/json"; }

  std::string begin() override {
    if (!stream_) return "";
    std::string out = event("response.created", Json{{"response", response_object("in_progress")}});
    out += event("response.in_progress", Json{{"response", response_object("in_progress")}});
    return out;
  }

  std::string on_event(int32_t, const protocol::Event& e) override {
    choice_.absorb(e);
    if (!stream_) return "";
    std::string out;
    if (!e.reasoning.empty()) {
      if (reasoning_index_ < 0) {
        reasoning_index_ = next_index_++;
        out += event("response.output_item.added", Json{{"output_index", reasoning_index_}, {"item", reasoning_item("in_progress", false)}});
        out += event("response.content_part.added", Json{{"item_id", reasoning_id_},
                                                         {"output_index", reasoning_index_},
                                                         {"content_index", 0},
                                                         {"part", reasoning_part("")}});
      }
      out += event("response.reasoning_text.delta", Json{{"item_id", reasoning_id_},
                                                          {"output_index", reasoning_index_},
                                                          {"content_index", 0},
                                                          {"delta", e.reasoning}});
    }
    if (!e.text.empty() || !e.tool_calls.empty()) out += open_message();
    if (!e.text.empty()) {
      out += event("response.output_text.delta", Json{{"item_id", message_id_},
                                                       {"output_index", message_index_},
                                                       {"content_index", 0},
                                                       {"delta", e.text},
                                                       {"logprobs", Json::array()}});
    }
    // Each finished call is a function_call output item after the message.
    for (const auto& call : e.tool_calls) {
      const int index = message_index_ + 1 + static_cast<int>(call.index);
      Json item = function_call_item(call);
      item["status"] = "in_progress";
      item["arguments"] = "";
      out += event("response.output_item.added", Json{{"output_index", index}, {"item", item}});
      out += event("response.function_call_arguments.delta", Json{{"item_id", item["id"]}, {"output_index", index}, {"delta", call.arguments}});
      out += event("response.function_call_arguments.done", Json{{"item_id", item["id"]}, {"output_index", index}, {"arguments", call.arguments}});
      out += event("response.output_item.done", Json{{"output_index", index}, {"item", function_call_item(call)}});
    }
    return out;
  }

  std::string end() override {
    const char* status = incomplete() ? "incomplete" : "completed";
    if (!stream_) return dump_json(response_object(status));
    std::string out = open_message();
    out += close_reasoning();  // reasoning that came after the answer began
    out += event("response.output_text.done", Json{{"item_id", message_id_},
                                                    {"output_index", message_index_},
                                                    {"content_index", 0},
                                                    {"text", choice_.text},
                                                    {"logprobs", Json::array()}});
    out += event("response.content_part.done", Json{{"item_id", message_id_},
                                                    {"output_index", message_index_},
                                                    {"content_index", 0},
                                                    {"part", text_part(choice_.text)}});
    out += event("response.output_item.done", Json{{"output_index", message_index_}, {"item", message_item(status, true)}});
    out += event(incomplete() ? "response.incomplete" : "response.completed", Json{{"response", response_object(status)}});
    return out;
  }

  std::string error_chunk(const Json& body) override {
    Json e = body.contains("error") ? body["error"] : body;
    return event("error", Json{{"code", e.value("code", Json())}, {"message", string_field(e, "message", "")}, {"param", nullptr}});
  }

 private:
  bool incomplete() const {
    return choice_.stop_reason == protocol::StopReason::kLength || choice_.stop_reason == protocol::StopReason::kContext;
  }
  std::string event(const char* type, Json payload) {
    Json e = {{"type", type}, {"sequence_number", sequence_++}};
    for (auto it = payload.begin(); it != payload.end(); ++it) e[it.key()] = it.value();
    return sse_event(type, e);
  }
  // The message item opens after the reasoning (which it closes) and before any call.
  std::string open_message() {
    if (message_index_ >= 0) return "";
    std::string out = close_reasoning();
    message_index_ = next_index_++;
    out += event("response.output_item.added", Json{{"output_index", message_index_}, {"item", message_item("in_progress", false)}});
    out += event("response.content_part.added", Json{{"item_id", message_id_},
                                                     {"output_index", message_index_},
                                                     {"content_index", 0},
                                                     {"part", text_part("")}});
    return out;
  }
  std::string close_reasoning() {
    std::string out;
    if (reasoning_index_ >= 0 && !reasoning_closed_) {
      reasoning_closed_ = true;
      out += event("response.reasoning_text.done", Json{{"item_id", reasoning_id_},
                                                         {"output_index", reasoning_index_},
                                                         {"content_index", 0},
                                                         {"text", choice_.reasoning}});
      out += event("response.content_part.done", Json{{"item_id", reasoning_id_},
                                                      {"output_index", reasoning_index_},
                                                      {"content_index", 0},
                                                      {"part", reasoning_part(choice_.reasoning)}});
      out += event("response.output_item.done", Json{{"output_index", reasoning_index_}, {"item", reasoning_item("completed", true)}});
    }
    return out;
  }
  static Json reasoning_part(const std::string& text) { return Json{{"type", "reasoning_text"}, {"text", text}}; }
  Json reasoning_item(const char* status, bool with_content) const {
    return Json{{"id", reasoning_id_},
                {"type", "reasoning"},
                {"status", status},
                {"summary", Json::array()},
                {"content", with_content ? Json::array({reasoning_part(choice_.reasoning)}) : Json::array()}};
  }
  static Json text_part(const std::string& text) {
    return Json{{"type", "output_text"}, {"text", text}, {"annotations", Json::array()}, {"logprobs", Json::array()}};
  }
  Json message_item(const char* status, bool with_content) const {
    return Json{{"id", message_id_},
                {"type", "message"},
                {"status", status},
                {"role", "assistant"},
                {"content", with_content ? Json::array({text_part(choice_.text)}) : Json::array()}};
  }
  static Json function_call_item(const protocol::ToolCallOutput& call) {
    return Json{{"id", "fc_" + call.id},
                {"type", "function_call"},
                {"status", "completed"},
                {"call_id", call.id},
                {"name", call.name},
                {"arguments", call.arguments}};
  }
  Json output_items(const char* status) const {
    Json items = Json::array();
    if (!choice_.reasoning.empty()) items.push_back(reasoning_item("completed", true));
    items.push_back(message_item(status, true));
    for (const auto& call : choice_.tool_calls) items.push_back(function_call_item(call));
    return items;
  }
  Json response_object(const char* status) const {
    const bool finished = std::string(status) != "in_progress";
    int64_t in = meta_.prompt_tokens.empty() ? 0 : meta_.prompt_tokens[0];
    int64_t out_tokens = choice_.timings.predicted_n;
    Json r = {{"id", meta_.id},
              {"object", "response"},
              {"created_at", meta_.created},
              {"status", status},
              {"error", nullptr},
              {"incomplete_details", std::string(status) == "incomplete" ? Json{{"reason", "max_output_tokens"}} : Json()},
              {"instructions", instructions_},
              {"max_output_tokens", max_output_tokens_ > 0 ? Json(max_output_tokens_) : Json()},
              {"model", meta_.model},
              {"output", finished ? output_items(status) : Json::array()},
              {"parallel_tool_calls", true},
              {"previous_response_id", nullptr},
              {"reasoning", reasoning_},
              {"store", false},
              {"temperature", temperature_},
              {"text", {{"format", text_format_}}},
              {"tool_choice", "auto"},
              {"tools", Json::array()},
              {"top_p", top_p_},
              {"truncation", "disabled"},
              {"usage", finished ? Json{{"input_tokens", in},
                                        {"input_tokens_details", {{"cached_tokens", choice_.timings.cached_n}}},
                                        {"output_tokens", out_tokens},
                                        {"output_tokens_details", {{"reasoning_tokens", choice_.timings.reasoning_n}}},
                                        {"total_tokens", in + out_tokens}}
                                  : Json()},
              {"metadata", Json::object()}};
    return r;
  }

  ResponseMeta meta_;
  bool stream_;
  int32_t max_output_tokens_;
  float temperature_;
  float top_p_;
  Json instructions_;
  Json text_format_;
  Json reasoning_;
  std::string message_id_;
  std::string reasoning_id_;
  int reasoning_index_ = -1;  // output_index of the reasoning item; -1: not opened
  bool reasoning_closed_ = false;
  int message_index_ = -1;    // of the message item
  int next_index_ = 0;
  ChoiceState choice_;
  int64_t sequence_ = 0;
};

}  // namespace

Result<CompletionJob> parse_openai_responses(const Json& body) {
  CompletionJob job;
  job.dialect = Dialect::kOpenAI;
  job.request.sampling = llama_server_default_sampling();
  HEARTH_ASSIGN(auto model, read_string(body, "model"));
  if (model) job.request.model = *model;
  HEARTH_ASSIGN(auto stream, read_bool(body, "stream"));
  job.stream = stream.value_or(false);
  for (const char* stateful : {"previous_response_id", "conversation"}) {
    if (body.contains(stateful) && !body[stateful].is_null()) {
      return make_error(ErrorKind::kUnsupported, std::string("'") + stateful +
                                                     "' is not supported: this server's Responses API is stateless; "
                                                     "send the whole conversation in 'input'");
    }
  }
  HEARTH_TRY(read_generation_options(body, "", job));
  HEARTH_ASSIGN(auto max_output, read_integer(body, "max_output_tokens"));
  if (max_output) {
    HEARTH_TRY(check_range("max_output_tokens", *max_output, 1, 1 << 30));
    job.request.n_predict = static_cast<int32_t>(*max_output);
  }
  HEARTH_TRY(read_responses_structured_output(body, job));
  // Checked for range; the answer carries no log-probabilities.
  HEARTH_ASSIGN(auto top_logprobs, read_integer(body, "top_logprobs"));
  if (top_logprobs) HEARTH_TRY(check_range("top_logprobs", *top_logprobs, 0, 20));
  auto input = body.find("input");
  if (input == body.end() || input->is_null()) return invalid("'input' is required");
  HEARTH_ASSIGN(Json messages, input_messages(*input));
  HEARTH_ASSIGN(auto instructions, read_string(body, "instructions"));
  job.instructions = instructions;
  if (instructions && !instructions->empty()) {
    messages.insert(messages.begin(), Json{{"role", "system"}, {"content", *instructions}});
  }
  PromptSource prompt;
  prompt.kind = PromptSource::Kind::kChat;
  prompt.chat = Json{{"messages", std::move(messages)}};
  HEARTH_TRY(put_tools(body, ToolSpelling::kResponses, prompt.chat));
  HEARTH_ASSIGN(const Json* reasoning, read_object(body, "reasoning"));
  if (reasoning) {
    HEARTH_ASSIGN(auto effort, read_string(*reasoning, "effort", "reasoning."));
    HEARTH_TRY(put_reasoning_effort(effort, "reasoning.effort", prompt.chat));
    job.reasoning_effort = effort;
  }
  HEARTH_TRY(read_bool(body, "parallel_tool_calls"));
  job.request.prompts.push_back(std::move(prompt));
  HEARTH_TRY(validate_completion_job(job));
  return job;
}

std::unique_ptr<ResponseEncoder> make_openai_responses_encoder(const CompletionJob& job, ResponseMeta meta) {
  return std::make_unique<ResponsesEncoder>(job, std::move(meta));
}

}  // namespace hearth::api
