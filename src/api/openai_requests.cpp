// OpenAI-style request bodies → CompletionJob / EmbeddingJob (see openai.h).
#include <cstring>

#include "api/generation_options.h"
#include "api/openai.h"
#include "api/reasoning_options.h"
#include "api/structured_output.h"
#include "api/tool_definitions.h"

namespace hearth::api {
namespace {

Error invalid(std::string message) { return make_error(ErrorKind::kInvalidArgument, std::move(message)); }

bool is_image_part_type(const std::string& type) {
  return type == "image_url" || type == "input_image" || type == "image";
}

// Checks one chat message enough to give OpenAI-shaped messages to the template: a known role,
// and no image or audio parts (the model has no such encoder).
Status check_chat_message(const Json& m, size_t index) {
  const std::string where = "messages[" + std::to_string(index) + "]";
  if (!m.is_object()) return invalid("'" + where + "' must be an object");
  auto role = m.find("role");
  if (role == m.end() || !role->is_string()) return invalid("'" + where + ".role' must be a string");
  static const char* kRoles[] = {"system", "developer", "user", "assistant", "tool", "function"};
  bool known = false;
  for (const char* r : kRoles) known = known || *role == r;
  if (!known) return invalid("'" + where + ".role' must be one of system, developer, user, assistant, tool; got '" +
                             role->get<std::string>() + "'");
  auto content = m.find("content");
  if (content != m.end() && content->is_array()) {
    for (const auto& part : *content) {
      if (!part.is_object()) continue;  // the template's context builder reports it
      std::string type = string_field(part, "type", "");
      if (is_image_part_type(type)) {
        return make_error(ErrorKind::kUnsupported, "'" + where + "' has an image; the loaded model cannot read images");
      }
      if (type == "input_audio" || type == "file") {
        return make_error(ErrorKind::kUnsupported, "'" + where + "' has a content part of type '" + type +
                                                        "'; only text is supported");
      }
    }
  } else if (content != m.end() && !content->is_null() && !content->is_string()) {
    return field_type_error(where + ".", "content", "a string, an array of parts or null", *content);
  }
  if ((content == m.end() || content->is_null()) && *role != "assistant") {
    return invalid("'" + where + ".content' is required for role '" + role->get<std::string>() + "'");
  }
  return ok_status();
}

Status read_common(const Json& body, CompletionJob& job) {
  job.dialect = Dialect::kOpenAI;
  job.request.sampling = llama_server_default_sampling();
  HEARTH_ASSIGN(auto model, read_string(body, "model"));
  if (model) job.request.model = *model;
  HEARTH_ASSIGN(auto stream, read_bool(body, "stream"));
  job.stream = stream.value_or(false);
  HEARTH_ASSIGN(const Json* stream_options, read_object(body, "stream_options"));
  if (stream_options) {
    HEARTH_ASSIGN(auto usage, read_bool(*stream_options, "include_usage", "stream_options."));
    job.include_usage = usage.value_or(false);
  }
  HEARTH_ASSIGN(auto n, read_integer(body, "n"));
  if (n) {
    HEARTH_TRY(check_range("n", *n, 1, 16));
    job.request.n_choices = static_cast<int32_t>(*n);
  }
  HEARTH_TRY(read_generation_options(body, "", job));
  HEARTH_TRY(read_openai_structured_output(body, job));
  return ok_status();
}

Status read_max_tokens(const Json& body, const char* key, CompletionJob& job) {
  HEARTH_ASSIGN(auto v, read_integer(body, key));
  if (v) {
    HEARTH_TRY(check_range(key, *v, 1, 1 << 30));
    job.request.n_predict = static_cast<int32_t>(*v);
  }
  return ok_status();
}

// A prompt or an embedding input: a string, an array of strings, an array of token ids or an
// array of such arrays. Each element becomes one entry of `texts` or `tokens`.
Status read_text_or_tokens(const Json& value, const char* field, std::vector<std::string>& texts,
                           std::vector<std::vector<int32_t>>& tokens) {
  auto token_list = [&](const Json& arr, std::vector<int32_t>& out) -> Status {
    for (const auto& t : arr) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX) {
        return invalid(std::string("'") + field + "' token ids must be non-negative integers");
      }
      out.push_back(static_cast<int32_t>(t.get<int64_t>()));
    }
    return ok_status();
  };
  if (value.is_string()) {
    texts.push_back(value.get<std::string>());
    return ok_status();
  }
  if (!value.is_array()) return field_type_error("", field, "a string, an array of strings or token ids", value);
  if (value.empty()) return invalid(std::string("'") + field + "' must not be empty");
  if (value[0].is_number()) {
    std::vector<int32_t> ids;
    HEARTH_TRY(token_list(value, ids));
    tokens.push_back(std::move(ids));
    return ok_status();
  }
  for (const auto& item : value) {
    if (item.is_string()) {
      texts.push_back(item.get<std::string>());
    } else if (item.is_array()) {
      std::vector<int32_t> ids;
      HEARTH_TRY(token_list(item, ids));
      tokens.push_back(std::move(ids));
    } else {
      return field_type_error("", field, "a string, an array of strings or token ids", value);
    }
  }
  if (!texts.empty() && !tokens.empty()) {
    return invalid(std::string("'") + field + "' mixes strings and token arrays");
  }
  return ok_status();
}

}  // namespace

