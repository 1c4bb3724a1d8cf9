// The chat template used when a model file has none: ChatML (<|im_start|>role ... <|im_end|>),
// the common default of serving engines, so chat routes work with any model.
#pragma once

namespace hearth::engine {

inline constexpr const char* kChatMlTemplate =
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
    "{%- if message['content'] is string -%}{{- message['content'] -}}{%- endif -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}";

}  // namespace hearth::engine
