// Human-readable numbers for the CLI (see human_format.h).
#include "cli/human_format.h"

#include <cmath>
#include <cstdio>
#include <ctime>

namespace hearth::cli {
namespace {

std::string printf_string(const char* fmt, double value, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, value, unit);
  return buf;
}

// Go's fractional formatting: `value` units and up to `digits` decimals, trailing zeros dropped.
std::string trimmed_fraction(int64_t whole, int64_t frac, int digits) {
  std::string s = std::to_string(whole);
  if (frac == 0) return s;
  std::string f = std::to_string(frac);
  f.insert(0, static_cast<size_t>(digits) - f.size(), '0');
  while (!f.empty() && f.back() == '0') f.pop_back();
  return s + "." + f;
}

std::string relative_words(double seconds) {
  const double s = std::floor(seconds);
  auto plural = [](int64_t n, const char* unit) { return std::to_string(n) + " " + unit + (n == 1 ? "" : "s"); };
  if (s < 1) return "Less than a second";
  if (s < 60) return plural(static_cast<int64_t>(s), "second");
  const double minutes = s / 60;
  if (std::lround(minutes) == 1) return "About a minute";
  if (minutes < 60) return plural(std::lround(minutes), "minute");
  const double hours = minutes / 60;
  if (std::lround(hours) == 1) return "About an hour";
  if (hours < 48) return plural(std::lround(hours), "hour");
  const double days = hours / 24;
  if (days < 7 * 2) return plural(std::lround(days), "day");
  if (days < 30 * 3) return plural(std::lround(days / 7), "week");
  if (days < 365 * 2) return plural(std::lround(days / 30), "month");
  return plural(std::lround(days / 365), "year");
}

}  // namespace

std::string format_bytes(uint64_t bytes) {
  static const char* const kUnits[] = {"KB", "MB", "GB", "TB", "PB"};
  if (bytes < 1000) return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes);
  int unit = -1;
  while (value >= 1000 && unit < 4) {
    value /= 1000;
    ++unit;
  }
  if (value >= 10) return printf_string("%.0f %s", std::floor(value), kUnits[unit]);
  return printf_string("%.1f %s", std::floor(value * 10) / 10, kUnits[unit]);
}

std::string format_go_duration(int64_t ns) {
  if (ns == 0) return "0s";
  const bool negative = ns < 0;
  uint64_t u = negative ? static_cast<uint64_t>(-(ns + 1)) + 1 : static_cast<uint64_t>(ns);
  std::string out;
  if (u < 1000) {
    out = std::to_string(u) + "ns";
  } else if (u < 1000000) {
    out = trimmed_fraction(static_cast<int64_t>(u / 1000), static_cast<int64_t>(u % 1000), 3) + "µs";
  } else if (u < 1000000000) {
    out = trimmed_fraction(static_cast<int64_t>(u / 1000000), static_cast<int64_t>(u % 1000000), 6) + "ms";
  } else {
    const uint64_t total_s = u / 1000000000;
    const uint64_t frac = u % 1000000000;
    const uint64_t h = total_s / 3600, m = (total_s / 60) % 60, s = total_s % 60;
    out = trimmed_fraction(static_cast<int64_t>(s), static_cast<int64_t>(frac), 9) + "s";
    if (h > 0 || m > 0) out = std::to_string(m) + "m" + out;
    if (h > 0) out = std::to_string(h) + "h" + out;
  }
  return negative ? "-" + out : out;
}

std::string format_eta(double seconds) {
  if (!(seconds >= 0) || seconds > 1e9) return "?";
  return format_go_duration(static_cast<int64_t>(std::llround(seconds)) * 1000000000LL);
}

std::string format_time_ago(double seconds) { return relative_words(seconds < 0 ? 0 : seconds) + " ago"; }

std::string format_time_from_now(double seconds) {
  if (seconds > 100.0 * 365 * 24 * 3600) return "Forever";
  return relative_words(seconds < 0 ? 0 : seconds) + " from now";
}

std::string format_metrics(const ChatStats& m) {
  std::string out;
  char line[128];
  auto add = [&](const char* label, const std::string& value) { out += std::string(label) + value + "\n"; };
  if (m.total_duration_ns > 0) add("total duration:       ", format_go_duration(m.total_duration_ns));
  if (m.load_duration_ns > 0) add("load duration:        ", format_go_duration(m.load_duration_ns));
  if (m.prompt_eval_count > 0) add("prompt eval count:    ", std::to_string(m.prompt_eval_count) + " token(s)");
  if (m.prompt_eval_duration_ns > 0) {
    add("prompt eval duration: ", format_go_duration(m.prompt_eval_duration_ns));
    std::snprintf(line, sizeof line, "%.2f tokens/s",
                  static_cast<double>(m.prompt_eval_count) / (static_cast<double>(m.prompt_eval_duration_ns) / 1e9));
    add("prompt eval rate:     ", line);
  }
  if (m.eval_count > 0) add("eval count:           ", std::to_string(m.eval_count) + " token(s)");
  if (m.eval_duration_ns > 0) {
    add("eval duration:        ", format_go_duration(m.eval_duration_ns));
    std::snprintf(line, sizeof line, "%.2f tokens/s", static_cast<double>(m.eval_count) / (static_cast<double>(m.eval_duration_ns) / 1e9));
    add("eval rate:            ", line);
  }
  return out;
}

double parse_rfc3339(const std::string& text) {
  int y, mo, d, h, mi;
  double sec;
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%lf%n", &y, &mo, &d, &h, &mi, &sec, &consumed) < 6) return -1;
  struct tm t {};
  t.tm_year = y - 1900;
  t.tm_mon = mo - 1;
  t.tm_mday = d;
  t.tm_hour = h;
  t.tm_min = mi;
  t.tm_sec = 0;
  double epoch = static_cast<double>(timegm(&t)) + sec;
  const char* zone = text.c_str() + consumed;
  if (*zone == '+' || *zone == '-') {
    int zh = 0, zm = 0;
    if (std::sscanf(zone + 1, "%2d:%2d", &zh, &zm) == 2) epoch -= (*zone == '+' ? 1 : -1) * (zh * 3600.0 + zm * 60.0);
  }
  return epoch;
}

}  // namespace hearth::cli
