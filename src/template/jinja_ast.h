// The syntax tree of a parsed template: expressions (Expr) and statements (Stmt). Produced by
// jinja_parser, walked by jinja_evaluator; immutable once parsed and shared by renders.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "template/jinja_value.h"

namespace hearth::jinja {

enum class ExprKind {
  kLiteral,    // value
  kName,       // name
  kList,       // args
  kTuple,      // args
  kDict,       // args = keys, values = values
  kAttr,       // target.name
  kItem,       // target[args[0]]
  kSlice,      // target[args[0]:args[1]:args[2]] (null parts allowed)
  kCall,       // target(args, kwargs)
  kFilter,     // target | name(args, kwargs)
  kTest,       // target is [not] name(args)
  kUnary,      // name in {"-", "+", "not"}, args[0]
  kBinary,     // args[0] name args[1]; name is an operator, "and", "or", "in", "not in"
  kTernary,    // args[1] if args[0] else args[2] (args[2] may be null)
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  ExprKind kind = ExprKind::kLiteral;
  int line = 0;
  Value value;
  std::string name;
  ExprPtr target;
  std::vector<ExprPtr> args;
  std::vector<ExprPtr> values;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  bool negated = false;  // for kTest: "is not"
};

enum class StmtKind {
  kText,      // text
  kOutput,    // {{ expr }}
  kIf,        // branches (cond, body), else_body
  kFor,       // names in expr [if expr2]: body else else_body
  kSet,       // target = expr  (target is a name, tuple of names or attribute)
  kSetBlock,  // set names[0] %} body {% endset; filters in expr2 (target placeholder) may be null
  kMacro,     // names[0] = macro name; params names[1..], defaults aligned with params
  kCallBlock, // expr is the call; params names (caller args) and defaults; body is caller()
  kFilterBlock, // expr is a filter chain applied to a placeholder name "__filter_body__"
  kBreak,
  kContinue,
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  StmtKind kind = StmtKind::kText;
  int line = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr expr2;
  ExprPtr target;
  std::vector<std::string> names;
  std::vector<ExprPtr> defaults;  // macro/caller parameter defaults (null where none)
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
};

// Parses tokens of a template into its top-level statement list; throws JinjaError.
struct Token;
Body parse_tokens(const std::vector<Token>& tokens);

}  // namespace hearth::jinja
