// Implementation of the key=value logger (see log.h).
#include "util/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

#include "util/settings.h"

namespace hearth {
namespace {

LogLevel initial_level() {
  LogLevel level = LogLevel::kInfo;
  if (auto env = env_setting("HEARTH_LOG_LEVEL")) parse_log_level(*env, &level);
  return level;
}

std::atomic<int>& level_ref() {
  static std::atomic<int> level{static_cast<int>(initial_level())};
  return level;
}

std::atomic<LogSink>& sink_ref() {
  static std::atomic<LogSink> sink{nullptr};
  return sink;
}

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
    case LogLevel::kOff: return "off";
  }
  return "info";
}

bool needs_quotes(std::string_view v) {
  if (v.empty()) return true;
  for (char c : v) {
    if (c == ' ' || c == '"' || c == '=' || c == '\\' || static_cast<unsigned char>(c) < 0x20) return true;
  }
  return false;
}

void append_value(std::string& out, std::string_view v) {
  if (!needs_quotes(v)) {
    out += v;
    return;
  }
  out += '"';
  for (char c : v) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

}  // namespace

LogField::LogField(std::string_view k, double v) : key(k) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  value = buf;
}

void set_log_level(LogLevel level) { level_ref().store(static_cast<int>(level)); }
LogLevel log_level() { return static_cast<LogLevel>(level_ref().load()); }

bool parse_log_level(std::string_view text, LogLevel* out) {
  static const struct { const char* name; LogLevel level; } kNames[] = {
      {"debug", LogLevel::kDebug}, {"info", LogLevel::kInfo}, {"warn", LogLevel::kWarn},
      {"warning", LogLevel::kWarn}, {"error", LogLevel::kError}, {"off", LogLevel::kOff}};
  for (const auto& n : kNames) {
    if (text == n.name) {
      *out = n.level;
      return true;
    }
  }
  return false;
}

void set_log_sink(LogSink sink) { sink_ref().store(sink); }

std::string format_log_line(LogLevel level, std::string_view msg, std::initializer_list<LogField> fields) {
  std::string line = "level=";
  line += level_name(level);
  line += " msg=";
  append_value(line, msg);
  for (const auto& f : fields) {
    line += ' ';
    line += f.key;
    line += '=';
    append_value(line, f.value);
  }
  return line;
}

void log_event(LogLevel level, std::string_view msg, std::initializer_list<LogField> fields) {
  if (static_cast<int>(level) < level_ref().load() || level == LogLevel::kOff) return;
  std::string body = format_log_line(level, msg, fields);
  if (LogSink sink = sink_ref().load()) {
    sink(body);
    return;
  }
  using namespace std::chrono;
  auto now = system_clock::now();
  std::time_t t = system_clock::to_time_t(now);
  int ms = static_cast<int>(duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char ts[64];
  std::snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::fprintf(stderr, "%s %s\n", ts, body.c_str());
}

}  // namespace hearth
