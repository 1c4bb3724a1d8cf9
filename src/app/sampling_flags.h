// The sampling and context flags shared by the commands that run a model (generate, embed,
// perplexity), declared once so their names, defaults and help agree.
#pragma once

#include <vector>

#include "engine/inference_context.h"
#include "sampler/sampler_params.h"
#include "util/settings.h"

namespace hearth::app {

std::vector<SettingSpec> model_run_settings();    // -m, -c, -t, --kv-type
std::vector<SettingSpec> sampling_settings();     // --temp, --top-k, ...
Result<engine::ContextOptions> context_options_from(const Settings& s);
Result<sampler::SamplerParams> sampler_params_from(const Settings& s);

}  // namespace hearth::app
