// Text for `hearth show`, `/show info`, `hearth list` and `hearth ps`, laid out as ollama's
// CLI lays them out (sections with indented two-column tables; aligned columns with a header).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace hearth::cli {

// ollama's default `show`: Model (architecture, parameters, context length, embedding length,
// quantization), Capabilities, Parameters, System, License (the first lines), from an
// /api/show answer. Sections without content are left out.
std::string format_show_summary(const nlohmann::json& show);
// /api/show's "parameters" text ("name value" lines) as an aligned two-column table.
std::string format_parameter_lines(const std::string& parameters, const std::string& indent);
// `hearth list`: NAME, ID (12 digest digits), SIZE, MODIFIED; `now` is Unix seconds.
std::string format_model_list(const nlohmann::json& tags, double now);
// `hearth ps`: NAME, ID, SIZE, PROCESSOR, CONTEXT, UNTIL.
std::string format_running_list(const nlohmann::json& ps, double now);

}  // namespace hearth::cli
