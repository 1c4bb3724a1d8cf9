// keep_alive and Go duration parsing (see keep_alive.h).
#include "api/keep_alive.h"

#include <cmath>
#include <cstdlib>
#include <string>

namespace hearth::api {
namespace {

constexpr uint64_t kMaxNs = uint64_t{1} << 63;  // |int64 min|; only a negative may reach it

Error bad_duration(std::string_view text, const std::string& why) {
  return make_error(ErrorKind::kInvalidArgument, why + " in duration \"" + std::string(text) + "\"");
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Nanoseconds per unit, 0 when unknown.
uint64_t unit_ns(std::string_view unit) {
  struct Unit {
    std::string_view name;
    uint64_t ns;
  };
  static constexpr Unit kUnits[] = {{"ns", 1},
                                    {"us", 1000},
                                    {"\xC2\xB5s", 1000},  // U+00B5 micro sign
                                    {"\xCE\xBCs", 1000},  // U+03BC Greek small mu
                                    {"ms", 1000 * 1000},
                                    {"s", 1000 * 1000 * 1000},
                                    {"m", 60ull * 1000 * 1000 * 1000},
                                    {"h", 3600ull * 1000 * 1000 * 1000}};
  for (const auto& u : kUnits) {
    if (u.name == unit) return u.ns;
  }
  return 0;
}

// A plain decimal number ("300", "-1", "2.5"), as OLLAMA_KEEP_ALIVE accepts.
bool parse_plain_seconds(const std::string& s, double& seconds) {
  if (s.empty() || s.find_first_not_of("+-.0123456789") != std::string::npos) return false;
  char* end = nullptr;
  seconds = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(seconds);
}

Result<int64_t> seconds_to_ms(double seconds) {
  if (seconds < 0) return int64_t{-1};
  if (seconds * 1e9 >= static_cast<double>(kMaxNs)) {
    return make_error(ErrorKind::kInvalidArgument,
                      "'keep_alive' is too long (at most about 292 years); give a negative value to keep the model loaded");
  }
  return static_cast<int64_t>(std::ceil(seconds * 1000.0));
}

}  // namespace

Result<int64_t> parse_go_duration_ns(std::string_view text) {
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return int64_t{0};
  if (s.empty()) return bad_duration(text, "no number");
  uint64_t total = 0;
  while (!s.empty()) {
    if (!is_digit(s[0]) && s[0] != '.') return bad_duration(text, "expected a number");
    uint64_t whole = 0;
    bool any_digit = false;
    while (!s.empty() && is_digit(s[0])) {
      if (whole > kMaxNs / 10) return bad_duration(text, "out of range");
      whole = whole * 10 + static_cast<uint64_t>(s[0] - '0');
      if (whole > kMaxNs) return bad_duration(text, "out of range");
      any_digit = true;
      s.remove_prefix(1);
    }
    uint64_t frac = 0;
    double scale = 1;
    if (!s.empty() && s[0] == '.') {
      s.remove_prefix(1);
      while (!s.empty() && is_digit(s[0])) {
        if (frac <= (kMaxNs - 9) / 10) {  // beyond this precision the digits cannot matter
          frac = frac * 10 + static_cast<uint64_t>(s[0] - '0');
          scale *= 10;
        }
        any_digit = true;
        s.remove_prefix(1);
      }
    }
    if (!any_digit) return bad_duration(text, "expected a number");
    size_t unit_len = 0;
    while (unit_len < s.size() && !is_digit(s[unit_len]) && s[unit_len] != '.') ++unit_len;
    if (unit_len == 0) return bad_duration(text, "missing unit");
    const std::string_view unit = s.substr(0, unit_len);
    s.remove_prefix(unit_len);
    const uint64_t per = unit_ns(unit);
    if (per == 0) return bad_duration(text, "unknown unit \"" + std::string(unit) + "\"");
    if (whole > kMaxNs / per) return bad_duration(text, "out of range");
    uint64_t v = whole * per;
    if (frac > 0) v += static_cast<uint64_t>(static_cast<double>(frac) * (static_cast<double>(per) / scale));
    if (v > kMaxNs || total > kMaxNs - v) return bad_duration(text, "out of range");
    total += v;
  }
  if (negative) return total == kMaxNs ? INT64_MIN : -static_cast<int64_t>(total);
  if (total == kMaxNs) return bad_duration(text, "out of range");
  return static_cast<int64_t>(total);
}

Result<int64_t> parse_keep_alive_ms(const Json& value) {
  if (value.is_number()) return seconds_to_ms(value.get<double>());
  if (!value.is_string()) return field_type_error("", "keep_alive", "a duration string or a number of seconds", value);
  const std::string s = value.get<std::string>();
  double seconds = 0;
  if (parse_plain_seconds(s, seconds)) return seconds_to_ms(seconds);
  auto ns = parse_go_duration_ns(s);
  if (!ns.ok()) {
    return make_error(ErrorKind::kInvalidArgument, "'keep_alive': " + ns.error().message +
                                                       " (give a duration such as \"5m\", \"1h30m\" or \"300ms\", "
                                                       "or a number of seconds; negative keeps the model loaded)");
  }
  if (*ns < 0) return int64_t{-1};
  return *ns / 1000000 + (*ns % 1000000 != 0 ? 1 : 0);
}

}  // namespace hearth::api
