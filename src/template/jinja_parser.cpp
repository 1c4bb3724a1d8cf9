// Recursive-descent parser from the token stream to the syntax tree, following Jinja's operator
// precedence (or < and < not < comparison < +,- < ~ < *,/,//,% < ** < unary < filters/tests).
// Nesting is bounded so hostile templates cannot overflow the stack.
#include <set>

#include "template/jinja_ast.h"
#include "template/jinja_lexer.h"

namespace hearth::jinja {
namespace {

constexpr int kMaxNesting = 200;

class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : toks_(tokens) {}

  Body parse_all() {
    std::string end;
    Body body = parse_body({}, &end);
    return body;
  }

 private:
  struct DepthGuard {
    explicit DepthGuard(Parser* p) : p_(p) {
      if (++p_->depth_ > kMaxNesting) throw_error(p_->peek().line, "template nested too deeply");
    }
    ~DepthGuard() { --p_->depth_; }
    Parser* p_;
  };

  const Token& peek(size_t ahead = 0) const {
    size_t i = pos_ + ahead;
    return i < toks_.size() ? toks_[i] : toks_.back();
  }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < toks_.size() - 1) ++pos_;
    return t;
  }
  bool at_op(const char* op) const { return peek().kind == TokenKind::kOperator && peek().text == op; }
  bool at_name(const char* name) const { return peek().kind == TokenKind::kName && peek().text == name; }
  bool accept_op(const char* op) {
    if (!at_op(op)) return false;
    next();
    return true;
  }
  bool accept_name(const char* name) {
    if (!at_name(name)) return false;
    next();
    return true;
  }
  [[noreturn]] void fail_here(const std::string& what) const {
    const Token& t = peek();
    std::string got = t.kind == TokenKind::kEof ? "end of template"
                      : t.kind == TokenKind::kBlockEnd ? "'%}'"
                      : t.kind == TokenKind::kVarEnd ? "'}}'"
                      : std::string(1, '\'') + t.text + '\'';
    throw_error(t.line, "expected " + what + ", got " + got);
  }
  void expect_op(const char* op) {
    if (!accept_op(op)) fail_here(std::string("'") + op + "'");
  }
  std::string expect_name() {
    if (peek().kind != TokenKind::kName) fail_here("a name");
    return next().text;
  }
  void expect_block_end() {
    if (peek().kind != TokenKind::kBlockEnd) fail_here("'%}'");
    next();
  }

  // Parses statements until a block tag whose keyword is in `enders`; stores it in *end.
  Body parse_body(const std::set<std::string>& enders, std::string* end) {
    DepthGuard guard(this);
    Body body;
    while (true) {
      const Token& t = peek();
      if (t.kind == TokenKind::kEof) {
        if (!enders.empty()) {
          throw_error(t.line, "unexpected end of template; expected '" + *enders.begin() + "'");
        }
        *end = "";
        return body;
      }
      if (t.kind == TokenKind::kText) {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::kText;
        s->line = t.line;
        s->text = t.text;
        body.push_back(std::move(s));
        next();
        continue;
      }
      if (t.kind == TokenKind::kVarBegin) {
        next();
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::kOutput;
        s->line = t.line;
        s->expr = parse_tuple(true);
        if (peek().kind != TokenKind::kVarEnd) fail_here("'}}'");
        next();
        body.push_back(std::move(s));
        continue;
      }
      if (t.kind != TokenKind::kBlockBegin) fail_here("text or a tag");
      const Token& kw = peek(1);
      if (kw.kind != TokenKind::kName) {
        next();
        fail_here("a statement keyword");
      }
      if (enders.count(kw.text)) {
        next();
        next();
        *end = kw.text;
        return body;
      }
      next();
      body.push_back(parse_statement());
    }
  }

  StmtPtr parse_statement() {
    const Token& kw = next();
    int line = kw.line;
    auto s = std::make_unique<Stmt>();
    s->line = line;
    const std::string& k = kw.text;
    if (k == "if") {
      s->kind = StmtKind::kIf;
      ExprPtr cond = parse_tuple(true);
      expect_block_end();
      while (true) {
        std::string end;
        Body body = parse_body({"elif", "else", "endif"}, &end);
        s->branches.emplace_back(std::move(cond), std::move(body));
        if (end == "elif") {
          cond = parse_tuple(true);
          expect_block_end();
          continue;
        }
        if (end == "else") {
          expect_block_end();
          s->else_body = parse_body({"endif"}, &end);
        }
        expect_block_end();
        break;
      }
    } else if (k == "for") {
      s->kind = StmtKind::kFor;
      bool paren = accept_op("(");
      s->names.push_back(expect_name());
      while (accept_op(",")) {
        if (at_name("in")) break;
        s->names.push_back(expect_name());
      }
      if (paren) expect_op(")");
      if (!accept_name("in")) fail_here("'in'");
      s->expr = parse_tuple(false);
      if (accept_name("if")) s->expr2 = parse_expression(false);
      accept_name("recursive");
      expect_block_end();
      std::string end;
      s->body = parse_body({"else", "endfor"}, &end);
      if (end == "else") {
        expect_block_end();
        s->else_body = parse_body({"endfor"}, &end);
      }
      expect_block_end();
    } else if (k == "set") {
      ExprPtr target = parse_assign_target();
      if (accept_op("=")) {
        s->kind = StmtKind::kSet;
        s->target = std::move(target);
        s->expr = parse_tuple(true);
        expect_block_end();
      } else {
        if (target->kind != ExprKind::kName) fail_here("'='");
        s->kind = StmtKind::kSetBlock;
        s->names.push_back(target->name);
        if (at_op("|")) s->expr2 = parse_filters(make_name("__set_body__", line));
        expect_block_end();
        std::string end;
        s->body = parse_body({"endset"}, &end);
        expect_block_end();
      }
    } else if (k == "macro") {
      s->kind = StmtKind::kMacro;
      s->names.push_back(expect_name());
      parse_params(s.get());
      expect_block_end();
      std::string end;
      s->body = parse_body({"endmacro"}, &end);
      if (peek().kind == TokenKind::kName) next();  // {% endmacro name %}
      expect_block_end();
    } else if (k == "call") {
      s->kind = StmtKind::kCallBlock;
      s->names.push_back("caller");
      if (at_op("(")) parse_params(s.get());
      s->expr = parse_expression(true);
      if (s->expr->kind != ExprKind::kCall) throw_error(line, "call block needs a macro call");
      expect_block_end();
      std::string end;
      s->body = parse_body({"endcall"}, &end);
      expect_block_end();
    } else if (k == "filter") {
      s->kind = StmtKind::kFilterBlock;
      ExprPtr base = make_name("__filter_body__", line);
      s->expr = parse_filter_chain(std::move(base), /*first_needs_pipe=*/false);
      expect_block_end();
      std::string end;
      s->body = parse_body({"endfilter"}, &end);
      expect_block_end();
    } else if (k == "generation") {
      // HF's assistant-mask extension: renders its body unchanged.
      s->kind = StmtKind::kIf;
      expect_block_end();
      std::string end;
      Body body = parse_body({"endgeneration"}, &end);
      expect_block_end();
      s->branches.emplace_back(literal(Value(true), line), std::move(body));
    } else if (k == "break" || k == "continue") {
      s->kind = k == "break" ? StmtKind::kBreak : StmtKind::kContinue;
      expect_block_end();
    } else {
      throw_error(line, "unknown statement '" + k + "'");
    }
    return s;
  }

  void parse_params(Stmt* s) {
    expect_op("(");
    while (!at_op(")")) {
      s->names.push_back(expect_name());
      if (accept_op("=")) s->defaults.push_back(parse_expression(true));
      else s->defaults.push_back(nullptr);
      if (!accept_op(",")) break;
    }
    expect_op(")");
  }

  ExprPtr parse_assign_target() {
    int line = peek().line;
    std::string first = expect_name();
    if (accept_op(".")) {
      auto e = std::make_unique<Expr>();
      e->kind = ExprKind::kAttr;
      e->line = line;
      e->target = make_name(first, line);
      e->name = expect_name();
      return e;
    }
    if (at_op(",")) {
      auto e = std::make_unique<Expr>();
      e->kind = ExprKind::kTuple;
      e->line = line;
      e->args.push_back(make_name(first, line));
      while (accept_op(",")) {
        if (peek().kind != TokenKind::kName) break;
        e->args.push_back(make_name(expect_name(), line));
      }
      return e;
    }
    return make_name(first, line);
  }

  ExprPtr make_name(const std::string& name, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = ExprKind::kName;
    e->line = line;
    e->name = name;
    return e;
  }
  ExprPtr literal(Value v, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = ExprKind::kLiteral;
    e->line = line;
    e->value = std::move(v);
    return e;
  }
  ExprPtr binary(const std::string& op, ExprPtr a, ExprPtr b, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = ExprKind::kBinary;
    e->line = line;
    e->name = op;
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return e;
  }

  // expression [, expression ...] -> tuple when a comma follows.
  ExprPtr parse_tuple(bool allow_ternary) {
    int line = peek().line;
    ExprPtr first = parse_expression(allow_ternary);
    if (!at_op(",")) return first;
    auto t = std::make_unique<Expr>();
    t->kind = ExprKind::kTuple;
    t->line = line;
    t->args.push_back(std::move(first));
    while (accept_op(",")) {
      if (peek().kind == TokenKind::kBlockEnd || peek().kind == TokenKind::kVarEnd || at_op(")")) break;
      t->args.push_back(parse_expression(allow_ternary));
    }
    return t;
  }

  ExprPtr parse_expression(bool allow_ternary) {
    DepthGuard guard(this);
    int line = peek().line;
    ExprPtr e = parse_or();
    if (allow_ternary && at_name("if")) {
      next();
      auto t = std::make_unique<Expr>();
      t->kind = ExprKind::kTernary;
      t->line = line;
      t->args.push_back(parse_or());
      t->args.push_back(std::move(e));
      if (accept_name("else")) t->args.push_back(parse_expression(true));
      else t->args.push_back(nullptr);
      return t;
    }
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (at_name("or")) {
      int line = next().line;
      e = binary("or", std::move(e), parse_and(), line);
    }
    return e;
  }
  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (at_name("and")) {
      int line = next().line;
      e = binary("and", std::move(e), parse_not(), line);
    }
    return e;
  }
  ExprPtr parse_not() {
    if (at_name("not")) {
      DepthGuard guard(this);
      int line = next().line;
      auto e = std::make_unique<Expr>();
      e->kind = ExprKind::kUnary;
      e->line = line;
      e->name = "not";
      e->args.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }
  ExprPtr parse_compare() {
    ExprPtr e = parse_math1();
    ExprPtr result;
    while (true) {
      int line = peek().line;
      std::string op;
      if (peek().kind == TokenKind::kOperator &&
          (peek().text == "==" || peek().text == "!=" || peek().text == "<" || peek().text == ">" ||
           peek().text == "<=" || peek().text == ">=")) {
        op = next().text;
      } else if (at_name("in")) {
        next();
        op = "in";
      } else if (at_name("not") && peek(1).kind == TokenKind::kName && peek(1).text == "in") {
        next();
        next();
        op = "not in";
      } else {
        break;
      }
      // Chained comparisons a < b < c become (a < b) and (b < c); b is parsed twice.
      size_t rhs_start = pos_;
      ExprPtr rhs = parse_math1();
      ExprPtr cmp = binary(op, std::move(e), std::move(rhs), line);
      result = result ? binary("and", std::move(result), std::move(cmp), line) : std::move(cmp);
      size_t rhs_end = pos_;
      pos_ = rhs_start;
      e = parse_math1();
      pos_ = rhs_end;
    }
    return result ? std::move(result) : std::move(e);
  }
  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (at_op("+") || at_op("-")) {
      const Token& t = next();
      e = binary(t.text, std::move(e), parse_concat(), t.line);
    }
    return e;
  }
  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    while (at_op("~")) {
      int line = next().line;
      e = binary("~", std::move(e), parse_math2(), line);
    }
    return e;
  }
  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
      const Token& t = next();
      e = binary(t.text, std::move(e), parse_pow(), t.line);
    }
    return e;
  }
  ExprPtr parse_pow() {
    ExprPtr e = parse_unary(true);
    while (at_op("**")) {
      int line = next().line;
      e = binary("**", std::move(e), parse_unary(true), line);
    }
    return e;
  }
  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(this);
    ExprPtr e;
    if (at_op("-") || at_op("+")) {
      const Token& t = next();
      e = std::make_unique<Expr>();
      e->kind = ExprKind::kUnary;
      e->line = t.line;
      e->name = t.text;
      e->args.push_back(parse_unary(false));
    } else {
      e = parse_postfix(parse_primary());
    }
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
  }

  ExprPtr parse_primary() {
    const Token& t = peek();
    int line = t.line;
    switch (t.kind) {
      case TokenKind::kString: {
        std::string s = next().text;
        while (peek().kind == TokenKind::kString) s += next().text;  // implicit concatenation
        return literal(Value(s), line);
      }
      case TokenKind::kInt: {
        std::string text = next().text;
        int64_t v = 0;
        for (char c : text) {
          if (v > (INT64_MAX - 9) / 10) throw_error(line, "integer literal too large");
          v = v * 10 + (c - '0');
        }
        return literal(Value(v), line);
      }
      case TokenKind::kFloat: return literal(Value(std::strtod(next().text.c_str(), nullptr)), line);
      case TokenKind::kName: {
        std::string n = next().text;
        if (n == "true" || n == "True") return literal(Value(true), line);
        if (n == "false" || n == "False") return literal(Value(false), line);
        if (n == "none" || n == "None") return literal(Value::none(), line);
        return make_name(n, line);
      }
      case TokenKind::kOperator: {
        if (accept_op("(")) {
          if (accept_op(")")) {
            auto e = std::make_unique<Expr>();
            e->kind = ExprKind::kTuple;
            e->line = line;
            return e;
          }
          ExprPtr e = parse_tuple(true);
          expect_op(")");
          return e;
        }
        if (accept_op("[")) {
          auto e = std::make_unique<Expr>();
          e->kind = ExprKind::kList;
          e->line = line;
          while (!at_op("]")) {
            e->args.push_back(parse_expression(true));
            if (!accept_op(",")) break;
          }
          expect_op("]");
          return e;
        }
        if (accept_op("{")) {
          auto e = std::make_unique<Expr>();
          e->kind = ExprKind::kDict;
          e->line = line;
          while (!at_op("}")) {
            e->args.push_back(parse_expression(true));
            expect_op(":");
            e->values.push_back(parse_expression(true));
            if (!accept_op(",")) break;
          }
          expect_op("}");
          return e;
        }
        break;
      }
      default: break;
    }
    fail_here("an expression");
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      int line = peek().line;
      if (accept_op(".")) {
        auto a = std::make_unique<Expr>();
        a->line = line;
        if (peek().kind == TokenKind::kInt) {
          a->kind = ExprKind::kItem;
          a->target = std::move(e);
          a->args.push_back(literal(Value(static_cast<int64_t>(std::stoll(next().text.substr(0, 18)))), line));
        } else {
          a->kind = ExprKind::kAttr;
          a->target = std::move(e);
          a->name = expect_name();
        }
        e = std::move(a);
      } else if (at_op("[")) {
        next();
        e = parse_subscript(std::move(e), line);
      } else if (at_op("(")) {
        auto c = std::make_unique<Expr>();
        c->kind = ExprKind::kCall;
        c->line = line;
        c->target = std::move(e);
        parse_call_args(c.get());
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr target, int line) {
    ExprPtr parts[3];
    bool is_slice = false;
    for (int i = 0; i < 3; ++i) {
      if (!at_op(":") && !at_op("]")) parts[i] = parse_expression(true);
      if (i < 2 && accept_op(":")) {
        is_slice = true;
        continue;
      }
      break;
    }
    expect_op("]");
    auto e = std::make_unique<Expr>();
    e->line = line;
    e->target = std::move(target);
    if (!is_slice) {
      if (!parts[0]) throw_error(line, "empty subscript");
      e->kind = ExprKind::kItem;
      e->args.push_back(std::move(parts[0]));
    } else {
      e->kind = ExprKind::kSlice;
      for (auto& p : parts) e->args.push_back(std::move(p));
    }
    return e;
  }

  void parse_call_args(Expr* call) {
    expect_op("(");
    while (!at_op(")")) {
      if (peek().kind == TokenKind::kName && peek(1).kind == TokenKind::kOperator && peek(1).text == "=") {
        std::string name = next().text;
        next();
        call->kwargs.emplace_back(name, parse_expression(true));
      } else {
        if (!call->kwargs.empty()) throw_error(peek().line, "positional argument after keyword argument");
        call->args.push_back(parse_expression(true));
      }
      if (!accept_op(",")) break;
    }
    expect_op(")");
  }

  ExprPtr parse_filters(ExprPtr e) { return parse_filter_chain(std::move(e), true); }

  ExprPtr parse_filter_chain(ExprPtr e, bool first_needs_pipe) {
    bool first = true;
    while (true) {
      if (first && !first_needs_pipe) {
        first = false;
      } else if (!accept_op("|")) {
        return e;
      }
      int line = peek().line;
      auto f = std::make_unique<Expr>();
      f->kind = ExprKind::kFilter;
      f->line = line;
      f->name = expect_name();
      while (accept_op(".")) {
        f->name += '.';
        f->name += expect_name();
      }
      f->target = std::move(e);
      if (at_op("(")) parse_call_args(f.get());
      e = std::move(f);
    }
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    while (true) {
      if (at_op("|")) {
        e = parse_filter_chain(std::move(e), true);
      } else if (at_name("is")) {
        int line = next().line;
        auto t = std::make_unique<Expr>();
        t->kind = ExprKind::kTest;
        t->line = line;
        t->negated = accept_name("not");
        t->name = expect_name();
        t->target = std::move(e);
        if (at_op("(")) {
          parse_call_args(t.get());
        } else if (test_argument_follows()) {
          t->args.push_back(parse_primary_with_postfix());
        }
        e = std::move(t);
      } else {
        return e;
      }
    }
  }

  // `x is divisibleby 3` / `x is equalto y`: one bare argument may follow a test name.
  bool test_argument_follows() const {
    const Token& t = peek();
    if (t.kind == TokenKind::kString || t.kind == TokenKind::kInt || t.kind == TokenKind::kFloat) return true;
    if (t.kind == TokenKind::kName) {
      static const std::set<std::string> kStop = {"and", "or", "else", "if", "in", "is", "not", "recursive"};
      return kStop.count(t.text) == 0;
    }
    return t.kind == TokenKind::kOperator && (t.text == "[" || t.text == "{");
  }
  ExprPtr parse_primary_with_postfix() { return parse_postfix(parse_primary()); }

  const std::vector<Token>& toks_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Body parse_tokens(const std::vector<Token>& tokens) { return Parser(tokens).parse_all(); }

}  // namespace hearth::jinja
