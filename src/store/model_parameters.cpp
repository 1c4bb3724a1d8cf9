// The parameter table and value parsing (see model_parameters.h). Names and types follow
// ollama's api.Options and api.Runner (and the older options ollama still accepts); the bounds
// are the ones that make a value meaningful (a probability in [0, 1], a count >= 0).
#include "store/model_parameters.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace hearth::store {
namespace {

constexpr double kNoMax = std::numeric_limits<double>::infinity();
constexpr double kIntMax = 2147483647.0;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string names_list() {
  std::string out;
  for (const auto& p : parameter_specs()) out += (out.empty() ? "" : ", ") + std::string(p.name);
  return out;
}

Error bad_value(std::string_view name, std::string_view text, const std::string& expected) {
  return make_error(ErrorKind::kInvalidArgument, "parameter " + std::string(name) + ": '" + std::string(text.substr(0, 80)) +
                                                     "' is not " + expected);
}

std::string format_bound(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  std::string s = std::to_string(v);
  while (!s.empty() && s.back() == '0') s.pop_back();
  return s;
}

Status check_bounds(const ParameterSpec& p, double v, std::string_view text) {
  if (v < p.min || v > p.max) {
    std::string range = "at least " + format_bound(p.min);
    if (p.max < kIntMax) range = "between " + format_bound(p.min) + " and " + format_bound(p.max);
    return bad_value(p.name, text, range);
  }
  return ok_status();
}

}  // namespace

const std::vector<ParameterSpec>& parameter_specs() {
  static const std::vector<ParameterSpec> specs = {
      {"num_ctx", ParameterType::kInt, 1, kIntMax},
      {"num_batch", ParameterType::kInt, 1, kIntMax},
      {"num_gpu", ParameterType::kInt, -1, kIntMax},
      {"main_gpu", ParameterType::kInt, 0, kIntMax},
      {"num_thread", ParameterType::kInt, 0, kIntMax},
      {"use_mmap", ParameterType::kBool, 0, 1},
      {"use_mlock", ParameterType::kBool, 0, 1},
      {"numa", ParameterType::kBool, 0, 1},
      {"num_keep", ParameterType::kInt, -1, kIntMax},
      {"seed", ParameterType::kInt, -kIntMax - 1, kIntMax},
      {"num_predict", ParameterType::kInt, -2, kIntMax},
      {"top_k", ParameterType::kInt, 0, kIntMax},
      {"top_p", ParameterType::kFloat, 0, 1},
      {"min_p", ParameterType::kFloat, 0, 1},
      {"typical_p", ParameterType::kFloat, 0, 1},
      {"tfs_z", ParameterType::kFloat, 0, kNoMax},
      {"repeat_last_n", ParameterType::kInt, -1, kIntMax},
      {"temperature", ParameterType::kFloat, 0, kNoMax},
      {"repeat_penalty", ParameterType::kFloat, 0, kNoMax},
      {"presence_penalty", ParameterType::kFloat, -kNoMax, kNoMax},
      {"frequency_penalty", ParameterType::kFloat, -kNoMax, kNoMax},
      {"penalize_newline", ParameterType::kBool, 0, 1},
      {"mirostat", ParameterType::kInt, 0, 2},
      {"mirostat_tau", ParameterType::kFloat, 0, kNoMax},
      {"mirostat_eta", ParameterType::kFloat, 0, kNoMax},
      {"stop", ParameterType::kStringList, 0, 0},
  };
  return specs;
}

const ParameterSpec* find_parameter(std::string_view name) {
  for (const auto& p : parameter_specs()) {
    if (name == p.name) return &p;
  }
  return nullptr;
}

Result<nlohmann::json> parse_parameter_value(std::string_view name, std::string_view text) {
  const ParameterSpec* p = find_parameter(lower(name));
  if (p == nullptr) {
    return make_error(ErrorKind::kInvalidArgument, "unknown parameter '" + std::string(name.substr(0, 80)) + "' (known: " + names_list() + ")");
  }
  const std::string s(text);
  switch (p->type) {
    case ParameterType::kStringList:
      return nlohmann::json(s);
    case ParameterType::kBool: {
      const std::string v = lower(s);
      if (v == "true" || v == "1" || v == "t") return nlohmann::json(true);
      if (v == "false" || v == "0" || v == "f") return nlohmann::json(false);
      return bad_value(p->name, text, "a boolean (true or false)");
    }
    case ParameterType::kInt: {
      errno = 0;
      char* end = nullptr;
      const long long v = std::strtoll(s.c_str(), &end, 10);
      if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE) return bad_value(p->name, text, "an integer");
      HEARTH_TRY(check_bounds(*p, static_cast<double>(v), text));
      return nlohmann::json(v);
    }
    case ParameterType::kFloat: {
      errno = 0;
      char* end = nullptr;
      const double v = std::strtod(s.c_str(), &end);
      if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v)) return bad_value(p->name, text, "a number");
      HEARTH_TRY(check_bounds(*p, v, text));
      return nlohmann::json(v);
    }
  }
  return make_error(ErrorKind::kInternal, "parameter type");
}

Result<nlohmann::json> check_parameter_value(std::string_view name, const nlohmann::json& value) {
  const ParameterSpec* p = find_parameter(lower(name));
  if (p == nullptr) return parse_parameter_value(name, "");  // the unknown-name error
  if (value.is_string()) return parse_parameter_value(name, value.get<std::string>());
  const std::string shown = value.dump().substr(0, 80);
  switch (p->type) {
    case ParameterType::kStringList: {
      if (!value.is_array()) return bad_value(p->name, shown, "a string or a list of strings");
      for (const auto& v : value) {
        if (!v.is_string()) return bad_value(p->name, shown, "a string or a list of strings");
      }
      return value;
    }
    case ParameterType::kBool:
      if (!value.is_boolean()) return bad_value(p->name, shown, "a boolean (true or false)");
      return value;
    case ParameterType::kInt:
      if (!value.is_number_integer() && !(value.is_number_float() && value.get<double>() == std::floor(value.get<double>()))) {
        return bad_value(p->name, shown, "an integer");
      }
      HEARTH_TRY(check_bounds(*p, value.get<double>(), shown));
      return nlohmann::json(value.get<long long>());
    case ParameterType::kFloat:
      if (!value.is_number()) return bad_value(p->name, shown, "a number");
      HEARTH_TRY(check_bounds(*p, value.get<double>(), shown));
      return value;
  }
  return make_error(ErrorKind::kInternal, "parameter type");
}

void add_parameter(nlohmann::json& params, const std::string& name, const nlohmann::json& value) {
  const ParameterSpec* p = find_parameter(name);
  if (p != nullptr && p->type == ParameterType::kStringList) {
    nlohmann::json& list = params[name];
    if (!list.is_array()) list = nlohmann::json::array();
    if (value.is_array()) {
      for (const auto& v : value) list.push_back(v);
    } else {
      list.push_back(value);
    }
    return;
  }
  params[name] = value;
}

}  // namespace hearth::store
