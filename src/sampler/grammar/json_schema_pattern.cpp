// Simple regex → GBNF over JSON string content (see json_schema_pattern.h). A recursive-descent
// reader over the pattern's code points; each construct becomes a parenthesised GBNF piece.
#include "sampler/grammar/json_schema_pattern.h"

#include <algorithm>
#include <optional>
#include <vector>


namespace hearth::sampler {
namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
// Each group is a C++ stack frame here and two parentheses in the GBNF (which allows 128).
constexpr int kMaxGroupDepth = 32;

// The pattern's code points; nullopt for invalid UTF-8.
std::optional<std::u32string> decode_utf8(std::string_view s) {
  std::u32string out;
  for (size_t i = 0; i < s.size();) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    const int n = b0 < 0x80 ? 1 : (b0 >> 5) == 6 ? 2 : (b0 >> 4) == 14 ? 3 : (b0 >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return std::nullopt;
    uint32_t cp = n == 1 ? b0 : b0 & (0x7F >> n);
    for (int k = 1; k < n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b >> 6) != 2) return std::nullopt;
      cp = (cp << 6) | (b & 0x3F);
    }
    static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > kMaxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF)) return std::nullopt;
    out.push_back(cp);
    i += n;
  }
  return out;
}

std::string hex_escape(uint32_t cp) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out = "\\U";
  for (int shift = 28; shift >= 0; shift -= 4) out += kHex[(cp >> shift) & 15];
  return out;
}

// One code point as GBNF text inside a literal or class (always escaped when not plain ASCII).
std::string gbnf_char(uint32_t cp) {
  const bool plain = cp >= 0x20 && cp < 0x7F && cp != '"' && cp != '\\' && cp != ']' && cp != '-' && cp != '^' && cp != '[';
  return plain ? std::string(1, static_cast<char>(cp)) : hex_escape(cp);
}

// GBNF for one JSON string character that is the code point `cp`.
std::string json_char_literal(uint32_t cp) {
  if (cp == '"') return "\"\\\\\\\"\"";    // \"
  if (cp == '\\') return "\"\\\\\\\\\"";   // \\ (two backslashes)
  if (cp == '\n') return "\"\\\\n\"";
  if (cp == '\t') return "\"\\\\t\"";
  if (cp == '\r') return "\"\\\\r\"";
  if (cp < 0x20) return "";  // other control characters: left out
  return "\"" + gbnf_char(cp) + "\"";
}

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

// Ranges as GBNF for JSON string content: the characters JSON must escape are left out of the
// class and added back as their escapes when the ranges held them.
std::string class_to_gbnf(Ranges ranges, bool negated) {
  if (negated) {
    std::string out = "[^";
    for (auto [lo, hi] : ranges) out += gbnf_char(lo) + (hi > lo ? "-" + gbnf_char(hi) : "");
    return out + "\\x00-\\x1F\\\"\\\\]";
  }
  std::vector<std::string> alts;
  std::string cls;
  for (auto [lo, hi] : ranges) {
    for (uint32_t special : {uint32_t{'"'}, uint32_t{'\\'}}) {
      if (lo <= special && special <= hi) alts.push_back(json_char_literal(special));
    }
    // Split around control characters, '"' and '\\'.
    uint32_t start = std::max<uint32_t>(lo, 0x20);
    for (uint32_t cut : {uint32_t{'"'}, uint32_t{'\\'}, kMaxCodePoint + 1}) {
      uint32_t end = std::min<uint32_t>(hi, cut - 1);
      if (start <= end && start < cut) cls += gbnf_char(start) + (end > start ? "-" + gbnf_char(end) : "");
      start = std::max(start, cut + 1);
      if (start > hi) break;
    }
  }
  if (!cls.empty()) alts.insert(alts.begin(), "[" + cls + "]");
  if (alts.empty()) return "";
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : " ") + alts[i];
  return out + " )";
}

class PatternReader {
 public:
  PatternReader(std::u32string p, std::string json_char) : p_(std::move(p)), json_char_(std::move(json_char)) {}

  Result<std::string> run() {
    bool anchored_start = !p_.empty() && p_[0] == '^';
    if (anchored_start) ++i_;
    HEARTH_ASSIGN(std::string body, alternation());
    bool anchored_end = false;
    if (i_ < p_.size() && p_[i_] == '$' && i_ + 1 == p_.size()) {
      anchored_end = true;
      ++i_;
    }
    if (i_ < p_.size()) return fail(p_[i_] == ')' ? "unbalanced ')'" : "'^' or '$' inside the pattern");
    return (anchored_start ? "" : json_char_ + "* ") + body + (anchored_end ? "" : " " + json_char_ + "*");
  }

 private:
  Error fail(const std::string& why) const {
    return make_error(ErrorKind::kUnsupported, why + " at offset " + std::to_string(i_));
  }
  bool at(char32_t c) const { return i_ < p_.size() && p_[i_] == c; }

  Result<std::string> alternation() {
    std::vector<std::string> alts;
    while (true) {
      HEARTH_ASSIGN(std::string s, sequence());
      alts.push_back(s.empty() ? "\"\"" : s);
      if (!at('|')) break;
      ++i_;
    }
    if (alts.size() == 1) return alts[0];
    std::string out = "(";
    for (size_t k = 0; k < alts.size(); ++k) out += (k ? " | " : " ") + alts[k];
    return out + " )";
  }

