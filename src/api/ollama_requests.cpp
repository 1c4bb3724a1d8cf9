// ollama request bodies → CompletionJob / EmbeddingJob (see ollama.h).
#include "api/generation_options.h"
#include "api/keep_alive.h"
#include "api/ollama.h"
#include "api/reasoning_options.h"
#include "api/structured_output.h"
#include "api/tool_definitions.h"

namespace hearth::api {
namespace {

Error invalid(std::string message) { return make_error(ErrorKind::kInvalidArgument, std::move(message)); }

Status read_model(const Json& body, std::string& model) {
  HEARTH_ASSIGN(auto m, read_string(body, "model"));
  if (!m) {
    HEARTH_ASSIGN(m, read_string(body, "name"));
  }
  if (!m || m->empty()) return invalid("model is required");
  model = *m;
  return ok_status();
}

Status check_no_images(const Json& obj, const std::string& where) {
  HEARTH_ASSIGN(const Json* images, read_array(obj, "images", where));
  if (images && !images->empty()) {
    return make_error(ErrorKind::kUnsupported, "'" + where + "images': the loaded model cannot read images (no vision support)");
  }
  return ok_status();
}

// Fields every generate/chat body shares: stream (default true), options, keep_alive,
// logprobs, think, format.
Status read_shared(const Json& body, CompletionJob& job) {
  job.dialect = Dialect::kOllama;
  job.request.sampling = ollama_default_sampling();
  job.request.truncate = true;  // ollama fits an over-long prompt into the context
  HEARTH_TRY(read_model(body, job.request.model));
  HEARTH_ASSIGN(auto stream, read_bool(body, "stream"));
  job.stream = stream.value_or(true);
  HEARTH_ASSIGN(const Json* options, read_object(body, "options"));
  if (options) HEARTH_TRY(read_generation_options(*options, "options.", job));
  HEARTH_ASSIGN(auto truncate, read_bool(body, "truncate"));
  if (truncate) job.request.truncate = *truncate;
  HEARTH_TRY(read_ollama_format(body, job));
  auto keep_alive = body.find("keep_alive");
  if (keep_alive != body.end() && !keep_alive->is_null()) {
    HEARTH_ASSIGN(int64_t ms, parse_keep_alive_ms(*keep_alive));
    job.request.keep_alive_ms = ms;
    job.unload = ms == 0;
  }
  auto think = body.find("think");
  if (think != body.end() && !think->is_null() && !think->is_boolean() && !think->is_string()) {
    return field_type_error("", "think", "a boolean or a string", *think);
  }
  return read_logprobs(body, job);
}

// An ollama chat message → the OpenAI-style message the chat template expects.
Result<Json> chat_message(const Json& m, size_t index) {
  const std::string where = "messages[" + std::to_string(index) + "].";
  if (!m.is_object()) return invalid("'messages[" + std::to_string(index) + "]' must be an object");
  HEARTH_ASSIGN(auto role, read_string(m, "role", where));
  if (!role) return invalid("'" + where + "role' is required");
  if (*role != "system" && *role != "user" && *role != "assistant" && *role != "tool") {
    return invalid("'" + where + "role' must be system, user, assistant or tool; got '" + *role + "'");
  }
  HEARTH_ASSIGN(auto content, read_string(m, "content", where));
  HEARTH_TRY(check_no_images(m, where));
  Json out = {{"role", *role}, {"content", content.value_or("")}};
  HEARTH_ASSIGN(const Json* tool_calls, read_array(m, "tool_calls", where));
  if (tool_calls && !tool_calls->empty()) {
    Json calls = Json::array();
    for (const auto& call : *tool_calls) {
      if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) {
        return invalid("'" + where + "tool_calls' entries need a 'function' object");
      }
      const Json& fn = call["function"];
      calls.push_back(Json{{"type", "function"},
                           {"function", {{"name", string_field(fn, "name", "")}, {"arguments", fn.value("arguments", Json::object())}}}});
    }
    out["tool_calls"] = std::move(calls);
  }
  HEARTH_ASSIGN(auto tool_name, read_string(m, "tool_name", where));
  if (tool_name) out["name"] = *tool_name;
  return out;
}

}  // namespace

std::string ollama_model_field(const Json& body) {
  for (const char* key : {"model", "name"}) {
    auto it = body.find(key);
    if (it != body.end() && it->is_string()) return it->get<std::string>();
  }
  return "";
}