Result<CompletionJob> parse_openai_chat(const Json& body) {
  CompletionJob job;
  HEARTH_TRY(read_common(body, job));
  HEARTH_TRY(read_max_tokens(body, "max_tokens", job));
  HEARTH_TRY(read_max_tokens(body, "max_completion_tokens", job));

  HEARTH_ASSIGN(const Json* messages, read_array(body, "messages"));
  if (!messages || messages->empty()) return invalid("'messages' must be a non-empty array");
  Json chat_messages = Json::array();
  for (size_t i = 0; i < messages->size(); ++i) {
    HEARTH_TRY(check_chat_message((*messages)[i], i));
    Json m = (*messages)[i];
    if (m["role"] == "developer") m["role"] = "system";
    chat_messages.push_back(std::move(m));
  }
  HEARTH_TRY(read_logprobs(body, job));
  HEARTH_ASSIGN(const Json* modalities, read_array(body, "modalities"));
  if (modalities) {
    for (const auto& m : *modalities) {
      if (m != "text") return make_error(ErrorKind::kUnsupported, "only the 'text' modality is supported");
    }
  }

  PromptSource prompt;
  prompt.kind = PromptSource::Kind::kChat;
  prompt.chat = Json::object();
  prompt.chat["messages"] = std::move(chat_messages);
  HEARTH_TRY(put_tools(body, ToolSpelling::kChat, prompt.chat));
  HEARTH_TRY(read_bool(body, "parallel_tool_calls"));
  // reasoning_effort "none" turns a thinking template's reasoning off (llama-server's
  // chat_template_kwargs.enable_thinking too); another level reaches a template that reads
  // one. thinking_budget (Hearth's extension): reasoning tokens before the engine closes it.
  HEARTH_ASSIGN(auto reasoning_effort, read_string(body, "reasoning_effort"));
  HEARTH_TRY(put_reasoning_effort(reasoning_effort, "reasoning_effort", prompt.chat));
  HEARTH_TRY(put_thinking_budget(body, "thinking_budget", prompt.chat));
  auto kwargs = body.find("chat_template_kwargs");
  if (kwargs != body.end() && kwargs->is_object() && kwargs->contains("enable_thinking") && (*kwargs)["enable_thinking"].is_boolean()) {
    prompt.chat["enable_thinking"] = (*kwargs)["enable_thinking"];
  }
  HEARTH_ASSIGN(auto add_generation_prompt, read_bool(body, "add_generation_prompt"));
  if (add_generation_prompt) prompt.chat["add_generation_prompt"] = *add_generation_prompt;
  job.request.prompts.push_back(std::move(prompt));
  HEARTH_TRY(validate_completion_job(job));
  return job;
}