  Result<std::string> sequence() {
    std::string out;
    while (i_ < p_.size() && !at('|') && !at(')') && !(at('$') && i_ + 1 == p_.size())) {
      HEARTH_ASSIGN(std::string a, atom());
      HEARTH_ASSIGN(std::string q, quantifier());
      out += (out.empty() ? "" : " ") + ("( " + a + " )" + q);
    }
    return out;
  }

  Result<std::string> quantifier() {
    std::string q;
    if (at('*') || at('+') || at('?')) {
      q = std::string(1, static_cast<char>(p_[i_++]));
    } else if (at('{')) {
      size_t close = p_.find('}', i_);
      if (close == std::u32string::npos) return fail("unfinished '{'");
      std::string inner;
      for (size_t k = i_ + 1; k < close; ++k) {
        if (!((p_[k] >= '0' && p_[k] <= '9') || p_[k] == ',')) return fail("bad repetition count");
        inner += static_cast<char>(p_[k]);
      }
      if (inner.empty() || inner[0] == ',' || std::count(inner.begin(), inner.end(), ',') > 1) return fail("bad repetition count");
      q = "{" + inner + "}";
      i_ = close + 1;
    } else {
      return q;
    }
    if (at('?')) ++i_;  // lazy: the same language
    if (at('*') || at('+') || at('?') || at('{')) return fail("a quantifier after a quantifier");
    return q;
  }

  // \d \w \s as ranges (nullopt for other escapes).
  static std::optional<Ranges> shorthand(char32_t c) {
    if (c == 'd') return Ranges{{'0', '9'}};
    if (c == 'w') return Ranges{{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
    if (c == 's') return Ranges{{' ', ' '}};
    return std::nullopt;
  }

  // The code point an escape stands for (i_ after the backslash), for escapes of one character.
  Result<uint32_t> escaped_char() {
    if (i_ >= p_.size()) return fail("a pattern ending in '\\'");
    char32_t c = p_[i_++];
    switch (c) {
      case 'n': return uint32_t{'\n'};
      case 't': return uint32_t{'\t'};
      case 'r': return uint32_t{'\r'};
      default: break;
    }
    const bool punct = c < 0x80 && !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'));
    if (!punct) return fail(std::string("the escape '\\") + static_cast<char>(c < 0x80 ? c : '?') + "'");
    return static_cast<uint32_t>(c);
  }

  Result<std::string> atom() {
    char32_t c = p_[i_];
    if (c == '(') {
      if (++depth_ > kMaxGroupDepth) return fail("groups nested deeper than " + std::to_string(kMaxGroupDepth));
      ++i_;
      if (at('?')) {
        if (i_ + 1 < p_.size() && p_[i_ + 1] == ':') {
          i_ += 2;
        } else {
          return fail("lookaround or named groups");
        }
      }
      HEARTH_ASSIGN(std::string inner, alternation());
      if (!at(')')) return fail("unbalanced '('");
      ++i_;
      --depth_;
      return inner.empty() ? std::string("\"\"") : inner;
    }
    if (c == '[') return char_class();
    if (c == '.') {
      ++i_;
      return class_to_gbnf({{0x20, kMaxCodePoint}}, false);
    }
    if (c == '*' || c == '+' || c == '?' || c == '{') return fail("a quantifier with nothing before it");
    if (c == '^' || c == '$') return fail("'^' or '$' inside the pattern");
    if (c == '\\') {
      ++i_;
      if (i_ < p_.size()) {
        char32_t e = p_[i_];
        if (auto r = shorthand(e)) {
          ++i_;
          return class_to_gbnf(*r, false);
        }
        if (e == 'D' || e == 'W' || e == 'S') {
          ++i_;
          return class_to_gbnf(*shorthand(static_cast<char32_t>(e - 'A' + 'a')), true);
        }
      }
      HEARTH_ASSIGN(uint32_t cp, escaped_char());
      return json_char_literal(cp);
    }
    ++i_;
    std::string lit = json_char_literal(c);
    if (lit.empty()) return fail("a control character");
    return lit;
  }

  Result<std::string> char_class() {
    ++i_;  // '['
    bool negated = at('^');
    if (negated) ++i_;
    Ranges ranges;
    bool first = true;
    while (i_ < p_.size() && (!at(']') || first)) {
      first = false;
      uint32_t lo;
      if (at('\\')) {
        ++i_;
        if (i_ < p_.size()) {
          if (auto r = shorthand(p_[i_])) {
            ++i_;
            ranges.insert(ranges.end(), r->begin(), r->end());
            continue;
          }
        }
        HEARTH_ASSIGN(lo, escaped_char());
      } else if (at('[')) {
        return fail("nested classes or POSIX classes");
      } else {
        lo = p_[i_++];
      }
      uint32_t hi = lo;
      if (at('-') && i_ + 1 < p_.size() && p_[i_ + 1] != ']') {
        ++i_;
        if (at('\\')) {
          ++i_;
          HEARTH_ASSIGN(hi, escaped_char());
        } else {
          hi = p_[i_++];
        }
        if (hi < lo) return fail("a class range out of order");
      }
      ranges.emplace_back(lo, hi);
    }
    if (!at(']')) return fail("unfinished '['");
    ++i_;
    std::string out = class_to_gbnf(ranges, negated);
    if (out.empty()) return fail("a class of control characters only");
    return out;
  }

  std::u32string p_;
  std::string json_char_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace

Result<std::string> json_pattern_to_gbnf(std::string_view pattern, const std::string& json_char_rule) {
  auto cps = decode_utf8(pattern);
  if (!cps) return make_error(ErrorKind::kUnsupported, "invalid UTF-8");
  return PatternReader(std::move(*cps), json_char_rule).run();
}

}  // namespace hearth::sampler
