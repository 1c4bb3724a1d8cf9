// Containers that hold themselves or nest very deep: a template can build both (the fuzzer found
// `{% set ns.total = ns %}`), and each must render, print as Python prints it or fail with an
// error, never overflow the stack or leak (this suite runs under LeakSanitizer in CI).
#include <gtest/gtest.h>

#include <string>

#include "template/jinja_heap.h"
#include "template/jinja_template.h"

namespace hearth::jinja {
namespace {

Result<std::string> render(const std::string& source, const nlohmann::ordered_json& context = nlohmann::ordered_json::object()) {
  auto t = Template::parse(source, "t.jinja");
  if (!t.ok()) return t.error();
  return t->render(context);
}

std::string render_ok(const std::string& source) {
  auto out = render(source);
  EXPECT_TRUE(out.ok()) << out.error().message;
  return out.ok() ? *out : "";
}

std::string render_error(const std::string& source, const nlohmann::ordered_json& context = nlohmann::ordered_json::object()) {
  auto out = render(source, context);
  return out.ok() ? "" : out.error().message;
}

TEST(JinjaHeap, ContainerInsideItselfPrintsAsPythonDoes) {
  EXPECT_EQ(render_ok("{% set l = [1] %}{% set _ = l.append(l) %}{{ l }}|{{ l[1][1][0] }}|{{ l | length }}"), "[1, [...]]|1|2");
  EXPECT_EQ(render_ok("{% set d = {'a': 1} %}{% set _ = d.update({'me': d}) %}{{ d }}|{{ d.me.me.a }}"),
            "{'a': 1, 'me': {...}}|1");
  // The fuzzer's case: a namespace holding itself, printed through the attribute.
  EXPECT_EQ(render_ok("{% set ns = namespace(total=0) %}{% for x in [1, 2] %}{% set ns.total = ns %}{% endfor %}"
                      "{{ ns.total.total is defined }}"),
            "True");
  EXPECT_EQ(render_ok("{% set a = [] %}{% set b = [a] %}{% set _ = a.append(b) %}{{ a }}"), "[[[...]]]");
}

TEST(JinjaHeap, WalkingACycleIsAnErrorNotACrash) {
  std::string cycle = "{% set l = [1] %}{% set _ = l.append(l) %}";
  EXPECT_NE(render_error(cycle + "{{ l | tojson }}").find("nested too deeply"), std::string::npos);
  EXPECT_NE(render_error(cycle + "{% set m = [1] %}{% set _ = m.append(m) %}{{ l == m }}").find("nested too deeply"),
            std::string::npos);
  // Python's identity shortcut: the same container is equal to itself without a walk.
  EXPECT_EQ(render_ok(cycle + "{{ l in [l] }}{{ l == l }}{{ [l] == [l] }}"), "TrueTrueTrue");
}

TEST(JinjaHeap, BoundMethodStoredInItsOwnListIsFreed) {
  // The cycle runs through a callable's capture, not through visible items; LeakSanitizer checks.
  EXPECT_EQ(render_ok("{% set l = [] %}{% set f = l.append %}{% set _ = l.append(f) %}{{ l | length }}"), "1");
}

TEST(JinjaHeap, DeepChainIsReleasedWithoutRecursion) {
  // Each level is one step; released recursively, this chain overflows an 8 MiB stack.
  EXPECT_EQ(render_ok("{% set ns = namespace(x=0) %}{% for i in range(300000) %}{% set ns.x = [ns.x] %}{% endfor %}"
                      "{% set ns.x = 0 %}released|{% set ns.y = {'a': 1} %}{% for i in range(300000) %}"
                      "{% set ns.y = {'a': ns.y} %}{% endfor %}kept to the end"),
            "released|kept to the end");
  EXPECT_NE(render_error("{% set ns = namespace(x=0) %}{% for i in range(1000) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}")
                .find("nested too deeply"),
            std::string::npos);
}

TEST(JinjaHeap, NestedListsCompareInLinearTime) {
  // Two comparisons per level made this 2^60 steps.
  EXPECT_EQ(render_ok("{% set ns = namespace(a=1, b=2) %}{% for i in range(60) %}{% set ns.a = [ns.a] %}"
                      "{% set ns.b = [ns.b] %}{% endfor %}{{ ns.a < ns.b }}{{ ns.b < ns.a }}{{ [[1], 2] < [[1], 3] }}"),
            "TrueFalseTrue");
}

TEST(JinjaHeap, ContextNestedTooDeeplyIsAnError) {
  nlohmann::ordered_json deep = 1;
  for (int i = 0; i < 100000; ++i) deep = nlohmann::ordered_json::array({std::move(deep)});
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  context["messages"] = std::move(deep);  // moved: copying it would recurse 100,000 levels here
  EXPECT_NE(render_error("{{ messages | length }}", context).find("nested too deeply"), std::string::npos);
  nlohmann::ordered_json fine = 1;
  for (int i = 0; i < 100; ++i) fine = nlohmann::ordered_json::array({std::move(fine)});
  auto out = render("{{ messages | tojson | length }}", {{"messages", fine}});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(*out, "201");
}

TEST(JinjaHeap, ArenaEmptiesWhatOutlivesItAndNestedArenasRestore) {
  std::weak_ptr<ValueList> survivor;
  std::shared_ptr<ValueList> held;
  {
    ContainerArena outer;
    {
      ContainerArena inner;
      held = adopt_list({Value(1), Value(2)});
    }
    EXPECT_TRUE(held->empty());  // the inner arena emptied it
    auto list = adopt_list({Value(3)});
    list->push_back(Value::list({Value(4)}));
    survivor = list;
    held = list;
  }
  ASSERT_FALSE(survivor.expired());
  EXPECT_TRUE(held->empty());  // the outer arena, active again after the inner one, tracked it
  auto untracked = adopt_list({Value(5)});
  EXPECT_EQ(untracked->size(), 1u);  // no arena: nothing empties it
}

}  // namespace
}  // namespace hearth::jinja
