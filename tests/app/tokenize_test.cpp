// `hearth tokenize` run as a user would: output format (plain and --json), --no-bos, stdin
// input, --parse-special, and a clean error for a missing model.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "common/test_paths.h"

namespace {

struct RunResult {
  int status;
  std::string out;
};

RunResult run_shell(const std::string& cmd) {
  RunResult r{-1, {}};
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string exe() { return HEARTH_EXE; }

TEST(TokenizeCommand, PrintsIdsWithBos) {
  const std::string model = hearth::test::models_dir() + "/llama2-tiny-random-f16.gguf";
  HEARTH_REQUIRE_FILE(model);
  auto r = run_shell(exe() + " tokenize -m " + model + " 'Hello world'");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "1 15043 3186\n");
  r = run_shell(exe() + " tokenize -m " + model + " --no-bos 'Hello world'");
  EXPECT_EQ(r.out, "15043 3186\n");
  r = run_shell(exe() + " tokenize -m " + model + " --json 'Hello world'");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(nlohmann::json::parse(r.out), nlohmann::json::parse("[1,15043,3186]"));
  EXPECT_EQ(r.out.back(), '\n');
}

TEST(TokenizeCommand, ReadsStdinWhenNoText) {
  const std::string model = hearth::test::models_dir() + "/llama2-tiny-random-f16.gguf";
  HEARTH_REQUIRE_FILE(model);
  auto r = run_shell("printf 'Hello world' | " + exe() + " tokenize -m " + model + " --json");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(nlohmann::json::parse(r.out), nlohmann::json::parse("[1,15043,3186]"));
  r = run_shell("printf '' | " + exe() + " tokenize -m " + model + " --no-bos --json");
  EXPECT_EQ(r.out, "[]\n");
}

TEST(TokenizeCommand, ParseSpecialFlag) {
  const std::string model = hearth::test::models_dir() + "/random/phi3-F32.gguf";
  HEARTH_REQUIRE_FILE(model);
  auto with = run_shell(exe() + " tokenize -m " + model + " --no-bos --parse-special --json '<|assistant|>'");
  EXPECT_EQ(with.status, 0);
  EXPECT_EQ(nlohmann::json::parse(with.out), nlohmann::json::parse("[1185]"));
  auto without = run_shell(exe() + " tokenize -m " + model + " --no-bos --json '<|assistant|>'");
  const auto ids = nlohmann::json::parse(without.out);
  EXPECT_GT(ids.size(), 1u);
  for (const auto& id : ids) EXPECT_NE(id.get<int>(), 1185);
}

TEST(TokenizeCommand, MissingModelIsAnError) {
  auto r = run_shell(exe() + " tokenize -m /nonexistent/model.gguf hello 2>/dev/null");
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(r.out.empty());
  r = run_shell(exe() + " tokenize hello 2>/dev/null");
  EXPECT_NE(r.status, 0);
}

}  // namespace
