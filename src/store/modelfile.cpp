// Modelfile parsing and printing (see modelfile.h). A small hand-written scanner: it walks the
// text once, tracking line numbers, so that every error can say where it is.
#include "store/modelfile.h"

#include <algorithm>
#include <cctype>

#include "store/model_parameters.h"

namespace hearth::store {
namespace {

class Scanner {
 public:
  explicit Scanner(std::string_view text) : s_(text) {}

  bool at_end() const { return i_ >= s_.size(); }
  int line() const { return line_; }

  void skip_blank_on_line() {
    while (!at_end() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
  }
  bool at_line_end() const { return at_end() || s_[i_] == '\n'; }
  void next_line() {
    while (!at_end() && s_[i_] != '\n') ++i_;
    if (!at_end()) {
      ++i_;
      ++line_;
    }
  }
  // A run of non-blank characters.
  std::string word() {
    std::string out;
    while (!at_end() && !std::isspace(static_cast<unsigned char>(s_[i_]))) out += s_[i_++];
    return out;
  }
  // The rest of the line as a value: """...""" (any lines), "..." (this line) or the raw text.
  Result<std::string> value(const std::string& what) {
    skip_blank_on_line();
    const int start_line = line_;
    if (s_.substr(i_, 3) == "\"\"\"") {
      i_ += 3;
      const size_t close = s_.find("\"\"\"", i_);
      if (close == std::string_view::npos) return error(start_line, what + ": the \"\"\" string is never closed");
      std::string out(s_.substr(i_, close - i_));
      for (char c : out) line_ += c == '\n' ? 1 : 0;
      i_ = close + 3;
      skip_blank_on_line();
      if (!at_line_end()) return error(line_, what + ": unexpected text after the closing \"\"\"");
      return out;
    }
    if (!at_end() && s_[i_] == '"') {
      ++i_;
      std::string out;
      while (true) {
        if (at_line_end()) return error(start_line, what + ": the quoted string is never closed");
        char c = s_[i_++];
        if (c == '"') break;
        if (c == '\\' && !at_line_end() && (s_[i_] == '"' || s_[i_] == '\\')) c = s_[i_++];
        out += c;
      }
      skip_blank_on_line();
      if (!at_line_end()) return error(line_, what + ": unexpected text after the closing quote");
      return out;
    }
    std::string out;
    while (!at_line_end()) out += s_[i_++];
    while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back()))) out.pop_back();
    return out;
  }

  static Error error(int line, const std::string& message) {
    return make_error(ErrorKind::kInvalidArgument, "Modelfile line " + std::to_string(line) + ": " + message);
  }

