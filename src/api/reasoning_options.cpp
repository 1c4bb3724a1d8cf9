// The thinking switches of every dialect (see reasoning_options.h).
#include "api/reasoning_options.h"

namespace hearth::api {

Status put_reasoning_effort(const std::optional<std::string>& effort, std::string_view field, Json& chat) {
  if (!effort) return ok_status();
  if (effort->empty()) return make_error(ErrorKind::kInvalidArgument, "'" + std::string(field) + "' must not be empty");
  chat["enable_thinking"] = *effort != "none";
  if (*effort != "none") chat["reasoning_effort"] = *effort;
  return ok_status();
}

Status put_thinking_budget(const Json& body, std::string_view key, Json& chat, std::string_view where) {
  HEARTH_ASSIGN(auto budget, read_integer(body, key, where));
  if (!budget) return ok_status();
  HEARTH_TRY(check_range(std::string(where) + std::string(key), *budget, 0, 1 << 30));
  chat["thinking_budget"] = *budget;
  return ok_status();
}

Status put_ollama_think(const Json& body, Json& chat) {
  auto think = body.find("think");
  if (think == body.end() || think->is_null()) return ok_status();
  if (think->is_boolean()) {
    chat["enable_thinking"] = think->get<bool>();
    return ok_status();
  }
  const std::string level = think->is_string() ? think->get<std::string>() : "";
  if (level != "low" && level != "medium" && level != "high") {
    return make_error(ErrorKind::kInvalidArgument,
                      "'think' must be true, false, \"low\", \"medium\" or \"high\"; got " + think->dump());
  }
  chat["enable_thinking"] = true;
  chat["reasoning_effort"] = level;
  return ok_status();
}

}  // namespace hearth::api
