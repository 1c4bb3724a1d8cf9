// `hearth tokenize` run as a user would: output format (plain and --json), --no-bos, stdin
// input, --parse-special, and a clean error for a missing model.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "app/hearth_process.h"
#include "common/test_paths.h"

namespace {

using hearth::test::run_hearth;

TEST(TokenizeCommand, PrintsIdsWithBos) {
  const std::string model = hearth::test::models_dir() + "/llama2-tiny-random-f16.gguf";
  HEARTH_REQUIRE_FILE(model);
  auto r = run_hearth("tokenize -m " + model + " 'Hello world'");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "1 15043 3186\n");
  r = run_hearth("tokenize -m " + model + " --no-bos 'Hello world'");
  EXPECT_EQ(r.out, "15043 3186\n");
  r = run_hearth("tokenize -m " + model + " --json 'Hello world'");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(nlohmann::json::parse(r.out), nlohmann::json::parse("[1,15043,3186]"));
  EXPECT_EQ(r.out.back(), '\n');
}

TEST(TokenizeCommand, ReadsStdinWhenNoText) {
  const std::string model = hearth::test::models_dir() + "/llama2-tiny-random-f16.gguf";
  HEARTH_REQUIRE_FILE(model);
  const std::string hello = "Hello world", empty;
  auto r = run_hearth("tokenize -m " + model + " --json", &hello);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(nlohmann::json::parse(r.out), nlohmann::json::parse("[1,15043,3186]"));
  r = run_hearth("tokenize -m " + model + " --no-bos --json", &empty);
  EXPECT_EQ(r.out, "[]\n");
}

TEST(TokenizeCommand, ParseSpecialFlag) {
  const std::string model = hearth::test::models_dir() + "/random/phi3-F32.gguf";
  HEARTH_REQUIRE_FILE(model);
  auto with = run_hearth("tokenize -m " + model + " --no-bos --parse-special --json '<|assistant|>'");
  EXPECT_EQ(with.status, 0);
  EXPECT_EQ(nlohmann::json::parse(with.out), nlohmann::json::parse("[1185]"));
  auto without = run_hearth("tokenize -m " + model + " --no-bos --json '<|assistant|>'");
  const auto ids = nlohmann::json::parse(without.out);
  EXPECT_GT(ids.size(), 1u);
  for (const auto& id : ids) EXPECT_NE(id.get<int>(), 1185);
}

TEST(TokenizeCommand, MissingModelIsAnError) {
  auto r = run_hearth("tokenize -m /nonexistent/model.gguf hello");
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(r.out.empty());
  r = run_hearth("tokenize hello");
  EXPECT_NE(r.status, 0);
}

}  // namespace