Result<CompletionJob> parse_ollama_generate(const Json& body) {
  CompletionJob job;
  HEARTH_TRY(read_shared(body, job));
  HEARTH_TRY(check_no_images(body, ""));
  HEARTH_ASSIGN(auto prompt, read_string(body, "prompt"));
  HEARTH_ASSIGN(auto suffix, read_string(body, "suffix"));
  HEARTH_ASSIGN(auto system, read_string(body, "system"));
  HEARTH_ASSIGN(auto templ, read_string(body, "template"));
  HEARTH_ASSIGN(auto raw, read_bool(body, "raw"));
  HEARTH_ASSIGN(const Json* context, read_array(body, "context"));

  PromptSource p;
  if (context) {
    for (const auto& t : *context) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX) {
        return invalid("'context' must be an array of token ids");
      }
      p.prefix_tokens.push_back(static_cast<int32_t>(t.get<int64_t>()));
    }
  }
  if (prompt.value_or("").empty() && !(suffix && !suffix->empty())) {
    job.load_only = true;
    return job;
  }
  // A continued conversation already starts with BOS.
  p.add_special = p.prefix_tokens.empty();
  if (suffix && !suffix->empty()) {
    p.kind = PromptSource::Kind::kText;
    p.text = prompt.value_or("");
    p.fill_in_middle = true;
    p.suffix = *suffix;
  } else if (raw.value_or(false)) {
    p.kind = PromptSource::Kind::kText;
    p.text = *prompt;
  } else if (templ && !templ->empty()) {
    p.kind = PromptSource::Kind::kGoTemplate;
    p.text = *templ;
    p.template_fields = {{"System", system.value_or("")}, {"Prompt", *prompt}};
  } else {
    p.kind = PromptSource::Kind::kChat;
    Json messages = Json::array();
    if (system && !system->empty()) messages.push_back(Json{{"role", "system"}, {"content", *system}});
    messages.push_back(Json{{"role", "user"}, {"content", *prompt}});
    p.chat = Json{{"messages", std::move(messages)}, {"add_generation_prompt", true}};
    p.untemplated_text = system && !system->empty() ? *system + "\n\n" + *prompt : *prompt;
  }
  job.request.prompts.push_back(std::move(p));
  HEARTH_TRY(validate_completion_job(job));
  return job;
}

Result<CompletionJob> parse_ollama_chat(const Json& body) {
  CompletionJob job;
  HEARTH_TRY(read_shared(body, job));
  HEARTH_ASSIGN(const Json* messages, read_array(body, "messages"));
  if (!messages || messages->empty()) {
    job.load_only = true;
    return job;
  }
  Json chat_messages = Json::array();
  for (size_t i = 0; i < messages->size(); ++i) {
    HEARTH_ASSIGN(Json m, chat_message((*messages)[i], i));
    chat_messages.push_back(std::move(m));
  }
  PromptSource p;
  p.kind = PromptSource::Kind::kChat;
  p.chat = Json{{"messages", std::move(chat_messages)}};
  HEARTH_TRY(put_tools(body, ToolSpelling::kOllama, p.chat));
  // think: false turns a thinking template's reasoning off; true or "low"/"medium"/"high" keep it
  // (a level also reaches templates that read one).
  HEARTH_TRY(put_ollama_think(body, p.chat));
  job.request.prompts.push_back(std::move(p));
  HEARTH_TRY(validate_completion_job(job));
  return job;
}

Result<EmbeddingJob> parse_ollama_embed(const Json& body, bool legacy) {
  EmbeddingJob job;
  job.dialect = Dialect::kOllama;
  job.legacy = legacy;
  HEARTH_TRY(read_model(body, job.request.model));
  HEARTH_ASSIGN(const Json* options, read_object(body, "options"));
  (void)options;  // sampler options have no meaning for embeddings
  auto keep_alive = body.find("keep_alive");
  if (keep_alive != body.end() && !keep_alive->is_null()) {
    HEARTH_ASSIGN(int64_t ms, parse_keep_alive_ms(*keep_alive));
    job.keep_alive_ms = ms;
  }
  if (legacy) {
    // /api/embeddings returns the raw pooled vector, as ollama does.
    job.request.normalize = false;
    job.request.truncate = true;
    HEARTH_ASSIGN(auto prompt, read_string(body, "prompt"));
    if (prompt && !prompt->empty()) job.request.texts.push_back(*prompt);
    return job;
  }
  job.request.normalize = true;
  HEARTH_ASSIGN(auto truncate, read_bool(body, "truncate"));
  job.request.truncate = truncate.value_or(true);
  auto input = body.find("input");
  if (input != body.end() && !input->is_null()) {
    if (input->is_string()) {
      job.request.texts.push_back(input->get<std::string>());
    } else if (input->is_array()) {
      for (const auto& s : *input) {
        if (!s.is_string()) return field_type_error("", "input", "a string or an array of strings", *input);
        job.request.texts.push_back(s.get<std::string>());
      }
    } else {
      return field_type_error("", "input", "a string or an array of strings", *input);
    }
  }
  for (const auto& t : job.request.texts) {
    if (t.empty()) return invalid("'input' must not contain empty strings");
  }
  if (job.request.texts.size() > 2048) return invalid("'input' has more than 2048 entries");
  HEARTH_ASSIGN(auto dimensions, read_integer(body, "dimensions"));
  if (dimensions) {
    HEARTH_TRY(check_range("dimensions", *dimensions, 1, 1 << 20));
    job.dimensions = static_cast<int32_t>(*dimensions);
  }
  return job;
}

}  // namespace hearth::api
