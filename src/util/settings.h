// The settings table: one list of SettingSpec feeds command-line flags, HEARTH_* environment
// variables and --help, so the three never disagree. Precedence: flag > environment (HEARTH_*,
// then its OLLAMA_* twin where one exists) > default. Other runtimes' spellings of an option
// are aliases in the same spec, and their flags for features Hearth lacks are specs that refuse
// every use with a reason.
// A numeric setting carries its allowed range, so parse() refuses an out-of-range value with
// one error text and --help shows the range; commands do not re-check what the table says.
// The few HEARTH_* variables that are not options of a command (read deep in the library) are
// listed in one table too and read only through env_setting().
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

// The values a kInt or kFloat setting accepts: optional bounds (inclusive, or exclusive for
// above()), plus an optional soft maximum above which a value is lowered with a warning
// instead of refused (thread counts beyond the machine's). Not an aggregate on purpose: a
// stray `false` or number in a spec's initializer does not silently become a bound.
class SettingRange {
 public:
  static constexpr double kInt32Max = 2147483647.0;  // upper bound of settings stored in an int32

  SettingRange() = default;  // any value
  static SettingRange at_least(double min);
  static SettingRange above(double min);  // min itself is refused
  static SettingRange at_most(double max);
  static SettingRange between(double min, double max);
  // Values above `max` are accepted but lowered to it (Settings::warnings() says so).
  SettingRange lowered_above(double max) const;

  bool contains(double x) const;  // false for NaN
  bool empty() const { return !min_ && !max_ && !soft_max_; }  // accepts any value as given
  const std::optional<double>& soft_max() const { return soft_max_; }
  // ">= 0", "> 0", "<= 65535", "-1 to 65535"; integers printed without a fraction.
  std::string describe() const;

 private:
  std::optional<double> min_;
  std::optional<double> max_;
  bool min_exclusive_ = false;
  std::optional<double> soft_max_;
};

// The range of a --threads setting: 0 (physical cores) or more; more than the machine's
// hardware threads is lowered to that many with a warning, since an oversubscribed pool only
// slows every step down (and tens of thousands of threads cannot even be started).
SettingRange thread_count_range();

struct SettingSpec {
  std::string name;           // snake_case; the flag is --name with '_' turned into '-'
  char short_flag = 0;        // e.g. 'm' for -m; 0 for none
  SettingType type = SettingType::kString;
  std::string default_value;  // text form; "" for "unset"
  std::string help;
  std::string env;            // e.g. "HEARTH_HOST"; empty when no variable feeds it
  SettingRange range{};       // kInt/kFloat only; the default accepts any value
  bool repeatable = false;    // may be given several times (get_list)
  // Set through the with_* functions below rather than in the initializer.
  std::vector<std::string> aliases{};  // other spellings, whole words: "-np", "--n-parallel"
  // kString: the only values accepted (empty: any text). kInt/kFloat: words accepted besides
  // numbers in range (llama-server's "-ngl auto"); get_string() gives the word, get_int() 0.
  std::vector<std::string> choices{};
  // Non-empty: the flag may stand alone and then means this value ("-fa" is "-fa on"); the next
  // word is its value only when it is one of `choices`.
  std::string implicit_value{};
  std::string env_fallback{};          // read when `env` is unset: "OLLAMA_HOST"
  std::string range_note{};            // appended to an out-of-range error: why the range is so
  std::string unsupported{};           // non-empty: any use is refused with this reason

  // llama-server's and others' spellings of the same option ("-np", "--n-parallel").
  SettingSpec with_aliases(std::vector<std::string> flags) const;
  SettingSpec with_choices(std::vector<std::string> values) const;
  SettingSpec with_env_fallback(std::string variable) const;
  SettingSpec with_range_note(std::string note) const;
  SettingSpec with_implicit_value(std::string value) const;
};

// A flag of another runtime (llama-server) for a feature Hearth lacks: it is listed in --help
// and any use is refused with "option --lora: REASON", never "unknown option".
SettingSpec unsupported_setting(std::string name, std::vector<std::string> aliases, std::string reason,
                                SettingType type = SettingType::kString);

// Returns the environment variable's value, or nullopt. Injected so tests need no real env.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup process_env();

// A HEARTH_* variable read by a library module rather than by a command's settings table.
struct EnvSettingSpec {
  const char* name;  // "HEARTH_LOG_LEVEL"
  const char* help;  // what it does and the values it takes
  const char* fallback = nullptr;  // another program's variable read when `name` is unset ("OLLAMA_MODELS")
};
// Every such variable; a command's variables (HEARTH_MODEL, HEARTH_PORT, ...) are in its
// SettingSpec table and shown by its --help.
const std::vector<EnvSettingSpec>& env_setting_specs();
// The value of a variable listed in env_setting_specs() (asking for another is a programming
// error), nullopt when unset. Read on every call, never cached.
std::optional<std::string> env_setting(const std::string& name);
// $HOME, else the user's home directory from the password database ("/" when neither says).
std::string home_directory();

class Settings {
 public:
  explicit Settings(std::vector<SettingSpec> specs);

  // Parses args (without the program/command name). Anything not a flag is a positional.
  // "--" makes every later word a positional. Unknown flags, bad values and values outside a
  // setting's range are errors; values above a soft maximum are lowered (see warnings()).
  Status parse(const std::vector<std::string>& args, const EnvLookup& env = process_env());

  bool help_requested() const { return help_requested_; }
  // One line per value the last parse() lowered to a soft maximum (also logged as warnings).
  const std::vector<std::string>& warnings() const { return warnings_; }
  const std::vector<std::string>& positionals() const { return positionals_; }

  // Accessors for a declared setting; asking for an undeclared name is a programming error.
  std::string get_string(const std::string& name) const;
  int64_t get_int(const std::string& name) const;
  double get_float(const std::string& name) const;
  bool get_bool(const std::string& name) const;
  std::vector<std::string> get_list(const std::string& name) const;
  // True when a flag or environment variable gave a value (not the default).
  bool is_set(const std::string& name) const;

  // "Usage: ...\n\nOptions:\n  -t, --threads N   threads (default: 0; range >= 0) [env HEARTH_THREADS]"
  std::string help_text(const std::string& usage) const;
  // The same table as Markdown, for docs.
  std::string markdown_table() const;

  const std::vector<SettingSpec>& specs() const { return specs_; }

 private:
  const SettingSpec* find_long(const std::string& flag) const;
  const SettingSpec* find_short(char c) const;
  const SettingSpec* find_alias(const std::string& word) const;
  const SettingSpec& spec(const std::string& name) const;
  Status assign(const SettingSpec& spec, const std::string& value, const std::string& source);

  std::vector<SettingSpec> specs_;
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positionals_;
  std::vector<std::string> warnings_;
  bool help_requested_ = false;
};

std::string setting_flag_name(const SettingSpec& spec);  // "--num-ctx"

}  // namespace hearth