Result<CompletionJob> parse_openai_completion(const Json& body) {
  CompletionJob job;
  HEARTH_TRY(read_common(body, job));
  HEARTH_TRY(read_max_tokens(body, "max_tokens", job));
  auto prompt_it = body.find("prompt");
  if (prompt_it == body.end() || prompt_it->is_null()) return invalid("'prompt' is required");
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> token_prompts;
  HEARTH_TRY(read_text_or_tokens(*prompt_it, "prompt", texts, token_prompts));
  HEARTH_ASSIGN(auto suffix, read_string(body, "suffix"));
  for (auto& t : texts) {
    PromptSource p;
    p.kind = PromptSource::Kind::kText;
    p.text = std::move(t);
    if (suffix && !suffix->empty()) {
      p.fill_in_middle = true;
      p.suffix = *suffix;
    }
    job.request.prompts.push_back(std::move(p));
  }
  for (auto& ids : token_prompts) {
    if (suffix && !suffix->empty()) return invalid("'suffix' needs a text prompt");
    PromptSource p;
    p.kind = PromptSource::Kind::kTokens;
    p.tokens = std::move(ids);
    job.request.prompts.push_back(std::move(p));
  }
  HEARTH_ASSIGN(auto echo, read_bool(body, "echo"));
  job.echo = echo.value_or(false);
  // Legacy completions: `logprobs` is the number of alternatives (0-5) to report per token.
  HEARTH_ASSIGN(auto logprobs, read_integer(body, "logprobs"));
  if (logprobs) {
    HEARTH_TRY(check_range("logprobs", *logprobs, 0, 20));
    job.request.logprobs = true;
    job.request.top_logprobs = static_cast<int32_t>(*logprobs);
  }
  HEARTH_ASSIGN(auto best_of, read_integer(body, "best_of"));
  if (best_of && *best_of != job.request.n_choices) {
    return make_error(ErrorKind::kUnsupported, "'best_of' is not supported (it must equal 'n' when given)");
  }
  HEARTH_TRY(validate_completion_job(job));
  return job;
}

Result<EmbeddingJob> parse_openai_embeddings(const Json& body) {
  EmbeddingJob job;
  job.dialect = Dialect::kOpenAI;
  HEARTH_ASSIGN(auto model, read_string(body, "model"));
  if (model) job.request.model = *model;
  auto input = body.find("input");
  if (input == body.end() || input->is_null()) {
    input = body.find("content");  // llama-server's older name
    if (input == body.end() || input->is_null()) return invalid("'input' is required");
  }
  HEARTH_TRY(read_text_or_tokens(*input, "input", job.request.texts, job.request.token_inputs));
  for (const auto& t : job.request.texts) {
    if (t.empty()) return invalid("'input' must not contain empty strings");
  }
  for (const auto& t : job.request.token_inputs) {
    if (t.empty()) return invalid("'input' must not contain empty token arrays");
  }
  if (job.request.texts.size() + job.request.token_inputs.size() > 2048) return invalid("'input' has more than 2048 entries");
  HEARTH_ASSIGN(auto format, read_string(body, "encoding_format"));
  if (format) {
    if (*format == "base64") {
      job.base64 = true;
    } else if (*format != "float") {
      return invalid("'encoding_format' must be 'float' or 'base64'");
    }
  }
  HEARTH_ASSIGN(auto dimensions, read_integer(body, "dimensions"));
  if (dimensions) {
    HEARTH_TRY(check_range("dimensions", *dimensions, 1, 1 << 20));
    job.dimensions = static_cast<int32_t>(*dimensions);
  }
  return job;
}

}  // namespace hearth::api
