// The settings table: one list of SettingSpec feeds command-line flags, HEARTH_* environment
// variables and --help, so the three never disagree. Precedence: flag > environment > default.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/result.h"

namespace hearth {

enum class SettingType { kString, kInt, kFloat, kBool };

struct SettingSpec {
  std::string name;           // snake_case; the flag is --name with '_' turned into '-'
  char short_flag = 0;        // e.g. 'm' for -m; 0 for none
  SettingType type = SettingType::kString;
  std::string default_value;  // text form; "" for "unset"
  std::string help;
  std::string env;            // e.g. "HEARTH_HOST"; empty when no variable feeds it
  bool repeatable = false;    // may be given several times (get_list)
};

// Returns the environment variable's value, or nullopt. Injected so tests need no real env.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup process_env();

class Settings {
 public:
  explicit Settings(std::vector<SettingSpec> specs);

  // Parses args (without the program/command name). Anything not a flag is a positional.
  // "--" makes every later word a positional. Unknown flags and bad values are errors.
  Status parse(const std::vector<std::string>& args, const EnvLookup& env = process_env());

  bool help_requested() const { return help_requested_; }
  const std::vector<std::string>& positionals() const { return positionals_; }

  // Accessors for a declared setting; asking for an undeclared name is a programming error.
  std::string get_string(const std::string& name) const;
  int64_t get_int(const std::string& name) const;
  double get_float(const std::string& name) const;
  bool get_bool(const std::string& name) const;
  std::vector<std::string> get_list(const std::string& name) const;
  // True when a flag or environment variable gave a value (not the default).
  bool is_set(const std::string& name) const;

  // "Usage: ...\n\nOptions:\n  -m, --model FILE   ... [env HEARTH_MODEL] (default: x)"
  std::string help_text(const std::string& usage) const;
  // The same table as Markdown, for docs.
  std::string markdown_table() const;

  const std::vector<SettingSpec>& specs() const { return specs_; }

 private:
  const SettingSpec* find_long(const std::string& flag) const;
  const SettingSpec* find_short(char c) const;
  const SettingSpec& spec(const std::string& name) const;
  Status assign(const SettingSpec& spec, const std::string& value, const std::string& source);

  std::vector<SettingSpec> specs_;
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positionals_;
  bool help_requested_ = false;
};

std::string setting_flag_name(const SettingSpec& spec);  // "--num-ctx"

}  // namespace hearth
