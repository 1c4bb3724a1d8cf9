// ollama's model parameters (PARAMETER in a Modelfile, `/set parameter` in the REPL) with
// their JSON types, so a request carries {"num_ctx": 4096, "temperature": 0.7, "stop": [...]}
// as ollama's client sends it and a misspelt name or a bad number is refused at the prompt.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace hearth::cli {

// Sets (or, for list parameters such as stop, appends) `name` in the `params` object from its
// text form. Errors name the parameter and say what it takes.
Status add_model_parameter(nlohmann::json& params, const std::string& name, const std::string& value);
// True for parameters that may be given several times (stop).
bool model_parameter_is_list(const std::string& name);

}  // namespace hearth::cli
