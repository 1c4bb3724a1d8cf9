// `hearth generate`, `hearth perplexity` and `hearth embed` as a user runs them: the JSON form
// of generate (which outside checks read) against llama.cpp's greedy golden, streaming text
// with speeds, grammar-constrained output, perplexity against the reference, and clear errors
// for bad input.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "app/hearth_process.h"
#include "common/test_paths.h"

namespace hearth::test {
namespace {

std::string stories() { return models_dir() + "/stories260K-llama-f32.gguf"; }

TEST(GenerateCommand, JsonGreedyMatchesGolden) {
  const std::string ref_path = reference_dir() + "/llama-F32/once-upon-a-time.json";
  const std::string model = models_dir() + "/random/llama-F32.gguf";
  HEARTH_REQUIRE_FILE(model);
  HEARTH_REQUIRE_FILE(ref_path);
  std::ifstream in(ref_path);
  auto ref = nlohmann::json::parse(in);
  auto r = run_hearth("generate -m " + shell_quote(model) + " -p " + shell_quote(ref["prompt"].get<std::string>()) +
                      " -n 32 --temp 0 --ignore-eos --json");
  ASSERT_EQ(r.status, 0) << r.err;
  auto out = nlohmann::json::parse(r.out);
  EXPECT_EQ(out["prompt_tokens"], ref["tokens"]);
  auto tokens = out["tokens"].get<std::vector<int32_t>>();
  auto want = ref["greedy"]["tokens"].get<std::vector<int32_t>>();
  ASSERT_EQ(tokens.size(), 32u);
  EXPECT_EQ(tokens, want);
  EXPECT_TRUE(out["timings"]["predicted_per_second"].get<double>() > 0);
  EXPECT_TRUE(out.contains("text"));
}

TEST(GenerateCommand, StreamsTextAndSpeeds) {
  HEARTH_REQUIRE_FILE(stories());
  auto r = run_hearth("generate -m " + shell_quote(stories()) + " -p 'Once upon a time' -n 20 --temp 0");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("Once upon a time, there was a little girl named Lily.", 0), 0u) << r.out;
  EXPECT_NE(r.err.find("tokens/s"), std::string::npos) << r.err;
}

TEST(GenerateCommand, BadInputSaysWhatToDo) {
  auto missing = run_hearth("generate -p hi");
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("-m FILE.gguf"), std::string::npos);
  auto nofile = run_hearth("generate -m /nonexistent/x.gguf -p hi");
  EXPECT_EQ(nofile.status, 1);
  EXPECT_NE(nofile.err.find("/nonexistent/x.gguf"), std::string::npos);
  auto badtemp = run_hearth("generate -m x.gguf --temp warm");
  EXPECT_EQ(badtemp.status, 2);
  EXPECT_NE(badtemp.err.find("--temp"), std::string::npos);
}

// Ranges come from the settings table: a value outside one is a usage error (exit 2) that
// names the flag, the value and the range, before any model is loaded.
TEST(GenerateCommand, OutOfRangeOptionsAreUsageErrors) {
  struct Case {
    const char* flags;
    const char* message;
  };
  const Case cases[] = {
      {"-n -5", "option --n-predict: -5 is out of range (allowed: -1 to 2147483647)"},
      {"--top-k -3", "option --top-k: -3 is out of range (allowed: 0 to 2147483647)"},
      {"--temp -1", "option --temp: -1 is out of range (allowed: >= 0)"},
      {"--top-p 1.5", "option --top-p: 1.5 is out of range (allowed: 0 to 1)"},
      {"--mirostat 3", "option --mirostat: 3 is out of range (allowed: 0 to 2)"},
      {"--ctx-size -1", "option --ctx-size: -1 is out of range (allowed: 0 to 2147483647)"},
      {"-t -2", "option --threads: -2 is out of range"},
  };
  for (const auto& c : cases) {
    auto r = run_hearth(std::string("generate -m x.gguf -p hi ") + c.flags);
    EXPECT_EQ(r.status, 2) << c.flags << ": " << r.err;
    EXPECT_NE(r.err.find(std::string("hearth generate: ") + c.message), std::string::npos) << c.flags << ": " << r.err;
  }
  auto help = run_hearth("generate --help");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("top-k (0: off) (default: 40; range 0 to 2147483647)"), std::string::npos) << help.out;
}

