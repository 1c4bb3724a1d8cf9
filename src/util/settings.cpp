// Parsing and help text for the settings table (see settings.h).
#include "util/settings.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "util/log.h"
#include "util/thread_pool.h"

namespace hearth {
namespace {

bool parse_bool_text(const std::string& v, bool* out) {
  if (v == "1" || v == "true" || v == "yes" || v == "on") {
    *out = true;
    return true;
  }
  if (v == "0" || v == "false" || v == "no" || v == "off" || v.empty()) {
    *out = false;
    return true;
  }
  return false;
}

bool parse_int_text(const std::string& v, int64_t* out) {
  if (v.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (errno != 0 || end == nullptr || *end != '\0') return false;
  *out = x;
  return true;
}

bool parse_float_text(const std::string& v, double* out) {
  if (v.empty()) return false;
  errno = 0;
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (errno != 0 || end == nullptr || *end != '\0' || !std::isfinite(x)) return false;
  *out = x;
  return true;
}

const char* type_placeholder(SettingType t) {
  switch (t) {
    case SettingType::kString: return "TEXT";
    case SettingType::kInt: return "N";
    case SettingType::kFloat: return "X";
    case SettingType::kBool: return "";
  }
  return "";
}

// "3", "-1", "0.5", "2147483647": whole numbers without a fraction or exponent.
std::string format_bound(double x) {
  if (std::fabs(x) < 1e15 && x == std::floor(x)) return std::to_string(static_cast<long long>(x));
  std::ostringstream out;
  out << x;
  return out.str();
}

// The one place src/ reads the process environment.
std::optional<std::string> read_env(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

}  // namespace

SettingRange SettingRange::at_least(double min) {
  SettingRange r;
  r.min_ = min;
  return r;
}

SettingRange SettingRange::above(double min) {
  SettingRange r;
  r.min_ = min;
  r.min_exclusive_ = true;
  return r;
}

SettingRange SettingRange::at_most(double max) {
  SettingRange r;
  r.max_ = max;
  return r;
}

SettingRange SettingRange::between(double min, double max) {
  SettingRange r;
  r.min_ = min;
  r.max_ = max;
  return r;
}

SettingRange SettingRange::lowered_above(double max) const {
  SettingRange r = *this;
  r.soft_max_ = max;
  return r;
}

bool SettingRange::contains(double x) const {
  if (std::isnan(x)) return false;
  if (min_ && (min_exclusive_ ? x <= *min_ : x < *min_)) return false;
  if (max_ && x > *max_) return false;
  return true;
}

std::string SettingRange::describe() const {
  std::string out;
  if (min_ && max_ && !min_exclusive_) {
    out = format_bound(*min_) + " to " + format_bound(*max_);
  } else {
    if (min_) out = (min_exclusive_ ? "> " : ">= ") + format_bound(*min_);
    if (max_) out += (out.empty() ? "<= " : " and <= ") + format_bound(*max_);
  }
  if (soft_max_) {
    out += (out.empty() ? "" : ", ") + std::string("more than ") + format_bound(*soft_max_) + " is lowered to " +
           format_bound(*soft_max_);
  }
  return out;
}

SettingRange thread_count_range() { return SettingRange::at_least(0).lowered_above(hardware_thread_count()); }

EnvLookup process_env() { return read_env; }

const std::vector<EnvSettingSpec>& env_setting_specs() {
  static const std::vector<EnvSettingSpec> specs = {
      {"HEARTH_CPU", "kernel variant: scalar, avx2 or avx512 (default: the best this CPU supports)"},
      {"HEARTH_LOG_LEVEL", "log level: debug, info, warn, error or off (default: info)"},
      {"HEARTH_LOG_DIR", "folder of the log of a server `hearth run` starts in the background (default: ~/.hearth/logs)"},
      {"HEARTH_WEIGHT_LAYOUT",
       "interleaved (default) or gguf: keep every matrix in the file mapping, shared through the page cache"},
      {"HEARTH_MODELS", "the model store (default: ~/.hearth/models)"},
      {"HEARTH_REGISTRY", "registry host of model names without one (default: registry.ollama.ai)"},
      {"HEARTH_OLLAMA_MODELS",
       "an ollama store read as a read-only fallback (default: $OLLAMA_MODELS, else ~/.ollama/models; 'off' for none)",
       "OLLAMA_MODELS"},
  };
  return specs;
}

std::optional<std::string> env_setting(const std::string& name) {
  bool listed = false;
  for (const auto& s : env_setting_specs()) listed = listed || name == s.name;
  assert(listed && "HEARTH_* variable missing from env_setting_specs()");
  (void)listed;
  if (auto v = read_env(name)) return v;
  for (const auto& s : env_setting_specs()) {
    if (name == s.name && s.fallback != nullptr) return read_env(s.fallback);
  }
  return std::nullopt;
}

std::string home_directory() {
  if (auto home = read_env("HOME"); home && !home->empty()) return *home;
  if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr && pw->pw_dir != nullptr) return pw->pw_dir;
  return "/";
}

SettingSpec SettingSpec::with_aliases(std::vector<std::string> flags) const {
  SettingSpec s = *this;
  s.aliases = std::move(flags);
  return s;
}

SettingSpec SettingSpec::with_choices(std::vector<std::string> values) const {
  SettingSpec s = *this;
  s.choices = std::move(values);
  return s;
}

SettingSpec SettingSpec::with_env_fallback(std::string variable) const {
  SettingSpec s = *this;
  s.env_fallback = std::move(variable);
  return s;
}

SettingSpec SettingSpec::with_range_note(std::string note) const {
  SettingSpec s = *this;
  s.range_note = std::move(note);
  return s;
}

SettingSpec SettingSpec::with_implicit_value(std::string value) const {
  SettingSpec s = *this;
  s.implicit_value = std::move(value);
  return s;
}

SettingSpec unsupported_setting(std::string name, std::vector<std::string> aliases, std::string reason, SettingType type) {
  SettingSpec s;
  s.name = std::move(name);
  s.type = type;
  s.help = reason;
  s.aliases = std::move(aliases);
  s.unsupported = std::move(reason);
  return s;
}

std::string setting_flag_name(const SettingSpec& spec) {
  std::string flag = "--";
  for (char c : spec.name) flag += (c == '_') ? '-' : c;
  return flag;
}

Settings::Settings(std::vector<SettingSpec> specs) : specs_(std::move(specs)) {}

const SettingSpec* Settings::find_long(const std::string& flag) const {
  for (const auto& s : specs_) {
    if (setting_flag_name(s) == flag) return &s;
  }
  return find_alias(flag);
}

const SettingSpec* Settings::find_alias(const std::string& word) const {
  for (const auto& s : specs_) {
    for (const auto& a : s.aliases) {
      if (a == word) return &s;
    }
  }
  return nullptr;
}

const SettingSpec* Settings::find_short(char c) const {
  for (const auto& s : specs_) {
    if (s.short_flag != 0 && s.short_flag == c) return &s;
  }
  return nullptr;
}

const SettingSpec& Settings::spec(const std::string& name) const {
  for (const auto& s : specs_) {
    if (s.name == name) return s;
  }
  assert(false && "undeclared setting");
  static SettingSpec empty;
  return empty;
}

Status Settings::assign(const SettingSpec& s, const std::string& value, const std::string& source) {
  const bool word = s.type != SettingType::kString && std::find(s.choices.begin(), s.choices.end(), value) != s.choices.end();
  if (word) {
    auto& slot = values_[s.name];
    if (!s.repeatable) slot.clear();
    slot.push_back(value);
    return ok_status();
  }
  bool ok = true;
  double number = 0;  // the value of a kInt or kFloat setting, for its range
  switch (s.type) {
    case SettingType::kString: break;
    case SettingType::kInt: {
      int64_t x = 0;
      ok = parse_int_text(value, &x);
      number = static_cast<double>(x);
      break;
    }
    case SettingType::kFloat: ok = parse_float_text(value, &number); break;
    case SettingType::kBool: { bool x; ok = parse_bool_text(value, &x); break; }
  }
  if (!ok) {
    return make_error(ErrorKind::kInvalidArgument,
                      source + ": '" + value + "' is not a valid " +
                          (s.type == SettingType::kInt ? "integer" : s.type == SettingType::kFloat ? "number" : "boolean"));
  }
  std::string stored = value;
  const bool numeric = s.type == SettingType::kInt || s.type == SettingType::kFloat;
  const std::string note = s.range_note.empty() ? "" : "; " + s.range_note;
  if (numeric && !s.range.contains(number)) {
    return make_error(ErrorKind::kInvalidArgument,
                      source + ": " + value + " is out of range (allowed: " + s.range.describe() + ")" + note);
  }
  if (s.type == SettingType::kString && !s.choices.empty() &&
      std::find(s.choices.begin(), s.choices.end(), value) == s.choices.end()) {
    std::string list;
    for (const auto& c : s.choices) list += (list.empty() ? "" : ", ") + c;
    return make_error(ErrorKind::kInvalidArgument, source + ": '" + value + "' is not supported (supported: " + list + ")" + note);
  }
  if (numeric && s.range.soft_max() && number > *s.range.soft_max()) {
    stored = format_bound(*s.range.soft_max());
    warnings_.push_back(source + ": " + value + " is more than " + stored + "; using " + stored);
    log_warn("setting lowered", {{"setting", setting_flag_name(s)}, {"given", value}, {"used", stored}});
  }
  auto& slot = values_[s.name];
  if (!s.repeatable) slot.clear();
  slot.push_back(stored);
  return ok_status();
}

Status Settings::parse(const std::vector<std::string>& args, const EnvLookup& env) {
  values_.clear();
  positionals_.clear();
  warnings_.clear();
  help_requested_ = false;
  for (const auto& s : specs_) {
    if (s.env.empty()) continue;
    if (auto v = env(s.env)) {
      HEARTH_TRY(assign(s, *v, "environment variable " + s.env + " (" + setting_flag_name(s) + ")"));
    } else if (!s.env_fallback.empty()) {
      if (auto fallback = env(s.env_fallback)) {
        HEARTH_TRY(assign(s, *fallback, "environment variable " + s.env_fallback + " (" + setting_flag_name(s) + ")"));
      }
    }
  }
  std::map<std::string, bool> from_flag;
  bool only_positionals = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (only_positionals || a.size() < 2 || a[0] != '-' || a == "-") {
      positionals_.push_back(a);
      continue;
    }
    if (a == "--") {
      only_positionals = true;
      continue;
    }
    if (a == "-h" || a == "--help") {
      help_requested_ = true;
      continue;
    }
    const SettingSpec* s = nullptr;
    std::string inline_value;
    bool has_inline = false;
    std::string typed = a;  // the flag as written, for messages
    if (a[1] != '-' && (s = find_alias(a)) != nullptr) {
      // A whole-word alias with one dash ("-np", "-ngl") before any short-flag reading of it.
    } else if (a[1] == '-') {
      auto eq = a.find('=');
      std::string flag = a.substr(0, eq);
      typed = flag;
      if (eq != std::string::npos) {
        inline_value = a.substr(eq + 1);
        has_inline = true;
      }
      s = find_long(flag);
      if (s == nullptr) return make_error(ErrorKind::kInvalidArgument, "unknown option '" + flag + "' (see --help)");
    } else {
      if (a.size() != 2) {
        // Allow "-n5" style for short flags taking values.
        s = find_short(a[1]);
        if (s == nullptr || s->type == SettingType::kBool) {
          return make_error(ErrorKind::kInvalidArgument, "unknown option '" + a + "' (see --help)");
        }
        inline_value = a.substr(2);
        has_inline = true;
      } else {
        s = find_short(a[1]);
        if (s == nullptr) {
          // A negative number is a positional, not a flag.
          if (a[1] >= '0' && a[1] <= '9') {
            positionals_.push_back(a);
            continue;
          }
          return make_error(ErrorKind::kInvalidArgument, "unknown option '" + a + "' (see --help)");
        }
      }
    }
    const std::string canonical = setting_flag_name(*s);
    const bool own_name = typed == canonical || (typed.size() == 2 && s->short_flag == typed[1]);
    const std::string source = "option " + (own_name ? canonical : typed + " (" + canonical + ")");
    if (!s->unsupported.empty()) {
      return make_error(ErrorKind::kInvalidArgument, "option " + (own_name ? canonical : typed) + " is not supported: " + s->unsupported);
    }
    if (!from_flag[s->name]) values_.erase(s->name);  // a flag replaces what the environment said
    from_flag[s->name] = true;
    std::string value;
    if (has_inline) {
      value = inline_value;
    } else if (s->type == SettingType::kBool) {
      value = "true";
    } else if (!s->implicit_value.empty() &&
               (i + 1 >= args.size() || std::find(s->choices.begin(), s->choices.end(), args[i + 1]) == s->choices.end())) {
      value = s->implicit_value;
    } else {
      if (i + 1 >= args.size()) {
        return make_error(ErrorKind::kInvalidArgument, "option '" + a + "' needs a value (see --help)");
      }
      value = args[++i];
    }
    HEARTH_TRY(assign(*s, value, source));
  }
  return ok_status();
}

std::string Settings::get_string(const std::string& name) const {
  auto it = values_.find(name);
  if (it != values_.end() && !it->second.empty()) return it->second.back();
  return spec(name).default_value;
}

int64_t Settings::get_int(const std::string& name) const {
  int64_t x = 0;
  parse_int_text(get_string(name), &x);
  return x;
}

double Settings::get_float(const std::string& name) const {
  double x = 0;
  parse_float_text(get_string(name), &x);
  return x;
}

bool Settings::get_bool(const std::string& name) const {
  bool x = false;
  parse_bool_text(get_string(name), &x);
  return x;
}

std::vector<std::string> Settings::get_list(const std::string& name) const {
  auto it = values_.find(name);
  if (it != values_.end()) return it->second;
  const auto& s = spec(name);
  if (s.default_value.empty()) return {};
  return {s.default_value};
}

bool Settings::is_set(const std::string& name) const { return values_.count(name) > 0; }

namespace {

// "also -np; " notes and "[env HEARTH_HOST, OLLAMA_HOST]" for one spec.
std::string env_list(const SettingSpec& s) {
  if (s.env.empty()) return "";
  return s.env + (s.env_fallback.empty() ? "" : ", " + s.env_fallback);
}

std::string alias_list(const SettingSpec& s) {
  std::string out;
  for (const auto& a : s.aliases) out += (out.empty() ? "" : ", ") + a;
  return out;
}

}  // namespace

std::string Settings::help_text(const std::string& usage) const {
  std::ostringstream out;
  out << "Usage: " << usage << "\n";
  if (specs_.empty()) return out.str();
  out << "\nOptions:\n";
  std::vector<std::string> lefts;
  size_t width = 0;
  for (const auto& s : specs_) {
    std::string left = "  ";
    left += s.short_flag ? std::string("-") + s.short_flag + ", " : "    ";
    left += setting_flag_name(s);
    const char* ph = type_placeholder(s.type);
    if (*ph) left += std::string(" ") + ph;
    if (s.unsupported.empty()) width = std::max(width, left.size());
    lefts.push_back(left);
  }
  std::vector<size_t> refused;
  for (size_t i = 0; i < specs_.size(); ++i) {
    const auto& s = specs_[i];
    if (!s.unsupported.empty()) {
      refused.push_back(i);
      continue;
    }
    out << lefts[i] << std::string(width > lefts[i].size() ? width - lefts[i].size() + 2 : 2, ' ') << s.help;
    std::vector<std::string> notes;
    if (!s.default_value.empty() && s.type != SettingType::kBool) notes.push_back("default: " + s.default_value);
    if (!s.range.empty() && s.type != SettingType::kString && s.type != SettingType::kBool) {
      notes.push_back("range " + s.range.describe());
    }
    if (!s.aliases.empty()) notes.push_back("also " + alias_list(s));
    for (size_t n = 0; n < notes.size(); ++n) out << (n == 0 ? " (" : "; ") << notes[n];
    if (!notes.empty()) out << ")";
    if (!s.env.empty()) out << " [env " << env_list(s) << "]";
    out << "\n";
  }
  out << "  -h, --help" << std::string(width > 12 ? width - 12 + 2 : 2, ' ') << "show this help\n";
  if (!refused.empty()) {
    out << "\nRecognised but not supported (refused with the reason):\n";
    for (size_t i : refused) {
      const auto& s = specs_[i];
      out << "  " << setting_flag_name(s) << (s.aliases.empty() ? "" : ", " + alias_list(s)) << ": " << s.unsupported
          << "\n";
    }
  }
  return out.str();
}

std::string Settings::markdown_table() const {
  std::ostringstream out;
  out << "| flag | environment | default | range | meaning |\n|---|---|---|---|---|\n";
  for (const auto& s : specs_) {
    out << "| `" << setting_flag_name(s) << "`";
    if (s.short_flag) out << " (`-" << s.short_flag << "`)";
    for (const auto& a : s.aliases) out << " `" << a << "`";
    std::string range = s.range.empty() ? "" : s.range.describe();
    if (!s.choices.empty()) {
      for (const auto& c : s.choices) range += (range.empty() ? "" : ", ") + c;
    }
    out << " | " << (s.env.empty() ? "" : "`" + env_list(s) + "`") << " | " << s.default_value << " | " << range << " | "
        << (s.unsupported.empty() ? s.help : "not supported: " + s.unsupported) << " |\n";
  }
  return out.str();
}

}  // namespace hearth
