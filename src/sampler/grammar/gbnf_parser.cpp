// GBNF text → GbnfAst (see gbnf_parser.h): a recursive-descent parser that stops at the first
// error with its position. Nesting is limited so hostile input cannot exhaust the stack.
#include "sampler/grammar/gbnf_parser.h"

#include <cstdio>

namespace hearth::sampler {
namespace {

constexpr int kMaxNesting = 128;
constexpr uint32_t kMaxRepeatCount = 100000;
constexpr int kMaxPostfix = 8;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

std::string describe(char c) {
  if (c == '\n' || c == '\r') return "end of line";
  const auto u = static_cast<unsigned char>(c);
  if (u < 0x20 || u >= 0x7F) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%02X", u);
    return std::string("byte ") + buf;
  }
  return std::string("'") + c + "'";
}

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  Result<GbnfAst> parse() {
    GbnfAst ast;
    skip_blank(true);
    while (i_ < s_.size()) {
      HEARTH_ASSIGN(GbnfRule rule, parse_rule());
      ast.rules.push_back(std::move(rule));
      skip_blank(true);
    }
    return ast;
  }

 private:
  bool eof() const { return i_ >= s_.size(); }
  char peek(size_t ahead = 0) const { return i_ + ahead < s_.size() ? s_[i_ + ahead] : '\0'; }
  bool at_newline() const { return !eof() && (s_[i_] == '\n' || s_[i_] == '\r'); }
  Error error_at(size_t offset, const std::string& reason) const { return gbnf_error(s_, offset, reason); }
  Error error_here(const std::string& reason) const { return error_at(i_, reason); }

  // Spaces, tabs and comments; line breaks too when newlines_ok.
  void skip_blank(bool newlines_ok) {
    while (!eof()) {
      const char c = s_[i_];
      if (c == ' ' || c == '\t') {
        ++i_;
      } else if (c == '#') {
        while (!eof() && s_[i_] != '\n' && s_[i_] != '\r') ++i_;
      } else if ((c == '\n' || c == '\r') && newlines_ok) {
        ++i_;
      } else {
        break;
      }
    }
  }

  std::string parse_name() {
    const size_t start = i_;
    while (!eof() && is_name_char(s_[i_])) ++i_;
    return std::string(s_.substr(start, i_ - start));
  }

  Result<GbnfRule> parse_rule() {
    GbnfRule rule;
    rule.offset = i_;
    rule.name = parse_name();
    if (rule.name.empty()) return error_here("expected a rule name, found " + describe(peek()));
    skip_blank(false);
    if (s_.substr(i_, 3) != "::=") {
      return error_here("expected '::=' after the rule name '" + rule.name + "', found " +
                        (eof() ? std::string("the end of the grammar") : describe(peek())));
    }
    i_ += 3;
    skip_blank(true);
    HEARTH_ASSIGN(rule.body, parse_alternation(false));
    if (!eof() && !at_newline()) {
      if (peek() == ')') return error_here("unmatched ')'");
      return error_here("unexpected " + describe(peek()));
    }
    return rule;
  }

  Result<GbnfExpr> parse_alternation(bool nested) {
    GbnfExpr alt;
    alt.kind = GbnfExpr::Kind::kAlternation;
    alt.offset = i_;
    HEARTH_ASSIGN(GbnfExpr first, parse_sequence(nested));
    alt.children.push_back(std::move(first));
    for (;;) {
      if (peek() == '|') {
        ++i_;
        skip_blank(true);
        HEARTH_ASSIGN(GbnfExpr next, parse_sequence(nested));
        alt.children.push_back(std::move(next));
        continue;
      }
      if (!nested && at_newline()) {
        // A following line that starts with '|' continues this rule.
        const size_t save = i_;
        skip_blank(true);
        if (peek() == '|') continue;
        i_ = save;
      }
      break;
    }
    if (alt.children.size() == 1) return std::move(alt.children[0]);
    return alt;
  }

