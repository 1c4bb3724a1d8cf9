// Template lexer: splits source into text and tag tokens, applying Jinja's whitespace rules the
// way HF transformers configures them (trim_blocks=True, lstrip_blocks=True).
#include "template/jinja_lexer.h"

#include <cctype>

#include "template/jinja_value.h"

namespace hearth::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

void append_utf8(std::string& out, uint32_t cp) {
  if (cp > 0x10FFFF) cp = 0xFFFD;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Lexer {
 public:
  Lexer(std::string_view src, const LexOptions& options) : src_(src), options_(options) {}

  std::vector<Token> run() {
    size_t pos = 0;
    bool strip_next_text = false;  // a preceding "-%}" asks to drop leading whitespace
    while (pos < src_.size()) {
      size_t tag = find_tag(pos);
      std::string text(src_.substr(pos, tag - pos));
      if (strip_next_text) {
        size_t i = 0;
        while (i < text.size() && is_space(text[i])) ++i;
        text.erase(0, i);
        strip_next_text = false;
      }
      if (tag >= src_.size()) {
        emit_text(text, pos);
        break;
      }
      char kind = src_[tag + 1];
      char sign = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      if (sign == '-') {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      } else if (sign != '+' && options_.lstrip_blocks && (kind == '%' || kind == '#')) {
        size_t nl = text.rfind('\n');
        size_t start = nl == std::string::npos ? 0 : nl + 1;
        bool line_starting = nl != std::string::npos || pos == 0 || src_[pos - 1] == '\n';
        bool blank = true;
        for (size_t i = start; i < text.size(); ++i) if (!is_space(text[i])) blank = false;
        if (line_starting && blank) text.erase(start);
      }
      emit_text(text, pos);
      line_ = line_at(tag);
      size_t body = tag + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
      if (kind == '#') {
        size_t end = src_.find("#}", body);
        if (end == std::string::npos) throw_error(line_, "unterminated comment");
        bool strip = end > body && src_[end - 1] == '-';
        pos = end + 2;
        if (strip) strip_next_text = true;
        else pos = skip_trim_newline(pos);
        continue;
      }
      if (kind == '%' && is_raw_open(body)) {
        pos = lex_raw(body, strip_next_text);
        continue;
      }
      tokens_.push_back({kind == '{' ? TokenKind::kVarBegin : TokenKind::kBlockBegin, "", line_});
      bool strip_after = false;
      pos = lex_expression(body, kind == '{', &strip_after);
      if (strip_after) strip_next_text = true;
      else if (kind == '%') pos = skip_trim_newline(pos);
    }
    tokens_.push_back({TokenKind::kEof, "", line_at(src_.size())});
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return src_.size();
  }

  int line_at(size_t pos) {
    while (line_pos_ < pos && line_pos_ < src_.size()) {
      if (src_[line_pos_] == '\n') ++line_count_;
      ++line_pos_;
    }
    return line_count_;
  }

  void emit_text(const std::string& text, size_t pos) {
    if (text.empty()) return;
    tokens_.push_back({TokenKind::kText, text, line_at(pos)});
  }

  size_t skip_trim_newline(size_t pos) const {
    if (!options_.trim_blocks) return pos;
    if (pos < src_.size() && src_[pos] == '\n') return pos + 1;
    if (pos + 1 < src_.size() && src_[pos] == '\r' && src_[pos + 1] == '\n') return pos + 2;
    return pos;
  }

  size_t skip_spaces(size_t pos) const {
    while (pos < src_.size() && is_space(src_[pos])) ++pos;
    return pos;
  }

  // True when src_[body..] is "raw" followed by an optional '-' and "%}".
  bool is_raw_open(size_t body) const {
    size_t p = skip_spaces(body);
    if (src_.substr(p, 3) != "raw") return false;
    p = skip_spaces(p + 3);
    if (p < src_.size() && src_[p] == '-') ++p;
    return src_.substr(p, 2) == "%}";
  }

  size_t lex_raw(size_t body, bool& strip_next_text) {
    size_t p = skip_spaces(body) + 3;
    p = skip_spaces(p);
    bool strip_inner = false;
    if (src_[p] == '-') { strip_inner = true; ++p; }
    p += 2;
    if (!strip_inner) p = skip_trim_newline(p);
    // Find {% endraw %} with optional whitespace-control signs.
    size_t search = p;
    while (true) {
      size_t open = src_.find("{%", search);
      if (open == std::string::npos) throw_error(line_, "unterminated raw block (missing endraw)");
      size_t q = open + 2;
      bool strip_before = false;
      if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) { strip_before = src_[q] == '-'; ++q; }
      q = skip_spaces(q);
      if (src_.substr(q, 6) == "endraw") {
        q = skip_spaces(q + 6);
        bool strip_after = false;
        if (q < src_.size() && src_[q] == '-') { strip_after = true; ++q; }
        if (src_.substr(q, 2) == "%}") {
          std::string content(src_.substr(p, open - p));
          if (strip_inner) {
            size_t i = 0;
            while (i < content.size() && is_space(content[i])) ++i;
            content.erase(0, i);
          }
          if (strip_before) while (!content.empty() && is_space(content.back())) content.pop_back();
          emit_text(content, p);
          size_t end = q + 2;
          if (strip_after) strip_next_text = true;
          else end = skip_trim_newline(end);
          return end;
        }
      }
      search = open + 2;
    }
  }

  // Lexes expression tokens from `pos` up to the closing tag; returns the position after it.
  size_t lex_expression(size_t pos, bool is_var, bool* strip_after) {
    int brace_depth = 0;
    while (true) {
      while (pos < src_.size() && is_space(src_[pos])) ++pos;
      if (pos >= src_.size()) throw_error(line_, is_var ? "unterminated '{{'" : "unterminated '{%'");
      int line = line_at(pos);
      char c = src_[pos];
      // Closing tag, possibly with '-'.
      size_t p = pos;
      bool dash = false;
      if (c == '-' && p + 1 < src_.size() && (src_[p + 1] == '}' || src_[p + 1] == '%')) { dash = true; ++p; }
      if (is_var && brace_depth == 0 && src_.substr(p, 2) == "}}") {
        tokens_.push_back({TokenKind::kVarEnd, "", line});
        *strip_after = dash;
        return p + 2;
      }
      if (!is_var && src_.substr(p, 2) == "%}") {
        tokens_.push_back({TokenKind::kBlockEnd, "", line});
        *strip_after = dash;
        return p + 2;
      }
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t start = pos;
        while (pos < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[pos])) || src_[pos] == '_')) ++pos;
        tokens_.push_back({TokenKind::kName, std::string(src_.substr(start, pos - start)), line});
        continue;
      }
      if (std::isdigit(static_cast<unsigned char>(c))) {
        pos = lex_number(pos, line);
        continue;
      }
      if (c == '\'' || c == '"') {
        pos = lex_string(pos, line);
        continue;
      }
      static const char* kTwoChar[] = {"//", "**", "==", "!=", "<=", ">="};
      std::string op;
      for (const char* two : kTwoChar) {
        if (src_.substr(pos, 2) == two) { op = two; break; }
      }
      if (op.empty()) {
        if (std::string_view("+-*/%~<>=()[]{},.:|").find(c) == std::string_view::npos) {
          throw_error(line, std::string("unexpected character '") + c + "' in tag");
        }
        op = std::string(1, c);
      }
      if (op == "{") ++brace_depth;
      if (op == "}" && brace_depth > 0) --brace_depth;
      tokens_.push_back({TokenKind::kOperator, op, line});
      pos += op.size();
    }
  }

  size_t lex_number(size_t pos, int line) {
    std::string digits;
    bool is_float = false;
    while (pos < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[pos])) || src_[pos] == '_')) {
      if (src_[pos] != '_') digits += src_[pos];
      ++pos;
    }
    if (pos + 1 < src_.size() && src_[pos] == '.' && std::isdigit(static_cast<unsigned char>(src_[pos + 1]))) {
      is_float = true;
      digits += '.';
      ++pos;
      while (pos < src_.size() && std::isdigit(static_cast<unsigned char>(src_[pos]))) digits += src_[pos++];
    }
    if (pos < src_.size() && (src_[pos] == 'e' || src_[pos] == 'E')) {
      size_t q = pos + 1;
      if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
      if (q < src_.size() && std::isdigit(static_cast<unsigned char>(src_[q]))) {
        is_float = true;
        digits += 'e';
        digits.append(src_.substr(pos + 1, q - pos - 1));
        pos = q;
        while (pos < src_.size() && std::isdigit(static_cast<unsigned char>(src_[pos]))) digits += src_[pos++];
      }
    }
    tokens_.push_back({is_float ? TokenKind::kFloat : TokenKind::kInt, digits, line});
    return pos;
  }

  size_t lex_string(size_t pos, int line) {
    char quote = src_[pos++];
    std::string out;
    while (true) {
      if (pos >= src_.size()) throw_error(line, "unterminated string literal");
      char c = src_[pos++];
      if (c == quote) break;
      if (c != '\\') { out += c; continue; }
      if (pos >= src_.size()) throw_error(line, "unterminated string literal");
      char e = src_[pos++];
      auto hex = [&](int n) -> uint32_t {
        uint32_t v = 0;
        for (int i = 0; i < n; ++i) {
          if (pos >= src_.size() || !std::isxdigit(static_cast<unsigned char>(src_[pos]))) {
            throw_error(line, "bad escape sequence in string literal");
          }
          char h = src_[pos++];
          v = v * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
        }
        return v;
      };
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'v': out += '\v'; break;
        case '0': out += '\0'; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case '\n': break;
        case 'x': append_utf8(out, hex(2)); break;
        case 'u': append_utf8(out, hex(4)); break;
        case 'U': append_utf8(out, hex(8)); break;
        default: out += '\\'; out += e; break;
      }
    }
    tokens_.push_back({TokenKind::kString, out, line});
    return pos;
  }

  std::string_view src_;
  LexOptions options_;
  std::vector<Token> tokens_;
  int line_ = 1;
  size_t line_pos_ = 0;
  int line_count_ = 1;
};

}  // namespace

std::vector<Token> lex_template(std::string_view source, const LexOptions& options) {
  return Lexer(source, options).run();
}

}  // namespace hearth::jinja
