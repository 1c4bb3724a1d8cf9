// Modelfile → /api/create request, as ollama's client builds it, and errors that name the line.
#include <gtest/gtest.h>

#include "cli/model_parameters.h"
#include "cli/modelfile.h"
#include "common/test_paths.h"
#include "util/file_io.h"

namespace hearth::cli {
namespace {

using Json = nlohmann::json;

Result<CreatePlan> plan_of(const std::string& text, const std::string& dir = ".", const std::string& quantize = "") {
  auto commands = parse_modelfile(text);
  if (!commands.ok()) return commands.error();
  return plan_create(*commands, dir, "mine", quantize);
}

TEST(Modelfile, EveryCommandBecomesItsField) {
  const std::string text =
      "# a comment\n"
      "from llama3.2\n"
      "PARAMETER temperature 0.7\n"
      "PARAMETER num_ctx 4096\n"
      "parameter stop \"<|eot_id|>\"\n"
      "PARAMETER stop <|end|>\n"
      "PARAMETER use_mmap false\n"
      "TEMPLATE \"\"\"{{ if .System }}<|system|>{{ .System }}{{ end }}\n"
      "<|user|>{{ .Prompt }}\"\"\"\n"
      "SYSTEM You are \"terse\".\n"
      "MESSAGE user Hi there\n"
      "MESSAGE assistant \"\"\"Hello,\n"
      "friend.\"\"\"\n"
      "LICENSE \"\"\"MIT\"\"\"\n"
      "REQUIRES 0.9.0\n";
  auto plan = plan_of(text, ".", "q4_K_M");
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const Json expected = {
      {"model", "mine"},
      {"stream", true},
      {"quantize", "q4_K_M"},
      {"from", "llama3.2"},
      {"parameters", {{"temperature", 0.7}, {"num_ctx", 4096}, {"stop", {"<|eot_id|>", "<|end|>"}}, {"use_mmap", false}}},
      {"template", "{{ if .System }}<|system|>{{ .System }}{{ end }}\n<|user|>{{ .Prompt }}"},
      {"system", "You are \"terse\"."},
      {"messages", {{{"role", "user"}, {"content", "Hi there"}}, {{"role", "assistant"}, {"content", "Hello,\nfriend."}}}},
      {"license", "MIT"},
      {"requires", "0.9.0"}};
  EXPECT_EQ(plan->request, expected) << plan->request.dump(2);
  EXPECT_TRUE(plan->model_file.empty());
}

TEST(Modelfile, LocalGgufIsUploadedNotNamed) {
  const std::string dir = test::make_temp_dir();
  ASSERT_TRUE(write_file_atomic(dir + "/tiny.gguf", "GGUF").ok());
  auto plan = plan_of("FROM ./tiny.gguf\nADAPTER tiny.gguf\n", dir);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->model_file, dir + "/./tiny.gguf");
  EXPECT_EQ(plan->adapter_files, std::vector<std::string>{dir + "/tiny.gguf"});
  EXPECT_FALSE(plan->request.contains("from"));
  EXPECT_EQ(upload_file_key(plan->model_file), "tiny.gguf");
}

TEST(Modelfile, ErrorsNameTheLine) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"FROM x\nPARAMETR temperature 1\n", "Modelfile line 2: unknown command 'PARAMETR'"},
      {"FROM x\n\nPARAMETER temperature hot\n", "Modelfile line 3: parameter 'temperature' takes a number, not 'hot'"},
      {"FROM x\nPARAMETER num_ctx 4k\n", "Modelfile line 2: parameter 'num_ctx' takes an integer, not '4k'"},
      {"FROM x\nPARAMETER colour blue\n", "Modelfile line 2: unknown parameter 'colour'"},
      {"FROM x\nMESSAGE robot hi\n", "Modelfile line 2: MESSAGE role must be system, user, assistant or tool, not 'robot'"},
      {"FROM x\nSYSTEM \"\"\"never\nclosed\n", "Modelfile line 2: the \"\"\" opened here is never closed"},
      {"FROM x\nSYSTEM \"open\n", "Modelfile line 2: unterminated quoted string"},
      {"FROM x\nFROM y\n", "Modelfile line 2: a second FROM"},
      {"FROM ./missing.gguf\n", "Modelfile line 1: no such file './missing.gguf'"},
      {"SYSTEM hi\n", "the Modelfile has no FROM line"},
      {"FROM\n", "Modelfile line 1: no value after FROM"},
  };
  for (const auto& c : cases) {
    auto plan = plan_of(c.text);
    ASSERT_FALSE(plan.ok()) << c.text;
    EXPECT_EQ(plan.error().message.rfind(c.message, 0), 0u) << plan.error().message;
  }
}

TEST(ModelParameters, TypedLikeOllamasOptions) {
  Json p = Json::object();
  EXPECT_TRUE(add_model_parameter(p, "seed", "-3").ok());
  EXPECT_TRUE(add_model_parameter(p, "top_p", "0.9").ok());
  EXPECT_TRUE(add_model_parameter(p, "penalize_newline", "TRUE").ok());
  EXPECT_TRUE(add_model_parameter(p, "stop", "a").ok());
  EXPECT_TRUE(add_model_parameter(p, "stop", "b").ok());
  EXPECT_EQ(p, (Json{{"seed", -3}, {"top_p", 0.9}, {"penalize_newline", true}, {"stop", {"a", "b"}}}));
  EXPECT_FALSE(add_model_parameter(p, "seed", "1.5").ok());
  EXPECT_FALSE(add_model_parameter(p, "top_p", "nan").ok());
  EXPECT_FALSE(add_model_parameter(p, "use_mmap", "yes").ok());
  EXPECT_FALSE(add_model_parameter(p, "num_predict", "99999999999999999999").ok());
}

}  // namespace
}  // namespace hearth::cli
