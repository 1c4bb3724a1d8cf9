// Describes a loaded model for the server's listing routes (protocol::ModelInfo): names, size,
// quantization, parameter count, trained context, chat template (or the ChatML fallback),
// fill-in-the-middle tokens, and the GGUF metadata /api/show reports. Lives in app/ because it
// reads GGUF metadata, which the server layer does not touch.
#pragma once

#include <string>

#include "protocol/model_info.h"
#include "engine/inference_context.h"

namespace hearth::app {

// `alias`: the name to answer to ("" for the file stem); `chat_template`: a template source
// that replaces the file's own ("" to use the file's).
protocol::ModelInfo build_model_info(const engine::InferenceContext& ctx, const std::string& path, const std::string& alias,
                                const std::string& chat_template);

}  // namespace hearth::app
