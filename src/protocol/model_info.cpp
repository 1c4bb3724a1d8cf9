// Model name matching for the single loaded model (see model_info.h).
#include "protocol/model_info.h"

#include <algorithm>
#include <cctype>

namespace hearth::protocol {
namespace {

std::string normalize_name(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::string latest = ":latest";
  if (s.size() > latest.size() && s.compare(s.size() - latest.size(), latest.size(), latest) == 0) {
    s.erase(s.size() - latest.size());
  }
  return s;
}

}  // namespace

bool ModelInfo::answers_to(const std::string& requested) const {
  if (requested.empty()) return true;
  const std::string want = normalize_name(requested);
  if (want == normalize_name(name)) return true;
  for (const auto& a : aliases) {
    if (want == normalize_name(a)) return true;
  }
  return false;
}

std::string ModelInfo::tagged_name() const { return name.find(':') == std::string::npos ? name + ":latest" : name; }

}  // namespace hearth::protocol
