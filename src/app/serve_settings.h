// What `hearth serve` and `hearth runner` share: serve's settings table (a runner takes the
// same model and serving options, forwarded by the router), the context plan with its memory
// check, and the chat template choice. Defined in serve_command.cpp.
#pragma once

#include <string>
#include <vector>

#include "engine/inference_context.h"
#include "util/settings.h"

namespace hearth::app {

std::vector<SettingSpec> serve_settings();
// The context plan (o.n_ctx) and, unless --no-memory-check, the check that weights + KV + buffers
// fit in the available memory (kOutOfRange naming both numbers).
Status plan_and_check_memory(const Settings& s, const std::string& path, int32_t n_slots, engine::ContextOptions& o);
// The template text to use instead of the model's ("" for its own).
Result<std::string> chat_template_from(const Settings& s);

}  // namespace hearth::app
