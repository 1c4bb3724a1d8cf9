// What `hearth serve` and `hearth runner` share: serve's settings table (a runner takes the
// same model and serving options, forwarded by the router), the context plan with its memory
// check, and the chat template choice. Defined in serve_command.cpp.
#pragma once

#include <string>
#include <vector>

#include "engine/inference_context.h"
#include "engine/serving_engine.h"
#include "util/settings.h"

namespace hearth::app {

std::vector<SettingSpec> serve_settings();
// The context plan (o.n_ctx) and, unless --no-memory-check, the check that weights + KV + buffers
// fit in the available memory (kOutOfRange naming both numbers).
// per_request_ctx: the context one request may use (--ctx-size / slots, else --request-ctx or
// the model's training context at most 8192).
Status plan_and_check_memory(const Settings& s, const std::string& path, int32_t n_slots, engine::ContextOptions& o,
                             int32_t& per_request_ctx);
// --kv-unified: the slots share the KV pool; each request may use the whole --ctx-size when one
// is given, else its own per-request context.
void apply_kv_unified(const Settings& s, int32_t per_request_ctx, engine::ServingOptions& serving);
// --kv-idle-cache and --kv-busy-cache: the cached prefixes kept while idle and while busy
// (kInvalidArgument naming the flag on a bad size).
Status apply_kv_cache_caps(const Settings& s, engine::ServingOptions& serving);
// The template text to use instead of the model's ("" for its own).
Result<std::string> chat_template_from(const Settings& s);

}  // namespace hearth::app