  Result<GbnfExpr> parse_sequence(bool nested) {
    GbnfExpr seq;
    seq.kind = GbnfExpr::Kind::kSequence;
    seq.offset = i_;
    for (;;) {
      skip_blank(nested);
      if (eof() || peek() == '|' || peek() == ')' || at_newline()) break;
      HEARTH_ASSIGN(GbnfExpr item, parse_primary());
      for (int n_postfix = 0;; ++n_postfix) {
        skip_blank(nested);
        const char c = peek();
        if (c != '*' && c != '+' && c != '?' && c != '{') break;
        if (n_postfix == kMaxPostfix) return error_here("too many repetition operators in a row");
        GbnfExpr rep;
        rep.kind = GbnfExpr::Kind::kRepeat;
        rep.offset = i_;
        if (c == '{') {
          HEARTH_TRY(parse_braces(rep));
        } else {
          ++i_;
          rep.min = c == '+' ? 1 : 0;
          rep.max = c == '?' ? 1 : GbnfExpr::kUnbounded;
        }
        rep.children.push_back(std::move(item));
        item = std::move(rep);
      }
      seq.children.push_back(std::move(item));
    }
    if (seq.children.size() == 1) return std::move(seq.children[0]);
    return seq;
  }

  Result<uint32_t> parse_count() {
    const size_t start = i_;
    uint64_t v = 0;
    while (!eof() && s_[i_] >= '0' && s_[i_] <= '9') {
      v = v * 10 + static_cast<uint64_t>(s_[i_] - '0');
      if (v > kMaxRepeatCount) {
        return error_at(start, "repetition count is larger than " + std::to_string(kMaxRepeatCount));
      }
      ++i_;
    }
    return static_cast<uint32_t>(v);
  }

  // {m}, {m,}, {m,n} or {,n}; i_ is at '{'.
  Status parse_braces(GbnfExpr& rep) {
    const size_t start = i_;
    ++i_;
    skip_blank(true);
    const bool has_min = !eof() && s_[i_] >= '0' && s_[i_] <= '9';
    uint32_t min = 0;
    if (has_min) {
      HEARTH_ASSIGN(min, parse_count());
    }
    skip_blank(true);
    uint32_t max = min;
    if (peek() == ',') {
      ++i_;
      skip_blank(true);
      if (!eof() && s_[i_] >= '0' && s_[i_] <= '9') {
        HEARTH_ASSIGN(max, parse_count());
      } else {
        max = GbnfExpr::kUnbounded;
      }
      skip_blank(true);
    } else if (!has_min) {
      return error_at(start, "expected a repetition count like {2}, {1,3}, {2,} or {,4}");
    }
    if (peek() != '}') return error_here("expected '}' to close the repetition count");
    ++i_;
    if (max < min) {
      return error_at(start, "repetition maximum " + std::to_string(max) + " is below the minimum " + std::to_string(min));
    }
    rep.min = min;
    rep.max = max;
    return ok_status();
  }

  Result<GbnfExpr> parse_primary() {
    GbnfExpr e;
    e.offset = i_;
    const char c = peek();
    if (c == '"') return parse_literal();
    if (c == '[') return parse_class();
    if (c == '.') {
      ++i_;
      e.kind = GbnfExpr::Kind::kAny;
      return e;
    }
    if (c == '(') {
      if (++depth_ > kMaxNesting) return error_here("parentheses nested deeper than " + std::to_string(kMaxNesting));
      ++i_;
      skip_blank(true);
      HEARTH_ASSIGN(GbnfExpr inner, parse_alternation(true));
      skip_blank(true);
      if (peek() != ')') {
        return error_at(e.offset, eof() ? "missing ')' for this '('" : "expected ')' to close this '(', found " + describe(peek()));
      }
      ++i_;
      --depth_;
      return inner;
    }
    if (is_name_char(c)) {
      e.kind = GbnfExpr::Kind::kRuleRef;
      e.name = parse_name();
      return e;
    }
    if (c == '<') return error_here("token references (<...>) are not supported");
    if (c == ':') return error_here("unexpected ':' (each rule must start on its own line)");
    if (c == '*' || c == '+' || c == '?' || c == '{') {
      std::string reason = "'";
      reason += c;
      reason += "' must follow an expression to repeat";
      return error_here(reason);
    }
    return error_here("unexpected " + describe(c));
  }

