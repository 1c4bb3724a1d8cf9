// A strict reader of the Prometheus text exposition format for tests: checks every line is a
// comment (# HELP / # TYPE), blank, or `name{labels} value`, that TYPE precedes its samples,
// that histogram buckets are cumulative and end in le="+Inf" equal to _count, and returns the
// samples by their full series name.
#pragma once

#include <map>
#include <string>

namespace hearth::test {

struct PrometheusParse {
  bool ok = false;
  std::string error;                      // the first problem
  std::map<std::string, double> samples;  // "name{labels}" → value
  std::map<std::string, std::string> types;  // metric family → counter/gauge/histogram/...
};

PrometheusParse parse_prometheus_text(const std::string& text);

}  // namespace hearth::test
