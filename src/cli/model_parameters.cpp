// Typed model parameters (see model_parameters.h).
#include "cli/model_parameters.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>

namespace hearth::cli {
namespace {

enum class ParamType { kInt, kFloat, kBool, kStringList };

// ollama's api.Options and api.Runner fields (the names its Modelfile PARAMETER accepts).
const std::map<std::string, ParamType>& parameter_types() {
  static const std::map<std::string, ParamType> kTypes = {
      {"num_ctx", ParamType::kInt},          {"num_batch", ParamType::kInt},        {"num_gpu", ParamType::kInt},
      {"main_gpu", ParamType::kInt},         {"num_thread", ParamType::kInt},       {"num_keep", ParamType::kInt},
      {"seed", ParamType::kInt},             {"num_predict", ParamType::kInt},      {"top_k", ParamType::kInt},
      {"repeat_last_n", ParamType::kInt},    {"mirostat", ParamType::kInt},         {"top_p", ParamType::kFloat},
      {"min_p", ParamType::kFloat},          {"typical_p", ParamType::kFloat},      {"temperature", ParamType::kFloat},
      {"repeat_penalty", ParamType::kFloat}, {"presence_penalty", ParamType::kFloat}, {"frequency_penalty", ParamType::kFloat},
      {"mirostat_tau", ParamType::kFloat},   {"mirostat_eta", ParamType::kFloat},   {"tfs_z", ParamType::kFloat},
      {"use_mmap", ParamType::kBool},        {"use_mlock", ParamType::kBool},       {"numa", ParamType::kBool},
      {"low_vram", ParamType::kBool},        {"f16_kv", ParamType::kBool},          {"vocab_only", ParamType::kBool},
      {"penalize_newline", ParamType::kBool}, {"stop", ParamType::kStringList},
  };
  return kTypes;
}

Error bad_value(const std::string& name, const std::string& value, const char* what) {
  return make_error(ErrorKind::kInvalidArgument, "parameter '" + name + "' takes " + what + ", not '" + value + "'");
}

}  // namespace

bool model_parameter_is_list(const std::string& name) {
  auto it = parameter_types().find(name);
  return it != parameter_types().end() && it->second == ParamType::kStringList;
}

Status add_model_parameter(nlohmann::json& params, const std::string& name, const std::string& value) {
  auto it = parameter_types().find(name);
  if (it == parameter_types().end()) {
    return make_error(ErrorKind::kInvalidArgument, "unknown parameter '" + name + "' (ollama's parameters: num_ctx, temperature, top_k, top_p, min_p, seed, num_predict, stop, repeat_penalty, ...)");
  }
  if (!params.is_object()) params = nlohmann::json::object();
  switch (it->second) {
    case ParamType::kInt: {
      char* end = nullptr;
      errno = 0;
      long long v = std::strtoll(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || errno == ERANGE) return bad_value(name, value, "an integer");
      params[name] = v;
      break;
    }
    case ParamType::kFloat: {
      char* end = nullptr;
      double v = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !std::isfinite(v)) return bad_value(name, value, "a number");
      params[name] = v;
      break;
    }
    case ParamType::kBool: {
      static const std::map<std::string, bool> kWords = {{"1", true},     {"t", true},     {"T", true},     {"true", true},
                                                         {"TRUE", true},  {"True", true},  {"0", false},    {"f", false},
                                                         {"F", false},    {"false", false}, {"FALSE", false}, {"False", false}};
      auto w = kWords.find(value);
      if (w == kWords.end()) return bad_value(name, value, "true or false");
      params[name] = w->second;
      break;
    }
    case ParamType::kStringList:
      if (!params.contains(name) || !params[name].is_array()) params[name] = nlohmann::json::array();
      params[name].push_back(value);
      break;
  }
  return ok_status();
}

}  // namespace hearth::cli
