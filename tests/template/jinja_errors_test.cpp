// Behaviour that Python Jinja under HF's sandbox cannot produce as a reference: the list/dict
// mutation methods templates use, Undefined chaining, errors as values with line numbers, and
// the limits that keep hostile templates from hanging or exhausting memory.
#include <gtest/gtest.h>

#include <string>

#include "template/jinja_template.h"

namespace hearth::jinja {
namespace {

std::string render_ok(const std::string& source, const char* context = "{}", const RenderOptions& options = {}) {
  auto t = Template::parse(source, "t.jinja");
  EXPECT_TRUE(t.ok()) << t.error().message;
  if (!t.ok()) return "";
  auto out = t->render(nlohmann::ordered_json::parse(context), options);
  EXPECT_TRUE(out.ok()) << out.error().message;
  return out.ok() ? *out : "";
}

// The error message of parsing or rendering `source` (empty if it succeeded).
std::string render_error(const std::string& source, const RenderOptions& options = {}) {
  auto t = Template::parse(source, "t.jinja");
  if (!t.ok()) return t.error().message;
  auto out = t->render(nlohmann::ordered_json::object(), options);
  return out.ok() ? "" : out.error().message;
}

TEST(JinjaMethods, ListMutation) {
  EXPECT_EQ(render_ok("{% set l = [1] %}{% set _ = l.append(2) %}{% set _ = l.extend([3, 4]) %}{{ l }}|{{ l.pop() }}|"
                      "{{ l.pop(0) }}|{{ l }}|{{ l.index(3) }}"),
            "[1, 2, 3, 4]|4|1|[2, 3]|1");
}

TEST(JinjaMethods, DictMethods) {
  EXPECT_EQ(render_ok("{% set d = {'a': 1} %}{{ d.get('a') }}|{{ d.get('z', 9) }}|{{ d.get('z') }}|{{ d.keys() | list }}|"
                      "{{ d.values() | list }}|{% set _ = d.update({'b': 2}) %}{{ d }}|{% for k, v in d.items() %}{{ k }}{{ v }}{% endfor %}"),
            "1|9||['a']|[1]|{'a': 1, 'b': 2}|a1b2");
}

TEST(JinjaUndefined, AttributeOfUndefinedIsUndefined) {
  EXPECT_EQ(render_ok("[{{ a.b.c }}]{{ a.b is defined }}{{ a['x'] is undefined }}"), "[]FalseTrue");
}

TEST(JinjaUndefined, CallingOrDoingArithmeticErrors) {
  EXPECT_EQ(render_error("{{ nope() }}"), "t.jinja:1: 'nope' is undefined");
  EXPECT_NE(render_error("{{ nope + 1 }}"), "");
  EXPECT_NE(render_error("{{ none.split(',') }}"), "");
}

TEST(JinjaErrors, SyntaxErrorsCarryLineNumbers) {
  EXPECT_EQ(render_error("a\nb\n{% if x %}\n"), "t.jinja:4: unexpected end of template; expected 'elif'");
  EXPECT_EQ(render_error("\n{{ 1 + }}"), "t.jinja:2: expected an expression, got '}}'");
  EXPECT_EQ(render_error("{% frobnicate %}"), "t.jinja:1: unknown statement 'frobnicate'");
  EXPECT_EQ(render_error("x\n{{ 'unterminated }}"), "t.jinja:2: unterminated string literal");
  EXPECT_EQ(render_error("{# never closed"), "t.jinja:1: unterminated comment");
  EXPECT_EQ(render_error("{% endif %}"), "t.jinja:1: unknown statement 'endif'");
}

TEST(JinjaErrors, RuntimeErrorsCarryLineNumbers) {
  EXPECT_EQ(render_error("ok\n\n{{ raise_exception('Bad role') }}"), "t.jinja:3: Bad role");
  EXPECT_EQ(render_error("\n{{ 1 // 0 }}"), "t.jinja:2: integer division or modulo by zero");
  EXPECT_EQ(render_error("{{ 'a' - 1 }}"), "t.jinja:1: unsupported operand type(s) for -: 'str' and 'int'");
  EXPECT_EQ(render_error("{{ 'a' + [1] }}"), "t.jinja:1: unsupported operand type(s) for +: 'str' and 'list'");
  EXPECT_EQ(render_error("{{ x | nosuchfilter }}"), "t.jinja:1: no filter named 'nosuchfilter'");
  EXPECT_EQ(render_error("{{ 1 is nosuchtest }}"), "t.jinja:1: no test named 'nosuchtest'");
  EXPECT_EQ(render_error("{% set x = 1 %}{% set x.y = 2 %}"), "t.jinja:1: cannot assign attribute 'y' on a non-namespace object");
}

// Where llama.cpp's engine (the reference for the goldens) departs from Python Jinja2, real
// templates were written against it: none counts as undefined for `defined`/`none`, loops and
// select filters see none as empty, trim/lower/upper keep none, and `+` with a string joins any
// scalar ("None" for undefined/none).
TEST(JinjaReference, NoneAndUndefinedAsTheReferenceEngine) {
  const char* ctx = R"({"m": {"content": null, "tools": null}})";
  EXPECT_EQ(render_ok("{{ m.content is defined }}|{{ m.content is none }}|{{ nope is none }}|{{ m.content is undefined }}|"
                      "{{ m.content is not none }}", ctx),
            "False|True|True|True|False");
  EXPECT_EQ(render_ok("[{% for t in m.tools %}x{% else %}empty{% endfor %}]|{{ m.tools | selectattr('type') | list }}|"
                      "{{ m.tools | rejectattr('type', 'equalto', 'x') | list | length }}", ctx),
            "[empty]|[]|0");
  EXPECT_EQ(render_ok("[{{ m.content | trim }}]|{{ m.content | upper is none }}|{{ 'a' + 1 }}|{{ 'f=' + nope }}|{{ true + '!' }}", ctx),
            "[]|True|a1|f=None|True!");
  EXPECT_EQ(render_ok("[{{ none }}][{{ m.content }}]{{ none ~ '' }}", ctx), "[][]None");
  EXPECT_NE(render_error("{{ none.split(',') }}"), "");
}

TEST(JinjaErrors, MacroOutlivingItsScopeIsAnError) {
  EXPECT_EQ(render_error("{% set ns = namespace() %}{% for x in [1] %}{% macro m() %}{{ x }}{% endmacro %}"
                         "{% set ns.m = m %}{% endfor %}{{ ns.m() }}"),
            "t.jinja:1: 'm' called after its scope ended");
  EXPECT_EQ(render_ok("{% for x in [7] %}{% macro m() %}{{ x }}{% endmacro %}{{ m() }}{% endfor %}"), "7");
}

TEST(JinjaLimits, InfiniteWorkStops) {
  RenderOptions options;
  options.max_steps = 100000;
  EXPECT_NE(render_error("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}", options)
                .find("step limit"),
            std::string::npos);
}

TEST(JinjaLimits, RecursionStops) {
  EXPECT_NE(render_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").find("recursion"), std::string::npos);
}

TEST(JinjaLimits, OutputAndValueSizeAreBounded) {
  RenderOptions options;
  options.max_output_bytes = 1000;
  EXPECT_NE(render_error("{% for i in range(1000) %}xxxxxxxxxx{% endfor %}", options).find("size limit"), std::string::npos);
  EXPECT_NE(render_error("{{ 'x' * 1000000000 }}").find("too large"), std::string::npos);
  EXPECT_NE(render_error("{{ range(1000000000) | length }}").find("too large"), std::string::npos);
}

TEST(JinjaLimits, DeepNestingIsAnErrorNotACrash) {
  std::string deep(5000, '(');
  EXPECT_NE(render_error("{{ " + deep + " }}").find("nested too deeply"), std::string::npos);
  std::string ifs;
  for (int i = 0; i < 1000; ++i) ifs += "{% if true %}";
  EXPECT_NE(render_error(ifs).find("nested too deeply"), std::string::npos);
}

TEST(JinjaGlobals, StrftimeNowUsesInjectedDate) {
  RenderOptions options;
  std::tm date{};
  date.tm_year = 2026 - 1900;
  date.tm_mon = 10;
  date.tm_mday = 21;
  date.tm_wday = 6;
  options.now = date;
  EXPECT_EQ(render_ok("{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%Y-%m-%d') }}|{{ strftime_now('%A') }}", "{}", options),
            "21 Nov 2026|2026-11-21|Saturday");
}

TEST(JinjaGlobals, NamespaceAndContext) {
  EXPECT_EQ(render_ok("{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}"
                      "{{ bos_token }}",
                      R"({"messages": [1, 2, 3], "bos_token": "<s>"})"),
            "3<s>");
}

TEST(JinjaWhitespace, HfStyleChatLoop) {
  const std::string src =
      "{%- for message in messages %}\n"
      "    {%- if message.role == 'user' %}\n"
      "        {{- '<u>' + message.content }}\n"
      "    {%- else %}\n"
      "        {{- '<a>' + message.content }}\n"
      "    {%- endif %}\n"
      "{%- endfor %}\n"
      "{%- if add_generation_prompt %}\n"
      "    {{- '<a>' }}\n"
      "{%- endif %}\n";
  EXPECT_EQ(render_ok(src, R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
                              "add_generation_prompt": true})"),
            "<u>hi<a>yo<a>");
}

}  // namespace
}  // namespace hearth::jinja
