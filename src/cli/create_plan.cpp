// Parsed Modelfile → /api/create request (see create_plan.h).
#include "cli/create_plan.h"

#include <sys/stat.h>

#include <cstdlib>

namespace hearth::cli {
namespace {

using Json = nlohmann::json;

Error line_error(int line, const std::string& message) {
  return make_error(ErrorKind::kInvalidArgument, "Modelfile line " + std::to_string(line) + ": " + message);
}

std::string expand_path(const std::string& path, const std::string& base_dir) {
  if (path.rfind("~/", 0) == 0) {
    const char* home = std::getenv("HOME");
    return std::string(home ? home : "") + path.substr(1);
  }
  if (!path.empty() && path[0] == '/') return path;
  return (base_dir.empty() ? "." : base_dir) + "/" + path;
}

bool looks_like_path(const std::string& s) {
  return s.rfind("./", 0) == 0 || s.rfind("../", 0) == 0 || s.rfind("/", 0) == 0 || s.rfind("~/", 0) == 0 ||
         (s.size() > 5 && s.compare(s.size() - 5, 5, ".gguf") == 0);
}

// A local file named by FROM or ADAPTER on `line`: its path, "" when `value` names no file (a
// model or a blob digest).
Result<std::string> local_file(const std::string& value, int line, const std::string& base_dir) {
  const std::string path = expand_path(value, base_dir);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      return line_error(line, "'" + value + "' is a folder; Hearth creates models from GGUF files (convert safetensors to GGUF first)");
    }
    return path;
  }
  if (looks_like_path(value)) return line_error(line, "no such file '" + value + "' (read as " + path + ")");
  return std::string();
}

}  // namespace

std::string upload_file_key(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

Result<CreatePlan> plan_create(const store::Modelfile& m, const std::string& base_dir, const std::string& name,
                               const std::string& quantize) {
  CreatePlan plan;
  Json& r = plan.request;
  r = Json{{"model", name}, {"stream", true}};
  if (!quantize.empty()) r["quantize"] = quantize;
  HEARTH_ASSIGN(std::string from_path, local_file(m.from, m.from_line, base_dir));
  if (from_path.empty()) {
    r["from"] = m.from;
  } else {
    plan.model_file = from_path;
  }
  for (size_t i = 0; i < m.adapters.size(); ++i) {
    const int line = i < m.adapter_lines.size() ? m.adapter_lines[i] : 0;
    HEARTH_ASSIGN(std::string path, local_file(m.adapters[i], line, base_dir));
    if (path.empty()) return line_error(line, "ADAPTER names no file: '" + m.adapters[i] + "'");
    plan.adapter_files.push_back(path);
  }
  if (!m.parameters.empty()) r["parameters"] = m.parameters;
  if (m.template_text) r["template"] = *m.template_text;
  if (m.system) r["system"] = *m.system;
  if (!m.messages.empty()) {
    r["messages"] = Json::array();
    for (const auto& msg : m.messages) r["messages"].push_back(Json{{"role", msg.role}, {"content", msg.content}});
  }
  if (m.licenses.size() == 1) r["license"] = m.licenses[0];
  if (m.licenses.size() > 1) r["license"] = m.licenses;
  if (!m.requires_version.empty()) r["requires"] = m.requires_version;
  return plan;
}

}  // namespace hearth::cli
