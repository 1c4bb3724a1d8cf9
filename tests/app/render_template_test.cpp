// Runs `hearth render-template` as a user would: a request on stdin, the prompt on stdout
// (byte-identical to the golden), template errors on stderr with file:line and exit status 1.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "common/test_paths.h"

namespace hearth {
namespace {

struct RunResult {
  int status = -1;
  std::string out;
};

// Runs `command` through the shell and returns its exit status and stdout.
RunResult run_shell(const std::string& command) {
  RunResult r;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) r.out.append(buf, n);
  int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = test::make_temp_dir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::string render_command(const std::string& tmpl, const std::string& stdin_path, const std::string& extra = "") {
  return std::string(HEARTH_EXE) + " render-template -t '" + tmpl + "' " + extra + " < '" + stdin_path + "'";
}

void expect_golden_case(const std::string& name, const std::string& case_name) {
  std::string base = test::templates_dir() + "/" + name;
  std::ifstream golden_file(base + ".golden.json");
  auto golden = nlohmann::ordered_json::parse(golden_file);
  const auto& c = golden.at(case_name);
  std::string request = write_temp("request.json", c.at("request").dump());
  RunResult r = run_shell(render_command(base + ".jinja", request, "--date 2026-11-21 --bos '<s>' --eos '</s>'") + " 2>/dev/null");
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
  RunResult r = run_shell(render_command(tmpl, request) + " 2>&1");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "hearth render-template: " + tmpl + ":2: no way\n");
}

TEST(RenderTemplateCommand, SyntaxErrorIsReported) {
  std::string tmpl = write_temp("bad.jinja", "ok\n\n{% if %}\n");
  std::string request = write_temp("request.json", R"({"messages":[]})");
  RunResult r = run_shell(render_command(tmpl, request) + " 2>&1");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find(tmpl + ":3: "), std::string::npos) << r.out;
}

TEST(RenderTemplateCommand, BadJsonOnStdinIsAnError) {
  std::string tmpl = write_temp("t.jinja", "{{ messages[0].content }}");
  std::string request = write_temp("request.json", "{not json");
  RunResult r = run_shell(render_command(tmpl, request) + " 2>&1");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("not valid JSON"), std::string::npos) << r.out;
}

TEST(RenderTemplateCommand, PrintsNoExtraNewlineAndUsesDefaults) {
  std::string tmpl = write_temp("t.jinja", "{{ bos_token }}[{{ messages[0].content }}]{{ eos_token }}|{{ strftime_now('%Y') | length }}");
  std::string request = write_temp("request.json", R"({"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]})");
  RunResult r = run_shell(render_command(tmpl, request));
  EXPECT_EQ(r.status, 0);
  // The leading bos_token is dropped (the tokenizer adds it); the default eos is "</s>".
  EXPECT_EQ(r.out, "[ab]</s>|4");
}

TEST(RenderTemplateCommand, RejectsBadDate) {
  std::string tmpl = write_temp("t.jinja", "x");
  std::string request = write_temp("request.json", R"({"messages":[]})");
  RunResult r = run_shell(render_command(tmpl, request, "--date 2026-02-30") + " 2>&1");
  EXPECT_EQ(r.status, 2);
}

}  // namespace
}  // namespace hearth
