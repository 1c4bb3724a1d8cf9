// `"""` block assembly (see multiline_input.h).
#include "cli/multiline_input.h"

namespace hearth::cli {
namespace {

constexpr std::string_view kQuotes = "\"\"\"";

bool cut_suffix(std::string& s) {
  if (s.size() >= kQuotes.size() && s.compare(s.size() - kQuotes.size(), kQuotes.size(), kQuotes) == 0) {
    s.resize(s.size() - kQuotes.size());
    return true;
  }
  return false;
}

}  // namespace

std::optional<std::string> MultilineAssembler::feed(const std::string& line) {
  if (open_) {
    std::string part = line;
    const bool closed = cut_suffix(part);
    text_ += part;
    if (!closed) {
      text_ += '\n';
      return std::nullopt;
    }
    open_ = false;
    std::string done = std::move(text_);
    text_.clear();
    return done;
  }
  std::string prefix;
  for (const auto& p : prefixes_) {
    if (line.rfind(p, 0) == 0 && line.compare(p.size(), kQuotes.size(), kQuotes) == 0) prefix = p;
  }
  if (prefix.empty() && line.rfind(kQuotes, 0) != 0) return line;
  std::string rest = line.substr(prefix.size() + kQuotes.size());
  text_ = prefix;
  if (cut_suffix(rest)) {
    text_ += rest;
    std::string done = std::move(text_);
    text_.clear();
    return done;
  }
  if (!rest.empty()) text_ += rest + "\n";  // a bare opening `"""` adds no blank first line
  open_ = true;
  return std::nullopt;
}

void MultilineAssembler::reset() {
  open_ = false;
  text_.clear();
}

}  // namespace hearth::cli
