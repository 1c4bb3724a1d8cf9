// Runs `hearth render-template` as a user would: a request on stdin, the prompt on stdout
// (byte-identical to the golden), template errors on stderr with file:line and exit status 1.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "app/hearth_process.h"
#include "common/test_paths.h"

namespace hearth {
namespace {

using test::HearthRun;
using test::run_hearth;
using test::shell_quote;

std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = test::make_temp_dir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// Runs render-template with the request file's text on stdin.
HearthRun render(const std::string& tmpl, const std::string& stdin_path, const std::string& extra = "") {
  std::ifstream in(stdin_path, std::ios::binary);
  const std::string request((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return run_hearth("render-template -t " + shell_quote(tmpl) + " " + extra, &request);
}

void expect_golden_case(const std::string& name, const std::string& case_name) {
  std::string base = test::templates_dir() + "/" + name;
  std::ifstream golden_file(base + ".golden.json");
  auto golden = nlohmann::ordered_json::parse(golden_file);
  const auto& c = golden.at(case_name);
  std::string request = write_temp("request.json", c.at("request").dump());
  HearthRun r = render(base + ".jinja", request, "--date 2026-11-21 --bos '<s>' --eos '</s>'");
  if (c.contains("error")) {
    EXPECT_EQ(r.status, 1) << name << " " << case_name;
    EXPECT_TRUE(r.out.empty());
  } else {
    EXPECT_EQ(r.status, 0) << name << " " << case_name;
    EXPECT_EQ(r.out, c.at("prompt").get<std::string>()) << name << " " << case_name;
  }
}

TEST(RenderTemplateCommand, MatchesGoldenPrompts) {
  HEARTH_REQUIRE_FILE(test::templates_dir() + "/meta-llama-Llama-3.1-8B-Instruct.golden.json");
  expect_golden_case("meta-llama-Llama-3.1-8B-Instruct", "tools");
  expect_golden_case("google-gemma-2-2b-it", "basic");
  expect_golden_case("Qwen-Qwen2.5-7B-Instruct", "nosystem_unicode_nogen");
  expect_golden_case("mistralai-Mistral-Nemo-Instruct-2407", "tools");
}

TEST(RenderTemplateCommand, TemplateErrorNamesFileAndLine) {
  std::string tmpl = write_temp("bad.jinja", "line one\n{{ raise_exception('no way') }}\n");
  std::string request = write_temp("request.json", R"({"messages":[{"role":"user","content":"hi"}]})");
  HearthRun r = render(tmpl, request);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "hearth render-template: " + tmpl + ":2: no way\n");
}

TEST(RenderTemplateCommand, SyntaxErrorIsReported) {
  std::string tmpl = write_temp("bad.jinja", "ok\n\n{% if %}\n");
  std::string request = write_temp("request.json", R"({"messages":[]})");
  HearthRun r = render(tmpl, request);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find(tmpl + ":3: "), std::string::npos) << r.err;
}

TEST(RenderTemplateCommand, BadJsonOnStdinIsAnError) {
  std::string tmpl = write_temp("t.jinja", "{{ messages[0].content }}");
  std::string request = write_temp("request.json", "{not json");
  HearthRun r = render(tmpl, request);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("not valid JSON"), std::string::npos) << r.err;
}

TEST(RenderTemplateCommand, PrintsNoExtraNewlineAndUsesDefaults) {
  std::string tmpl = write_temp("t.jinja", "{{ bos_token }}[{{ messages[0].content }}]{{ eos_token }}|{{ strftime_now('%Y') | length }}");
  std::string request = write_temp("request.json", R"({"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]})");
  HearthRun r = render(tmpl, request);
  EXPECT_EQ(r.status, 0);
  // The leading bos_token is dropped (the tokenizer adds it); the default eos is "</s>".
  EXPECT_EQ(r.out, "[ab]</s>|4");
}

TEST(RenderTemplateCommand, RejectsBadDate) {
  std::string tmpl = write_temp("t.jinja", "x");
  std::string request = write_temp("request.json", R"({"messages":[]})");
  HearthRun r = render(tmpl, request, "--date 2026-02-30");
  EXPECT_EQ(r.status, 2);
}

}  // namespace
}  // namespace hearth
