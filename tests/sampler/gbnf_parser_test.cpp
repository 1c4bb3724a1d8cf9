// GBNF parsing and compilation: the notation llama.cpp documents is accepted (comments,
// multi-line rules, escapes, classes, every repetition form), and every kind of bad grammar is
// an error value that says where and why, never a crash or an endless loop.
#include <gtest/gtest.h>

#include <string>

#include "sampler/grammar/compiled_grammar.h"
#include "sampler/grammar/gbnf_parser.h"

namespace hearth::sampler {
namespace {

std::string compile_error(const std::string& text) {
  auto g = compile_gbnf(text);
  if (g.ok()) return "(compiled)";
  EXPECT_EQ(g.error().kind, ErrorKind::kInvalidArgument);
  return g.error().message;
}

TEST(GbnfParser, ReadsRulesAlternativesAndRepetitions) {
  auto ast = parse_gbnf(
      "# a comment line\n"
      "root ::= greeting (\" \" name)? \"!\"*   # trailing comment\n"
      "greeting ::= \"hi\" | \"hello\"\n"
      "name ::= [A-Z] [a-z]{1,8}\n");
  ASSERT_TRUE(ast.ok()) << ast.error().message;
  ASSERT_EQ(ast->rules.size(), 3u);
  EXPECT_EQ(ast->rules[0].name, "root");
  EXPECT_EQ(ast->rules[0].body.kind, GbnfExpr::Kind::kSequence);
  EXPECT_EQ(ast->rules[1].body.kind, GbnfExpr::Kind::kAlternation);
  EXPECT_EQ(ast->rules[1].body.children.size(), 2u);
  const GbnfExpr& name = ast->rules[2].body;
  ASSERT_EQ(name.children.size(), 2u);
  EXPECT_EQ(name.children[1].kind, GbnfExpr::Kind::kRepeat);
  EXPECT_EQ(name.children[1].min, 1u);
  EXPECT_EQ(name.children[1].max, 8u);
}

TEST(GbnfParser, EscapesAndClasses) {
  auto ast = parse_gbnf("root ::= \"\\n\\t\\\"\\\\\\x41\\u00e9\\U0001F600\" [^a-c\\]\\-] .\n");
  ASSERT_TRUE(ast.ok()) << ast.error().message;
  const GbnfExpr& seq = ast->rules[0].body;
  ASSERT_EQ(seq.children.size(), 3u);
  EXPECT_EQ(seq.children[0].text, std::u32string(U"\n\t\"\\A\u00e9\U0001F600"));
  const GbnfExpr& cls = seq.children[1];
  EXPECT_TRUE(cls.negated);
  ASSERT_EQ(cls.ranges.size(), 3u);
  EXPECT_EQ(cls.ranges[0].lo, U'a');
  EXPECT_EQ(cls.ranges[0].hi, U'c');
  EXPECT_EQ(cls.ranges[1].lo, U']');
  EXPECT_EQ(cls.ranges[2].lo, U'-');
  EXPECT_EQ(seq.children[2].kind, GbnfExpr::Kind::kAny);
}

TEST(GbnfParser, RepetitionForms) {
  auto ast = parse_gbnf("root ::= \"a\"{3} \"b\"{2,} \"c\"{,4} \"d\"{1,2} \"e\"+ \"f\"?\n");
  ASSERT_TRUE(ast.ok()) << ast.error().message;
  const auto& items = ast->rules[0].body.children;
  ASSERT_EQ(items.size(), 6u);
  const std::pair<uint32_t, uint32_t> want[] = {
      {3, 3}, {2, GbnfExpr::kUnbounded}, {0, 4}, {1, 2}, {1, GbnfExpr::kUnbounded}, {0, 1}};
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(items[i].kind, GbnfExpr::Kind::kRepeat) << i;
    EXPECT_EQ(items[i].min, want[i].first) << i;
    EXPECT_EQ(items[i].max, want[i].second) << i;
  }
}

TEST(GbnfParser, RulesSpanLinesInsideParenthesesAfterBarsAndWithLeadingBars) {
  const char* text =
      "root ::=\n"
      "  \"{\" (\n"
      "     item\n"
      "     (\",\" item)*\n"
      "  )? \"}\"\r\n"
      "item ::= \"x\" |\n"
      "         \"y\"\n"
      "       | \"z\"\n"
      "       | # empty alternative after a comment\n"
      "\n";
  auto g = compile_gbnf(text);
  ASSERT_TRUE(g.ok()) << g.error().message;
  auto ast = parse_gbnf(text);
  ASSERT_TRUE(ast.ok());
  ASSERT_EQ(ast->rules.size(), 2u);
  EXPECT_EQ(ast->rules[1].body.children.size(), 4u);  // x, y, z and the empty one
}

TEST(GbnfParser, ErrorsSayLineColumnAndReason) {
  EXPECT_EQ(compile_error("root ::= \"a\"\nfoo \"b\"\n"), "grammar: line 2, column 5: expected '::=' after the rule name 'foo', found '\"'");
  EXPECT_EQ(compile_error("root ::= \"abc\n"), "grammar: line 1, column 10: unterminated string literal");
  EXPECT_EQ(compile_error("root ::= [a-z\n"), "grammar: line 1, column 10: unterminated character class (missing ']')");
  EXPECT_EQ(compile_error("root ::= [z-a]\n"), "grammar: line 1, column 11: character range is reversed (its end comes before its start)");
  EXPECT_EQ(compile_error("root ::= \"a\" item\n"), "grammar: line 1, column 14: rule 'item' is not defined");
  EXPECT_EQ(compile_error("root ::= \"\\q\"\n"), "grammar: line 1, column 11: unknown escape '\\q'");
  EXPECT_EQ(compile_error("root ::= (\"a\" \"b\"\n"), "grammar: line 1, column 10: missing ')' for this '('");
  EXPECT_EQ(compile_error("root ::= \"a\")\n"), "grammar: line 1, column 13: unmatched ')'");
  EXPECT_EQ(compile_error("root ::= \"a\"{3,2}\n"), "grammar: line 1, column 13: repetition maximum 2 is below the minimum 3");
  EXPECT_EQ(compile_error("root ::= \"a\"{x}\n"), "grammar: line 1, column 13: expected a repetition count like {2}, {1,3}, {2,} or {,4}");
  EXPECT_EQ(compile_error("root ::= <|tok|>\n"), "grammar: line 1, column 10: token references (<...>) are not supported");
  EXPECT_EQ(compile_error("root ::= * \"a\"\n"), "grammar: line 1, column 10: '*' must follow an expression to repeat");
  EXPECT_EQ(compile_error("root ::= \"\\uD800\"\n"), "grammar: line 1, column 11: escape does not name a Unicode scalar value (surrogate or above U+10FFFF)");
  EXPECT_EQ(compile_error("root ::= \"\xC3\x28\"\n"), "grammar: line 1, column 11: invalid UTF-8");
  EXPECT_EQ(compile_error("root ::= \"a\" b ::= \"c\"\n"), "grammar: line 1, column 16: unexpected ':' (each rule must start on its own line)");
  EXPECT_EQ(compile_error("root ::= \"a\"\nroot ::= \"b\"\n"), "grammar: line 2, column 1: rule 'root' is defined twice");
  EXPECT_EQ(compile_error("item ::= \"a\"\n"), "grammar: there is no 'root' rule");
  EXPECT_EQ(compile_error("  # only a comment\n"), "grammar: the grammar is empty (it needs a 'root' rule)");
  EXPECT_EQ(compile_error("root ::= \"a\"{100001}\n"), "grammar: line 1, column 14: repetition count is larger than 100000");
  // Column counts characters, not bytes.
  EXPECT_EQ(compile_error("root ::= \"\xC3\xA9\" ?? x\n"), "grammar: line 1, column 17: rule 'x' is not defined");
}

TEST(GbnfParser, LeftRecursionIsAnErrorNotALoop) {
  EXPECT_EQ(compile_error("root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]\n"),
            "grammar: left recursion: rule 'expr' can reach itself before matching any input (expr -> expr); rewrite it "
            "with repetition, e.g. list ::= item (\",\" item)*");
  // Indirect, and through rules that may match nothing.
  EXPECT_NE(compile_error("root ::= a\na ::= b \"x\"\nb ::= c\nc ::= a | \"y\"\n").find("left recursion: rule 'a'"),
            std::string::npos);
  EXPECT_NE(compile_error("root ::= opt root \"x\" | \"y\"\nopt ::= \"z\"?\n").find("left recursion: rule 'root'"),
            std::string::npos);
  EXPECT_EQ(compile_error("root ::= (\"a\"?)*\n"),
            "grammar: rule 'root' repeats (with *, + or {m,}) an expression that can match the empty string, which "
            "would never finish");
  // Right recursion is fine.
  EXPECT_EQ(compile_error("root ::= \"a\" root | \"b\"\n"), "(compiled)");
}

TEST(GbnfParser, GrammarsThatCannotFinish) {
  EXPECT_EQ(compile_error("root ::= \"a\" root\n"), "grammar: 'root' cannot match any complete text");
  EXPECT_EQ(compile_error("root ::= [^\\x00-\\U0010FFFF]\n"), "grammar: 'root' cannot match any complete text");
  // An alternative that can never finish is dropped, the rest still works.
  auto g = compile_gbnf("root ::= \"a\" | \"b\" loop\nloop ::= \"c\" loop\n");
  ASSERT_TRUE(g.ok()) << g.error().message;
}

TEST(GbnfParser, HostileInputIsRefusedQuickly) {
  std::string deep = "root ::= ";
  for (int i = 0; i < 200; ++i) deep += "(";
  EXPECT_NE(compile_error(deep).find("nested deeper than 128"), std::string::npos);
  EXPECT_NE(compile_error("root ::= \"a\"***********\n").find("too many repetition operators"), std::string::npos);
  // Repetitions are expanded linearly, but there is a cap on the total.
  EXPECT_NE(compile_error("root ::= a{100000} b{100000} c{100000} d{100000} e{100000} f{100000}"
                          " g{100000} h{100000} i{100000} j{100000} k{100000} l{100000} m{100000} n{100000}"
                          " o{100000} p{100000} q{100000} r{100000} s{100000} t{100000} u{100000} v{100000}\n"
                          "a ::= \"a\"\nb ::= \"b\"\nc ::= \"c\"\nd ::= \"d\"\ne ::= \"e\"\nf ::= \"f\"\ng ::= \"g\"\n"
                          "h ::= \"h\"\ni ::= \"i\"\nj ::= \"j\"\nk ::= \"k\"\nl ::= \"l\"\nm ::= \"m\"\nn ::= \"n\"\n"
                          "o ::= \"o\"\np ::= \"p\"\nq ::= \"q\"\nr ::= \"r\"\ns ::= \"s\"\nt ::= \"t\"\nu ::= \"u\"\n"
                          "v ::= \"v\"\n")
                .find("too large once repetitions are expanded"),
            std::string::npos);
  EXPECT_EQ(compile_error("root ::= (\"ab\"{0,1000}){1000}\n"), "(compiled)");
}

}  // namespace
}  // namespace hearth::sampler
