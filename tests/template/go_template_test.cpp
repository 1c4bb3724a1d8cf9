// The Go-template subset used by ollama's `template` override.
#include <gtest/gtest.h>

#include "template/go_template.h"

namespace hearth {
namespace {

TEST(GoTemplate, SubstitutesAndBranches) {
  const std::string t =
      "{{ if .System }}<|system|>\n{{ .System }}<|end|>\n{{ end }}<|user|>\n{{ .Prompt }}<|end|>\n<|assistant|>\n";
  auto with_system = render_go_template(t, {{"System", "Be brief."}, {"Prompt", "Hi"}});
  ASSERT_TRUE(with_system.ok()) << with_system.error().message;
  EXPECT_EQ(*with_system, "<|system|>\nBe brief.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\n");
  auto without = render_go_template(t, {{"Prompt", "Hi"}});
  ASSERT_TRUE(without.ok());
  EXPECT_EQ(*without, "<|user|>\nHi<|end|>\n<|assistant|>\n");
}

TEST(GoTemplate, ElseTrimAndComments) {
  auto r = render_go_template("A  {{- if .Suffix -}}  S={{ .Suffix }}{{- else -}}  none  {{- end }} {{/* note */}}B",
                              {{"Prompt", "p"}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, "Anone B");
  auto s = render_go_template("{{if .Suffix}}[{{.Suffix}}]{{end}}", {{"Suffix", "x"}});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, "[x]");
}

TEST(GoTemplate, RefusesWhatItCannotRender) {
  const char* bad[] = {
      "{{ range .Messages }}{{ .Content }}{{ end }}",
      "{{ .Messages }}",
      "{{ if .System }}never closed",
      "{{ end }}",
      "{{ .Prompt ",
      "{{ json .Prompt }}",
      "{{/* unclosed }}",
  };
  for (const char* t : bad) {
    auto r = render_go_template(t, {{"Prompt", "p"}});
    ASSERT_FALSE(r.ok()) << t;
    EXPECT_EQ(r.error().kind, ErrorKind::kInvalidArgument);
    EXPECT_EQ(r.error().message.rfind("template: ", 0), 0u) << r.error().message;
  }
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "{{if .Prompt}}";
  EXPECT_FALSE(render_go_template(deep, {{"Prompt", "p"}}).ok());
}

}  // namespace
}  // namespace hearth

namespace hearth {
namespace {

TEST(GoTemplateChat, RendersTurnsAndStopsWhereTheResponseStarts) {
  const std::string t = "{{ if .System }}<s>{{ .System }}</s>{{ end }}[U]{{ .Prompt }}[A]{{ .Response }}[END]";
  auto out = render_go_template_chat(t, {{"system", "sys"}, {"user", "hi"}, {"assistant", "hello"}, {"user", "again"}});
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  EXPECT_EQ(*out, "<s>sys</s>[U]hi[A]hello[END][U]again[A]");
  auto one = render_go_template_chat("{{ .Prompt }}", {{"user", "x"}});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, "x");
  EXPECT_FALSE(render_go_template_chat("{{ range .Messages }}{{ end }}", {{"user", "x"}}).ok());
}

}  // namespace
}  // namespace hearth