  // `digits` hex digits at i_; errors point at `start` (the escape's backslash).
  Result<char32_t> parse_hex(int digits, size_t start) {
    char32_t v = 0;
    for (int k = 0; k < digits; ++k) {
      const char h = peek();
      int d;
      if (h >= '0' && h <= '9') {
        d = h - '0';
      } else if (h >= 'a' && h <= 'f') {
        d = h - 'a' + 10;
      } else if (h >= 'A' && h <= 'F') {
        d = h - 'A' + 10;
      } else {
        return error_at(start, "expected " + std::to_string(digits) + " hexadecimal digits");
      }
      v = v * 16 + static_cast<char32_t>(d);
      ++i_;
    }
    if (v > kMaxCodePoint || (v >= 0xD800 && v <= 0xDFFF)) {
      return error_at(start, "escape does not name a Unicode scalar value (surrogate or above U+10FFFF)");
    }
    return v;
  }

  // One character of a literal or class: an escape or one UTF-8 encoded code point.
  Result<char32_t> parse_char() {
    const size_t start = i_;
    const auto b0 = static_cast<unsigned char>(peek());
    if (b0 == '\\') {
      ++i_;
      if (eof()) return error_at(start, "unfinished escape at the end of the grammar");
      const char e = s_[i_++];
      switch (e) {
        case 'x': return parse_hex(2, start);
        case 'u': return parse_hex(4, start);
        case 'U': return parse_hex(8, start);
        case 'n': return U'\n';
        case 'r': return U'\r';
        case 't': return U'\t';
        case '\\': case '"': case '\'': case '[': case ']': case '-': case '^': case '/':
          return static_cast<char32_t>(e);
        default: return error_at(start, "unknown escape '\\" + std::string(1, e) + "'");
      }
    }
    int n;
    char32_t cp;
    if (b0 < 0x80) {
      n = 1;
      cp = b0;
    } else if ((b0 & 0xE0) == 0xC0) {
      n = 2;
      cp = b0 & 0x1F;
    } else if ((b0 & 0xF0) == 0xE0) {
      n = 3;
      cp = b0 & 0x0F;
    } else if ((b0 & 0xF8) == 0xF0) {
      n = 4;
      cp = b0 & 0x07;
    } else {
      return error_at(start, "invalid UTF-8");
    }
    for (int k = 1; k < n; ++k) {
      const auto b = static_cast<unsigned char>(peek(static_cast<size_t>(k)));
      if ((b & 0xC0) != 0x80) return error_at(start, "invalid UTF-8");
      cp = (cp << 6) | (b & 0x3F);
    }
    static constexpr char32_t kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinForLength[n] || cp > kMaxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return error_at(start, "invalid UTF-8");
    }
    i_ += static_cast<size_t>(n);
    return cp;
  }

  Result<GbnfExpr> parse_literal() {
    GbnfExpr e;
    e.kind = GbnfExpr::Kind::kLiteral;
    e.offset = i_;
    ++i_;
    for (;;) {
      if (eof()) return error_at(e.offset, "unterminated string literal");
      if (peek() == '"') {
        ++i_;
        return e;
      }
      HEARTH_ASSIGN(char32_t cp, parse_char());
      e.text.push_back(cp);
    }
  }

  Result<GbnfExpr> parse_class() {
    GbnfExpr e;
    e.kind = GbnfExpr::Kind::kClass;
    e.offset = i_;
    ++i_;
    if (peek() == '^') {
      e.negated = true;
      ++i_;
    }
    for (;;) {
      if (eof()) return error_at(e.offset, "unterminated character class (missing ']')");
      if (peek() == ']') {
        ++i_;
        return e;
      }
      const size_t item = i_;
      HEARTH_ASSIGN(char32_t lo, parse_char());
      char32_t hi = lo;
      if (peek() == '-' && i_ + 1 < s_.size() && s_[i_ + 1] != ']') {
        ++i_;
        HEARTH_ASSIGN(hi, parse_char());
        if (hi < lo) return error_at(item, "character range is reversed (its end comes before its start)");
      }
      e.ranges.push_back({lo, hi});
    }
  }

  std::string_view s_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace

Error gbnf_error(std::string_view text, size_t offset, const std::string& reason) {
  size_t line = 1;
  size_t column = 1;
  for (size_t k = 0; k < offset && k < text.size(); ++k) {
    if (text[k] == '\n') {
      ++line;
      column = 1;
    } else if ((static_cast<unsigned char>(text[k]) & 0xC0) != 0x80) {
      ++column;  // count code points, not continuation bytes
    }
  }
  return make_error(ErrorKind::kInvalidArgument,
                    "grammar: line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + reason);
}

Result<GbnfAst> parse_gbnf(std::string_view text) { return Parser(text).parse(); }

}  // namespace hearth::sampler