 private:
  std::string_view s_;
  size_t i_ = 0;
  int line_ = 1;
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A value printed back so that parse_modelfile reads it unchanged.
std::string quoted(const std::string& v) {
  // A trailing '"' would merge with the closing """; such values take the escaped form.
  if (v.find("\"\"\"") == std::string::npos && (v.empty() || v.back() != '"')) return "\"\"\"" + v + "\"\"\"";
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A value printed bare when it reads back unchanged that way (one word, no quote), quoted otherwise:
// a FROM path or parameter string may hold spaces, quotes or even line breaks.
std::string bare_or_quoted(const std::string& s) {
  const bool plain = !s.empty() && s[0] != '#' &&
                     std::all_of(s.begin(), s.end(), [](char c) { return std::isgraph(static_cast<unsigned char>(c)) && c != '"'; });
  return plain ? s : quoted(s);
}

std::string parameter_text(const nlohmann::json& v) {
  if (v.is_string()) return bare_or_quoted(v.get<std::string>());
  return v.dump();
}

}  // namespace

Status check_message_role(std::string_view role) {
  if (role == "system" || role == "user" || role == "assistant") return ok_status();
  return make_error(ErrorKind::kInvalidArgument,
                    "message role '" + std::string(role.substr(0, 40)) + "' is not one of system, user, assistant");
}

Result<Modelfile> parse_modelfile(std::string_view text) {
  Modelfile m;
  Scanner sc(text);
  bool has_from = false;
  while (!sc.at_end()) {
    sc.skip_blank_on_line();
    if (sc.at_line_end()) {
      sc.next_line();
      continue;
    }
    const int line = sc.line();
    const std::string raw = sc.word();
    if (raw[0] == '#') {
      sc.next_line();
      continue;
    }
    const std::string cmd = lower(raw);
    auto need = [&](const std::string& v, const char* what) -> Status {
      if (v.empty()) return Scanner::error(line, std::string(what) + " needs a value");
      return ok_status();
    };
    if (cmd == "from") {
      if (has_from) return Scanner::error(line, "a second FROM (line " + std::to_string(m.from_line) + " has one; a Modelfile names one base)");
      HEARTH_ASSIGN(m.from, sc.value("FROM"));
      HEARTH_TRY(need(m.from, "FROM"));
      has_from = true;
      m.from_line = line;
    } else if (cmd == "parameter") {
      sc.skip_blank_on_line();
      const std::string name = sc.word();
      if (name.empty()) return Scanner::error(line, "PARAMETER needs a name and a value");
      HEARTH_ASSIGN(const std::string v, sc.value("PARAMETER " + name));
      if (v.empty()) return Scanner::error(line, "PARAMETER " + name + " needs a value");
      auto typed = parse_parameter_value(name, v);
      if (!typed.ok()) return Scanner::error(line, typed.error().message);
      add_parameter(m.parameters, lower(name), *typed);
    } else if (cmd == "template") {
      HEARTH_ASSIGN(m.template_text, sc.value("TEMPLATE"));
    } else if (cmd == "system") {
      HEARTH_ASSIGN(m.system, sc.value("SYSTEM"));
    } else if (cmd == "license") {
      HEARTH_ASSIGN(std::string v, sc.value("LICENSE"));
      m.licenses.push_back(std::move(v));
    } else if (cmd == "adapter") {
      HEARTH_ASSIGN(std::string v, sc.value("ADAPTER"));
      HEARTH_TRY(need(v, "ADAPTER"));
      m.adapters.push_back(std::move(v));
      m.adapter_lines.push_back(line);
    } else if (cmd == "message") {
      sc.skip_blank_on_line();
      const std::string role = lower(sc.word());
      if (role.empty()) return Scanner::error(line, "MESSAGE needs a role (system, user, assistant) and a text");
      if (auto st = check_message_role(role); !st.ok()) return Scanner::error(line, st.error().message);
      HEARTH_ASSIGN(std::string v, sc.value("MESSAGE " + role));
      m.messages.push_back({role, std::move(v)});
    } else if (cmd == "requires") {
      HEARTH_ASSIGN(m.requires_version, sc.value("REQUIRES"));
      HEARTH_TRY(need(m.requires_version, "REQUIRES"));
    } else {
      return Scanner::error(line, "unknown command '" + raw.substr(0, 40) +
                                      "' (expected FROM, PARAMETER, TEMPLATE, SYSTEM, MESSAGE, ADAPTER, LICENSE or REQUIRES)");
    }
    sc.next_line();
  }
  if (!has_from) return make_error(ErrorKind::kInvalidArgument, "Modelfile has no FROM line (it names the model, GGUF file or blob to start from)");
  return m;
}

std::string format_modelfile(const Modelfile& m, const std::string& display_name) {
  std::string out = "# Modelfile generated by \"hearth show\"\n# To build a new Modelfile based on this, replace FROM with:\n# FROM " +
                    display_name + "\n\nFROM " + bare_or_quoted(m.from) + "\n";
  for (const auto& a : m.adapters) out += "ADAPTER " + bare_or_quoted(a) + "\n";
  if (m.template_text) out += "TEMPLATE " + quoted(*m.template_text) + "\n";
  if (m.system) out += "SYSTEM " + quoted(*m.system) + "\n";
  for (const auto& [name, value] : m.parameters.items()) {
    if (value.is_array()) {
      for (const auto& v : value) out += "PARAMETER " + name + " " + parameter_text(v) + "\n";
    } else {
      out += "PARAMETER " + name + " " + parameter_text(value) + "\n";
    }
  }
  for (const auto& msg : m.messages) out += "MESSAGE " + msg.role + " " + quoted(msg.content) + "\n";
  for (const auto& l : m.licenses) out += "LICENSE " + quoted(l) + "\n";
  if (!m.requires_version.empty()) out += "REQUIRES " + bare_or_quoted(m.requires_version) + "\n";
  return out;
}

}  // namespace hearth::store
