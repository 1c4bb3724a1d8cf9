// Logging with levels and key=value fields, one line per event, greppable:
//   2026-11-21T10:00:00.123Z level=info msg="model loaded" model=llama ms=41
// The level comes from HEARTH_LOG_LEVEL (debug|info|warn|error|off) or set_log_level().
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace hearth {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };

struct LogField {
  std::string key;
  std::string value;
  LogField(std::string_view k, std::string_view v) : key(k), value(v) {}
  LogField(std::string_view k, const char* v) : key(k), value(v) {}
  LogField(std::string_view k, const std::string& v) : key(k), value(v) {}
  LogField(std::string_view k, bool v) : key(k), value(v ? "true" : "false") {}
  LogField(std::string_view k, int v) : key(k), value(std::to_string(v)) {}
  LogField(std::string_view k, long v) : key(k), value(std::to_string(v)) {}
  LogField(std::string_view k, long long v) : key(k), value(std::to_string(v)) {}
  LogField(std::string_view k, unsigned v) : key(k), value(std::to_string(v)) {}
  LogField(std::string_view k, unsigned long v) : key(k), value(std::to_string(v)) {}
  LogField(std::string_view k, unsigned long long v) : key(k), value(std::to_string(v)) {}
  LogField(std::string_view k, double v);
};

void set_log_level(LogLevel level);
LogLevel log_level();
// Parses "debug", "info", "warn", "error", "off"; false if unknown.
bool parse_log_level(std::string_view text, LogLevel* out);
// Redirects log lines (default: stderr). Used by tests to capture output.
using LogSink = void (*)(const std::string& line);
void set_log_sink(LogSink sink);

// Formats one line without the timestamp (exposed for tests).
std::string format_log_line(LogLevel level, std::string_view msg, std::initializer_list<LogField> fields);
void log_event(LogLevel level, std::string_view msg, std::initializer_list<LogField> fields = {});

inline void log_debug(std::string_view msg, std::initializer_list<LogField> f = {}) { log_event(LogLevel::kDebug, msg, f); }
inline void log_info(std::string_view msg, std::initializer_list<LogField> f = {}) { log_event(LogLevel::kInfo, msg, f); }
inline void log_warn(std::string_view msg, std::initializer_list<LogField> f = {}) { log_event(LogLevel::kWarn, msg, f); }
inline void log_error(std::string_view msg, std::initializer_list<LogField> f = {}) { log_event(LogLevel::kError, msg, f); }

}  // namespace hearth