// More threads than the machine has are lowered to its hardware threads with a warning; they
// used to abort the process (std::thread could not start tens of thousands of workers).
TEST(GenerateCommand, TooManyThreadsAreLoweredNotFatal) {
  HEARTH_REQUIRE_FILE(stories());
  auto r = run_hearth("generate -m " + shell_quote(stories()) + " -p 'Once upon a time' -n 4 --temp 0 -t 100000 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("setting lowered"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("setting=--threads given=100000"), std::string::npos) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["tokens"].size(), 4u);
}

TEST(GenerateCommand, GrammarFlagsConstrainTheOutput) {
  HEARTH_REQUIRE_FILE(stories());
  const std::string base = "generate -m " + shell_quote(stories()) + " -p 'Once upon a time' -n 60 --seed 4 --json ";
  auto text = run_hearth(base + "--grammar-text " + shell_quote("root ::= (\"yes\" | \"no\") \"!\""));
  ASSERT_EQ(text.status, 0) << text.err;
  auto out = nlohmann::json::parse(text.out);
  const std::string t = out["text"].get<std::string>();
  EXPECT_TRUE(t == "yes!" || t == "no!") << t;
  EXPECT_EQ(out["stop_reason"], "eog");  // the grammar is complete, nothing may follow

  const std::string dir = make_temp_dir();
  std::ofstream(dir + "/schema.json") << R"({"type":"object","properties":{"ok":{"type":"boolean"},"n":{"enum":[1,2,3]}},"required":["ok","n"]})";
  auto schema = run_hearth(base + "--json-schema " + shell_quote(dir + "/schema.json"));
  ASSERT_EQ(schema.status, 0) << schema.err;
  auto value = nlohmann::json::parse(nlohmann::json::parse(schema.out)["text"].get<std::string>());
  ASSERT_TRUE(value.is_object()) << value;
  EXPECT_EQ(value.size(), 2u);
  EXPECT_TRUE(value["ok"].is_boolean());
  EXPECT_TRUE(value["n"] == 1 || value["n"] == 2 || value["n"] == 3) << value;

  std::ofstream(dir + "/grammar.gbnf") << "root ::= [0-9]{3}\n";
  auto file = run_hearth(base + "--grammar " + shell_quote(dir + "/grammar.gbnf"));
  ASSERT_EQ(file.status, 0) << file.err;
  EXPECT_EQ(nlohmann::json::parse(file.out)["text"].get<std::string>().size(), 3u);

  auto both = run_hearth(base + "--grammar-text 'root ::= \"a\"' --json-schema " + shell_quote(dir + "/schema.json"));
  EXPECT_EQ(both.status, 2);
  EXPECT_NE(both.err.find("only one of"), std::string::npos) << both.err;
  std::ofstream(dir + "/bad.json") << R"({"type":"integer","maximum":4})";
  auto bad = run_hearth(base + "--json-schema " + shell_quote(dir + "/bad.json"));
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("unsupported keyword 'maximum'"), std::string::npos) << bad.err;
}

TEST(PerplexityCommand, MatchesReference) {
  HEARTH_REQUIRE_FILE(stories());
  auto r = run_hearth("perplexity -m " + shell_quote(stories()) + " -f " +
                      shell_quote(reference_dir() + "/stories-eval.txt") + " -c 128 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  auto out = nlohmann::json::parse(r.out);
  EXPECT_NEAR(out["ppl"].get<double>(), 5.5520, 0.01);
  EXPECT_EQ(out["n_chunks"], 18);
}

TEST(EmbedCommand, PrintsNormalisedVectors) {
  const std::string bert = models_dir() + "/random/bert-Q8_0.gguf";
  HEARTH_REQUIRE_FILE(bert);
  auto r = run_hearth("embed -m " + shell_quote(bert) + " --json hello 'good morning'");
  ASSERT_EQ(r.status, 0) << r.err;
  auto out = nlohmann::json::parse(r.out);
  ASSERT_EQ(out["embeddings"].size(), 2u);
  double norm = 0;
  for (double x : out["embeddings"][1]) norm += x * x;
  EXPECT_NEAR(norm, 1.0, 1e-4);
  EXPECT_EQ(out["embeddings"][0].size(), 256u);
}

}  // namespace
}  // namespace hearth::test
