// Prometheus text checker for tests (see prometheus_check.h).
#include "prometheus_check.h"

#include <cctype>
#include <cstdlib>
#include <sstream>
#include <vector>

namespace hearth::test {
namespace {

bool valid_name(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_' || s[0] == ':')) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':')) return false;
  }
  return true;
}

bool parse_value(const std::string& s, double* out) {
  if (s == "+Inf") return *out = 1e308 * 10, true;
  if (s == "-Inf") return *out = -1e308 * 10, true;
  if (s == "NaN") return *out = 0, true;
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return !s.empty() && *end == '\0';
}

std::string family_of(const std::string& name, const std::map<std::string, std::string>& types) {
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    std::string sfx = suffix;
    if (name.size() > sfx.size() && name.compare(name.size() - sfx.size(), sfx.size(), sfx) == 0) {
      std::string base = name.substr(0, name.size() - sfx.size());
      auto it = types.find(base);
      if (it != types.end() && it->second == "histogram") return base;
    }
  }
  return name;
}

}  // namespace

PrometheusParse parse_prometheus_text(const std::string& text) {
  PrometheusParse r;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  std::map<std::string, double> last_bucket;  // histogram family → previous cumulative count
  auto fail = [&](const std::string& why) {
    r.error = "line " + std::to_string(n) + ": " + why + ": " + line;
    return r;
  };
  if (!text.empty() && text.back() != '\n') return fail("text must end with a newline");
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::istringstream words(line);
      std::string hash, kind, name, rest;
      words >> hash >> kind >> name;
      if (kind == "TYPE") {
        words >> rest;
        if (!valid_name(name)) return fail("bad metric name");
        if (rest != "counter" && rest != "gauge" && rest != "histogram" && rest != "summary" && rest != "untyped") {
          return fail("bad type");
        }
        if (r.types.count(name)) return fail("TYPE given twice");
        r.types[name] = rest;
      } else if (kind == "HELP") {
        if (!valid_name(name)) return fail("bad metric name");
      }
      continue;
    }
    size_t name_end = 0;
    while (name_end < line.size() && line[name_end] != '{' && line[name_end] != ' ') ++name_end;
    std::string name = line.substr(0, name_end);
    if (!valid_name(name)) return fail("bad sample name");
    std::string labels;
    size_t pos = name_end;
    if (pos < line.size() && line[pos] == '{') {
      size_t close = line.find('}', pos);
      if (close == std::string::npos) return fail("unclosed labels");
      labels = line.substr(pos, close - pos + 1);
      // label="value" pairs
      std::string inner = labels.substr(1, labels.size() - 2);
      size_t i = 0;
      while (i < inner.size()) {
        size_t eq = inner.find('=', i);
        if (eq == std::string::npos || !valid_name(inner.substr(i, eq - i))) return fail("bad label name");
        if (eq + 1 >= inner.size() || inner[eq + 1] != '"') return fail("label value must be quoted");
        size_t q = inner.find('"', eq + 2);
        if (q == std::string::npos) return fail("unclosed label value");
        i = q + 1;
        if (i < inner.size()) {
          if (inner[i] != ',') return fail("labels must be separated by commas");
          ++i;
        }
      }
      pos = close + 1;
    }
    if (pos >= line.size() || line[pos] != ' ') return fail("missing value");
    double value = 0;
    if (!parse_value(line.substr(pos + 1), &value)) return fail("bad value");
    const std::string family = family_of(name, r.types);
    if (!r.types.count(family)) return fail("sample before its TYPE");
    if (r.types[family] == "counter" && value < 0) return fail("negative counter");
    if (name == family + "_bucket") {
      auto prev = last_bucket.find(family);
      if (prev != last_bucket.end() && value < prev->second) return fail("buckets are not cumulative");
      last_bucket[family] = value;
    }
    if (r.types[family] == "histogram" && name == family + "_count") {
      auto inf = r.samples.find(family + "_bucket{le=\"+Inf\"}");
      if (inf == r.samples.end() || inf->second != value) return fail("_count differs from the +Inf bucket");
    }
    r.samples[name + labels] = value;
  }
  r.ok = true;
  return r;
}

}  // namespace hearth::test
