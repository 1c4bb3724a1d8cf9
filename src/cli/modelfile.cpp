// Modelfile → /api/create request (see modelfile.h).
#include "cli/modelfile.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>

#include "cli/model_parameters.h"

namespace hearth::cli {
namespace {

using Json = nlohmann::json;

Error line_error(int line, const std::string& message) {
  return make_error(ErrorKind::kInvalidArgument, "Modelfile line " + std::to_string(line) + ": " + message);
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (;;) {
    size_t nl = text.find('\n', start);
    std::string l = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    if (!l.empty() && l.back() == '\r') l.pop_back();
    lines.push_back(l);
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return lines;
}

// Reads a value that starts at `rest` on line `*i`: `"""..."""` (possibly over several lines,
// advancing *i), "..." with backslash escapes, or the raw text.
Result<std::string> read_value(const std::string& rest, const std::vector<std::string>& lines, size_t* i) {
  const int start_line = static_cast<int>(*i) + 1;
  if (rest.rfind("\"\"\"", 0) == 0) {
    std::string text = rest.substr(3);
    for (;;) {
      size_t close = text.find("\"\"\"");
      if (close != std::string::npos) {
        if (!trim(text.substr(close + 3)).empty()) return line_error(static_cast<int>(*i) + 1, "text after the closing \"\"\"");
        return text.substr(0, close);
      }
      if (*i + 1 >= lines.size()) return line_error(start_line, "the \"\"\" opened here is never closed");
      ++*i;
      text += "\n" + lines[*i];
    }
  }
  if (!rest.empty() && rest[0] == '"') {
    std::string out;
    for (size_t k = 1; k < rest.size(); ++k) {
      if (rest[k] == '\\' && k + 1 < rest.size()) {
        out += rest[++k];
      } else if (rest[k] == '"') {
        if (!trim(rest.substr(k + 1)).empty()) return line_error(start_line, "text after the closing quote");
        return out;
      } else {
        out += rest[k];
      }
    }
    return line_error(start_line, "unterminated quoted string");
  }
  return rest;
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

// A local file named by FROM or ADAPTER: its path, "" when `value` names no file (a model).
Result<std::string> local_file(const ModelfileCommand& c, const std::string& base_dir) {
  const std::string path = expand_path(c.value, base_dir);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      return line_error(c.line, "'" + c.value + "' is a folder; Hearth creates models from GGUF files (convert safetensors to GGUF first)");
    }
    return path;
  }
  if (looks_like_path(c.value)) return line_error(c.line, "no such file '" + c.value + "' (read as " + path + ")");
  return std::string();
}

}  // namespace

Result<std::vector<ModelfileCommand>> parse_modelfile(const std::string& text) {
  static const std::set<std::string> kCommands = {"from", "parameter", "template", "system", "message", "adapter", "license", "requires"};
  static const std::set<std::string> kRoles = {"system", "user", "assistant", "tool"};
  const std::vector<std::string> lines = split_lines(text);
  std::vector<ModelfileCommand> out;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string line = trim(lines[i]);
    if (line.empty() || line[0] == '#') continue;
    ModelfileCommand c;
    c.line = static_cast<int>(i) + 1;
    size_t word_end = line.find_first_of(" \t");
    c.name = line.substr(0, word_end);
    std::transform(c.name.begin(), c.name.end(), c.name.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (kCommands.count(c.name) == 0) {
      return line_error(c.line, "unknown command '" + line.substr(0, word_end) +
                                    "'; a Modelfile takes FROM, PARAMETER, TEMPLATE, SYSTEM, MESSAGE, ADAPTER, LICENSE and REQUIRES");
    }
    std::string rest = word_end == std::string::npos ? "" : trim(line.substr(word_end));
    if (c.name == "parameter" || c.name == "message") {
      size_t key_end = rest.find_first_of(" \t");
      c.key = rest.substr(0, key_end);
      rest = key_end == std::string::npos ? "" : trim(rest.substr(key_end));
      if (c.key.empty()) return line_error(c.line, c.name == "parameter" ? "PARAMETER needs a name and a value" : "MESSAGE needs a role and a text");
      if (c.name == "parameter") {
        std::transform(c.key.begin(), c.key.end(), c.key.begin(), [](unsigned char ch) { return std::tolower(ch); });
      } else if (kRoles.count(c.key) == 0) {
        return line_error(c.line, "MESSAGE role must be system, user, assistant or tool, not '" + c.key + "'");
      }
    }
    if (rest.empty()) return line_error(c.line, "no value after " + line.substr(0, word_end));
    auto value = read_value(rest, lines, &i);
    if (!value.ok()) return value.error();
    c.value = *value;
    out.push_back(std::move(c));
  }
  return out;
}

std::string upload_file_key(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

Result<CreatePlan> plan_create(const std::vector<ModelfileCommand>& commands, const std::string& base_dir,
                               const std::string& name, const std::string& quantize) {
  CreatePlan plan;
  Json& r = plan.request;
  r = Json{{"model", name}, {"stream", true}};
  if (!quantize.empty()) r["quantize"] = quantize;
  bool have_from = false;
  Json licenses = Json::array();
  for (const auto& c : commands) {
    if (c.name == "from") {
      if (have_from) return line_error(c.line, "a second FROM; a Modelfile has one");
      have_from = true;
      HEARTH_ASSIGN(std::string path, local_file(c, base_dir));
      if (path.empty()) {
        r["from"] = c.value;
      } else {
        plan.model_file = path;
      }
    } else if (c.name == "adapter") {
      HEARTH_ASSIGN(std::string path, local_file(c, base_dir));
      if (path.empty()) return line_error(c.line, "ADAPTER names no file: '" + c.value + "'");
      plan.adapter_files.push_back(path);
    } else if (c.name == "parameter") {
      Json params = r.value("parameters", Json::object());
      if (auto st = add_model_parameter(params, c.key, c.value); !st.ok()) return line_error(c.line, st.error().message);
      r["parameters"] = params;
    } else if (c.name == "message") {
      if (!r.contains("messages")) r["messages"] = Json::array();
      r["messages"].push_back(Json{{"role", c.key}, {"content", c.value}});
    } else if (c.name == "license") {
      licenses.push_back(c.value);
    } else {
      r[c.name] = c.value;  // template, system, requires
    }
  }
  if (!have_from) return make_error(ErrorKind::kInvalidArgument, "the Modelfile has no FROM line; it must name a model or a GGUF file");
  if (licenses.size() == 1) r["license"] = licenses[0];
  if (licenses.size() > 1) r["license"] = licenses;
  return plan;
}

}  // namespace hearth::cli
