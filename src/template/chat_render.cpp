// ChatTemplate: renders chat requests the way OpenAI-compatible local servers (llama.cpp's
// server, the reference for our goldens) present them to a model's template. Many real templates
// lack a system role or tool support; rather than fail, the server probes the template once
// (capabilities) and rewrites the conversation into a form the template can express
// ("polyfills"): system text folded into the first user turn, tool definitions and a rendered
// example call added to the system prompt, tool calls and tool results written as JSON text.
#include "template/chat_render.h"

#include "chat_output/chat_output_parser.h"
#include "template/jinja_value.h"

#include <regex>

namespace hearth {
namespace {

using Json = nlohmann::ordered_json;

bool contains(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Templates with a tool-call family of their own (chat_output detects it from the markers the
// template prints, one list for both) write calls in their own syntax; any other template
// receiving tools gets the generic JSON tool-call instructions.
bool has_native_tool_format(const std::string& source) {
  const ChatOutputFamily family = detect_chat_output_family(source);
  return family != ChatOutputFamily::kPlain && family != ChatOutputFamily::kGeneric;
}

Json add_system_text(const Json& messages, const std::string& text) {
  Json out = messages;
  if (!out.empty() && out[0].value("role", "") == "system" && out[0].contains("content") && out[0]["content"].is_string()) {
    out[0] = Json{{"role", "system"}, {"content", out[0]["content"].get<std::string>() + "\n\n" + text}};
  } else {
    out.insert(out.begin(), Json{{"role", "system"}, {"content", text}});
  }
  return out;
}

// `options.now` (or the local time now) formatted with strftime's `format`.
std::string format_date(const jinja::RenderOptions& options, const char* format) {
  std::tm now = options.now ? *options.now : std::tm{};
  if (!options.now) {
    std::time_t t = std::time(nullptr);
    localtime_r(&t, &now);
  }
  char text[128];
  size_t n = std::strftime(text, sizeof(text), format, &now);
  return std::string(text, n);
}

std::tm epoch_date() {
  std::tm tm{};
  tm.tm_year = 70;
  tm.tm_mday = 1;
  tm.tm_wday = 4;
  return tm;
}

}  // namespace

struct ChatTemplate::Inputs {
  Json messages = Json::array();
  Json tools;  // null when absent
  bool add_generation_prompt = true;
  Json extra_context;  // object or null
};

Result<std::string> ChatTemplate::render_raw(const Inputs& in, const jinja::RenderOptions& options) const {
  Json context = Json::object();
  context["messages"] = in.messages;
  context["add_generation_prompt"] = in.add_generation_prompt;
  context["bos_token"] = context_options_.bos_token;
  context["eos_token"] = context_options_.eos_token;
  if (!in.tools.is_null()) context["tools"] = in.tools;
  if (in.extra_context.is_object()) {
    for (auto it = in.extra_context.begin(); it != in.extra_context.end(); ++it) {
      if (!it.value().is_null()) context[it.key()] = it.value();
    }
  }
  return template_.render(context, options);
}

std::string ChatTemplate::probe(const Json& messages, const Json& tools) const {
  Inputs in;
  in.messages = messages;
  in.tools = tools;
  in.add_generation_prompt = false;
  jinja::RenderOptions options;
  options.now = epoch_date();
  options.max_steps = 200'000;
  auto r = render_raw(in, options);
  return r.ok() ? *r : std::string();
}

void ChatTemplate::detect_capabilities() {
  const std::string user_needle = "<User Needle>";
  const std::string sys_needle = "<System Needle>";
  const Json user_msg = {{"role", "user"}, {"content", user_needle}};
  caps_.supports_system_role =
      contains(probe(Json::array({{{"role", "system"}, {"content", sys_needle}}, user_msg}), nullptr), sys_needle);
  Json probe_tools = Json::array({Json{
      {"name", "some_tool"},
      {"type", "function"},
      {"function",
       {{"name", "some_tool"},
        {"description", "Some tool."},
        {"parameters",
         {{"type", "object"},
          {"properties", {{"arg", {{"type", "string"}, {"description", "Some argument."}}}}},
          {"required", Json::array({"arg"})}}}}}}});
  caps_.supports_tools = contains(probe(Json::array({user_msg}), probe_tools), "some_tool");

  auto with_content = [&](const Json& content) {
    Json assistant = {{"role", "assistant"}, {"content", content}};
    return probe(Json::array({user_msg, assistant, user_msg, assistant}), nullptr);
  };
  caps_.requires_non_null_content = contains(with_content(""), user_needle) && !contains(with_content(nullptr), user_needle);
  // Probe calls carry null content, as the reference server's probes do: a template that cannot
  // render a content-less tool call is treated as not supporting tool calls.
  Json empty_content = nullptr;
  auto tool_calls_msg = [&](const Json& calls) {
    return Json{{"role", "assistant"}, {"content", empty_content}, {"tool_calls", calls}};
  };
  auto tool_call = [](const std::string& name, const Json& args) {
    return Json{{"id", "call_1___"}, {"type", "function"}, {"function", {{"arguments", args}, {"name", name}}}};
  };
  auto tool_response = [](const std::string& id, const std::string& name, const std::string& content) {
    return Json{{"role", "tool"}, {"name", name}, {"content", content}, {"tool_call_id", id}};
  };
  // As the reference probes: the call alone (no tool result after it), arguments as a JSON
  // string, then as an object.
  const Json args_obj = {{"argument_needle", "print('Hello, World!')"}};
  auto renders_args = [&](const std::string& out) {
    return contains(out, "\"argument_needle\":") || contains(out, "'argument_needle':");
  };
  bool str_args = renders_args(probe(Json::array({user_msg, tool_calls_msg(Json::array({tool_call("ipython", args_obj.dump())}))}), nullptr));
  bool obj_args = renders_args(probe(Json::array({user_msg, tool_calls_msg(Json::array({tool_call("ipython", args_obj)}))}), nullptr));
  if (!str_args && !obj_args && contains(source_, "<|channel|>")) {
    // gpt-oss's template tests `"..." in message.content`, an error on none: its calls render
    // with empty text content (the later probes use it too).
    empty_content = "";
    str_args = renders_args(probe(Json::array({user_msg, tool_calls_msg(Json::array({tool_call("ipython", args_obj.dump())}))}), nullptr));
    obj_args = renders_args(probe(Json::array({user_msg, tool_calls_msg(Json::array({tool_call("ipython", args_obj)}))}), nullptr));
    caps_.tool_calls_need_text_content = str_args || obj_args;
  }
  caps_.supports_tool_calls = str_args || obj_args;
  caps_.requires_object_arguments = !str_args && obj_args;
  if (caps_.supports_tool_calls) {
    Json args = caps_.requires_object_arguments ? args_obj : Json(args_obj.dump());
    Json tc1 = tool_call("test_tool1", args);
    std::string parallel = probe(Json::array({user_msg, tool_calls_msg(Json::array({tc1, tool_call("test_tool2", args)}))}), nullptr);
    caps_.supports_parallel_tool_calls = contains(parallel, "test_tool1") && contains(parallel, "test_tool2");
    std::string out = probe(Json::array({user_msg, tool_calls_msg(Json::array({tc1})),
                                         tool_response("call_911_", "test_tool1", "Some response!")}), nullptr);
    caps_.supports_tool_responses = contains(out, "Some response!");
  }
  if (!caps_.supports_tools) infer_tool_call_example(empty_content);
}

// Renders a dummy tool call and keeps the text that differs from the bare prompt, to show the
// model (through the polyfilled system prompt) what a call looks like in its own format.
void ChatTemplate::infer_tool_call_example(const Json& empty_content) {
  const Json user = {{"role", "user"}, {"content", "Hey"}};
  const Json args = {{"arg1", "some_value"}};
  const Json call_msg = {
      {"role", "assistant"},
      {"content", empty_content},
      {"tool_calls", Json::array({Json{{"id", "call_1___"},
                                       {"type", "function"},
                                       {"function", {{"name", "tool_name"},
                                                     {"arguments", caps_.requires_object_arguments
                                                                       ? args
                                                                       : Json(jinja::python_json_dumps(jinja::Value::from_json(args), -1, 0))}}}}})}};
  jinja::RenderOptions options;
  options.max_steps = 200'000;
  Inputs prefix_in;
  prefix_in.messages = Json::array({user});
  prefix_in.add_generation_prompt = true;
  Inputs full_in;
  full_in.messages = Json::array({user, call_msg});
  full_in.add_generation_prompt = false;
  auto prefix_r = apply(prefix_in, options);
  auto full_r = apply(full_in, options);
  if (!prefix_r.ok() || !full_r.ok()) return;
  const std::string& prefix = *prefix_r;
  std::string full = *full_r;
  const std::string& eos = context_options_.eos_token;
  size_t eos_pos = full.rfind(eos);
  if (eos_pos != std::string::npos && !eos.empty() &&
      ((prefix.size() >= eos.size() && eos_pos == prefix.size() - eos.size()) ||
       (!full.empty() && full.back() == '\n' && full.size() >= eos.size() + 1 && eos_pos == full.size() - eos.size() - 1))) {
    full = full.substr(0, eos_pos);
  }
  size_t common = 0;
  for (size_t i = 0; i < prefix.size() && i < full.size(); ++i) {
    if (prefix[i] != full[i]) break;
    if (prefix[i] == '<') continue;  // keep a tag's '<' with the differing part
    common = i + 1;
  }
  std::string example = full.substr(common);
  if (contains(example, "tool_name") || contains(example, "some_value")) tool_call_example_ = example;
}

Result<std::string> ChatTemplate::apply(const Inputs& in, const jinja::RenderOptions& options) const {
  bool has_tools = in.tools.is_array() && !in.tools.empty();
  bool has_tool_calls = false, has_tool_responses = false;
  for (const auto& m : in.messages) {
    if (m.contains("tool_calls") && !m["tool_calls"].is_null()) has_tool_calls = true;
    if (m.value("role", "") == "tool") has_tool_responses = true;
  }
  bool fill_system = !caps_.supports_system_role;
  bool fill_tools = has_tools && !caps_.supports_tools;
  bool fill_tool_calls = has_tool_calls && !caps_.supports_tool_calls;
  bool fill_tool_responses = has_tool_responses && !caps_.supports_tool_responses;
  bool fill_object_arguments = has_tool_calls && caps_.requires_object_arguments;
  if (!(fill_system || fill_tools || fill_tool_calls || fill_tool_responses || fill_object_arguments)) {
    return render_raw(in, options);
  }

  Json messages = in.messages;
  if (fill_tools) {
    std::string text = "You can call any of the following tools to satisfy the user's requests: " + in.tools.dump(2);
    if (!tool_call_example_.empty()) text += "\n\nExample tool call syntax:\n\n" + tool_call_example_ + "\n\n";
    messages = add_system_text(messages, text);
  }
  Json adjusted = Json::array();
  std::string pending_system;
  auto flush_system = [&]() {
    if (pending_system.empty()) return;
    adjusted.push_back(Json{{"role", "user"}, {"content", pending_system}});
    pending_system.clear();
  };
  for (Json message : messages) {
    std::string role = message.value("role", "");
    if ((fill_tool_calls || caps_.requires_object_arguments) && message.contains("tool_calls") &&
        message["tool_calls"].is_array()) {
      for (auto& call : message["tool_calls"]) {
        if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) continue;
        Json& fn = call["function"];
        if (fn.contains("arguments") && fn["arguments"].is_string()) {
          Json parsed = Json::parse(fn["arguments"].get<std::string>(), nullptr, false);
          if (!parsed.is_discarded()) fn["arguments"] = std::move(parsed);
        }
      }
    }
    if (fill_tool_calls && message.contains("tool_calls") && message["tool_calls"].is_array()) {
      Json calls = Json::array();
      for (const auto& call : message["tool_calls"]) {
        if (!call.is_object() || call.value("type", "function") != "function" || !call.contains("function")) continue;
        const Json& fn = call["function"];
        Json tc = {{"name", fn.value("name", Json())}, {"arguments", fn.value("arguments", Json())}};
        if (call.contains("id")) tc["id"] = call["id"];
        calls.push_back(tc);
      }
      Json obj = {{"tool_calls", calls}};
      if (message.contains("content") && !message["content"].is_null() && !message["content"].empty()) obj["content"] = message["content"];
      message["content"] = obj.dump(2);
      message.erase("tool_calls");
    }
    if (fill_tool_responses && role == "tool") {
      message["role"] = "user";
      Json obj = {{"tool_response", Json::object()}};
      if (message.contains("name")) obj["tool_response"]["tool"] = message["name"];
      obj["tool_response"]["content"] = message.value("content", Json());
      if (message.contains("tool_call_id")) obj["tool_response"]["tool_call_id"] = message["tool_call_id"];
      message["content"] = obj.dump(2);
      message.erase("name");
    }
    if (fill_system && message.contains("content") && message["content"].is_string()) {
      std::string content = message["content"].get<std::string>();
      if (role == "system") {
        if (!pending_system.empty()) pending_system += "\n";
        pending_system += content;
        continue;
      }
      if (role == "user") {
        if (!pending_system.empty()) {
          message["content"] = pending_system + (content.empty() ? "" : "\n" + content);
          pending_system.clear();
        }
      } else {
        flush_system();
      }
    }
    adjusted.push_back(std::move(message));
  }
  flush_system();
  Inputs filled = in;
  filled.messages = std::move(adjusted);
  return render_raw(filled, options);
}

Result<ChatTemplate> ChatTemplate::create(const std::string& source, std::string bos_token, std::string eos_token,
                                          std::string name) {
  HEARTH_ASSIGN(jinja::Template parsed, jinja::Template::parse(source, std::move(name)));
  ChatTemplate t;
  t.source_ = source;
  t.template_ = std::move(parsed);
  t.context_options_.bos_token = std::move(bos_token);
  t.context_options_.eos_token = std::move(eos_token);
  t.detect_capabilities();
  return t;
}

Result<std::string> ChatTemplate::render(const Json& request, const jinja::RenderOptions& options) const {
  // Arguments stay the client's JSON text for templates that print them as text; templates that
  // index into them (or get calls polyfilled as JSON) see objects.
  ChatContextOptions context_options = context_options_;
  context_options.parse_tool_arguments = caps_.requires_object_arguments || !caps_.supports_tool_calls;
  HEARTH_ASSIGN(Json context, build_chat_context(request, context_options));
  Inputs in;
  in.messages = context["messages"];
  // An assistant turn that only calls tools has no content (null), whatever the client sent.
  for (auto& m : in.messages) {
    if (caps_.tool_calls_need_text_content) {
      if (m.contains("tool_calls") && (!m.contains("content") || m["content"].is_null())) m["content"] = "";
      continue;
    }
    if (m.contains("tool_calls") && m.contains("content") && m["content"].is_string() && m["content"].get<std::string>().empty()) {
      m["content"] = nullptr;
    }
  }
  in.add_generation_prompt = context["add_generation_prompt"].get<bool>();
  if (context.contains("tools")) in.tools = context["tools"];
  bool has_tools = in.tools.is_array() && !in.tools.empty();
  if (!has_tools) in.tools = nullptr;

  // Prefill: a conversation ending with an assistant message is continued from its text. The
  // turns before it are rendered up to the assistant's opening (a generation prompt) and the
  // text is appended, so the template never closes that turn (as the reference server does).
  std::string prefill;
  bool is_prefill = !in.messages.empty() && in.messages.back().value("role", "") == "assistant";
  if (is_prefill) {
    const Json& last = in.messages.back();
    if (last.contains("tool_calls") && last["tool_calls"].is_array() && !last["tool_calls"].empty()) {
      return make_error(ErrorKind::kInvalidArgument, "the last message is an assistant message with tool calls; send the tool results after it");
    }
    if (last.contains("content") && last["content"].is_string()) prefill = last["content"].get<std::string>();
    in.messages.erase(in.messages.size() - 1);
    if (!in.messages.empty() && in.messages.back().value("role", "") == "assistant") {
      return make_error(ErrorKind::kInvalidArgument, "a conversation can end with at most one assistant message (the text to continue)");
    }
    in.add_generation_prompt = true;
  }

  bool enable_thinking = true;
  if (request.contains("enable_thinking")) {
    if (!request["enable_thinking"].is_boolean()) return make_error(ErrorKind::kInvalidArgument, "'enable_thinking' must be true or false");
    enable_thinking = request["enable_thinking"].get<bool>();
  }
  bool is_llama3 = contains(source_, "<|start_header_id|>ipython<|end_header_id|>");
  bool is_deepseek_r1 = contains(source_, "<｜tool▁calls▁begin｜>");
  if (contains(source_, "<tool_call>")) {
    // Hermes 2/3, Qwen 2.5/3: the reference passes the thinking switch (Qwen3 reads it).
    in.extra_context = Json{{"enable_thinking", enable_thinking}};
  }
  if (detect_chat_output_family(source_) == ChatOutputFamily::kGranite) {
    // Granite 3.x: the reference passes the thinking switch as `thinking`.
    in.extra_context = Json{{"thinking", enable_thinking}};
  }
  if (is_llama3) {
    // Llama 3.x: today's date and tool definitions in the system turn, as its handler expects.
    in.extra_context = Json{{"date_string", format_date(options, "%d %b %Y")}, {"tools_in_user_message", false}};
  } else if (contains(source_, " functools[")) {
    // FireFunction v2 reads its tools as JSON text in `functions`, and the time in `datetime`.
    in.extra_context = Json{{"datetime", format_date(options, "%b %d %Y %H:%M:%S GMT")},
                            {"functions", has_tools ? in.tools.dump(2) : std::string()}};
    in.tools = nullptr;
  } else if (has_tools && !has_native_tool_format(source_)) {
    in.messages = add_system_text(in.messages,
                                  "Respond in JSON format, either with `tool_call` (a request to call tools) or with "
                                  "`response` reply to the user's request");
  }
  // A thinking level (ollama's think "low"/"medium"/"high", OpenAI's reasoning_effort) reaches
  // a template that reads one (gpt-oss's `reasoning_effort`).
  if (request.contains("reasoning_effort") && request["reasoning_effort"].is_string() && contains(source_, "reasoning_effort")) {
    if (!in.extra_context.is_object()) in.extra_context = Json::object();
    in.extra_context["reasoning_effort"] = request["reasoning_effort"];
  }
  HEARTH_ASSIGN(std::string prompt, apply(in, options));
  if (is_deepseek_r1 && contains(source_, "{% if ns.is_tool %}{{'<｜tool▁outputs▁end｜>'}}")) {
    // DeepSeek R1's shipped template leaves the turn open after tool results; close it.
    if (ends_with(prompt, "<｜tool▁outputs▁end｜>")) {
      prompt += "<｜end▁of▁sentence｜>";
      if (in.add_generation_prompt) prompt += "<｜Assistant｜>";
    }
    static const std::regex kDanglingCall("(<｜tool▁call▁end｜>)[\\s\\r\\n]*(<｜tool▁outputs▁begin｜>|<｜User｜>)");
    prompt = std::regex_replace(prompt, kDanglingCall, "$1<｜tool▁calls▁end｜><｜end▁of▁sentence｜>$2");
  }
  // The tokenizer adds BOS (and the stop logic owns EOS) itself, so a template that writes them
  // at the very edges would double them: drop a leading bos_token and a trailing eos_token.
  const std::string& bos = context_options_.bos_token;
  const std::string& eos = context_options_.eos_token;
  if (!bos.empty() && prompt.compare(0, bos.size(), bos) == 0) prompt.erase(0, bos.size());
  if (!eos.empty() && ends_with(prompt, eos)) prompt.erase(prompt.size() - eos.size());
  // Thinking off: a template that opens <think> for the reply gets it closed at once, as the
  // reference does for DeepSeek R1 and Qwen-style templates.
  if (!enable_thinking && prefill.empty() && ends_with(prompt, "<think>\n")) prompt += "</think>";
  return prompt + prefill;
}

}  // namespace hearth
