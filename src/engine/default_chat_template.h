// Chat templates Hearth carries itself: the plain fallback used when a model file has no chat
// template (or one that does not parse), and the built-in templates `--chat-template NAME`
// picks (llama-server's names). A base model gets the plain transcript, not ChatML, since its
// vocabulary has no <|im_start|> and ChatML's markers only confuse it (docs/decisions.md).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hearth::engine {

inline constexpr const char* kChatMlTemplate =
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
    "{%- if message['content'] is string -%}{{- message['content'] -}}{%- endif -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}";

// "System: ...\nUser: ...\nAssistant: ...\n" and, to ask for a reply, a final "Assistant:".
inline constexpr const char* kPlainChatTemplate =
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'system' -%}{{- 'System: ' -}}"
    "{%- elif message['role'] == 'user' -%}{{- 'User: ' -}}"
    "{%- elif message['role'] == 'assistant' -%}{{- 'Assistant: ' -}}"
    "{%- else -%}{{- message['role'] + ': ' -}}{%- endif -%}"
    "{%- if message['content'] is string -%}{{- message['content'] -}}{%- endif -%}"
    "{{- '\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- 'Assistant:' -}}{%- endif -%}";

inline constexpr const char* kLlama3Template =
    "{{- bos_token -}}"
    "{%- for message in messages -%}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' -}}"
    "{%- if message['content'] is string -%}{{- message['content'] -}}{%- endif -%}"
    "{{- '<|eot_id|>' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}{%- endif -%}";

// The templates `--chat-template NAME` knows, by name.
inline const std::vector<std::pair<std::string, const char*>>& builtin_chat_templates() {
  static const std::vector<std::pair<std::string, const char*>> kTemplates = {
      {"chatml", kChatMlTemplate}, {"llama3", kLlama3Template}, {"plain", kPlainChatTemplate}};
  return kTemplates;
}

inline std::optional<std::string> builtin_chat_template(const std::string& name) {
  for (const auto& [n, text] : builtin_chat_templates()) {
    if (n == name) return std::string(text);
  }
  return std::nullopt;
}

}  // namespace hearth::engine
