// Renders an OpenAI-style chat request through a model's chat template: builds the context
// (chat_context.h), renders it with the Jinja interpreter, and applies the conventions a serving
// engine needs on top (see ChatTemplate::render).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "template/chat_context.h"
#include "template/jinja_template.h"
#include "util/result.h"

namespace hearth {

class ChatTemplate {
 public:
  // Parses the template; `name` (usually the file name) prefixes error messages.
  static Result<ChatTemplate> create(const std::string& source, std::string bos_token, std::string eos_token,
                                     std::string name = "template");

  // Renders `request` (messages, optional tools, add_generation_prompt, optional
  // enable_thinking: false closes a <think> the template opens) to the prompt text.
  // Template features the conversation needs but the template lacks are filled in (see
  // chat_render.cpp); a leading bos_token and a trailing eos_token are removed because the
  // tokenizer and the stop logic add them.
  Result<std::string> render(const nlohmann::ordered_json& request, const jinja::RenderOptions& options = {}) const;

  // What probing the template found it can express natively.
  struct Capabilities {
    bool supports_system_role = false;
    bool supports_tools = false;
    bool supports_tool_calls = false;
    bool supports_tool_responses = false;
    bool supports_parallel_tool_calls = false;
    bool requires_object_arguments = false;
    bool tool_calls_need_text_content = false;  // calls render only with string content (gpt-oss)
    bool requires_non_null_content = false;
  };
  const Capabilities& capabilities() const { return caps_; }
  const std::string& source() const { return source_; }
  // How a tool call looks in this template's own format (empty when it has native tools).
  const std::string& tool_call_example() const { return tool_call_example_; }

 private:
  struct Inputs;
  Result<std::string> render_raw(const Inputs& in, const jinja::RenderOptions& options) const;
  Result<std::string> apply(const Inputs& in, const jinja::RenderOptions& options) const;
  std::string probe(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools) const;
  void detect_capabilities();
  void infer_tool_call_example(const nlohmann::ordered_json& empty_content);

  std::string source_;
  jinja::Template template_;
  ChatContextOptions context_options_;
  Capabilities caps_;
  std::string tool_call_example_;
};

}  // namespace hearth
