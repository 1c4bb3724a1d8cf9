// Modelfile → /api/create request, as ollama's client builds it, and errors that name the line
// (the parser is the store's; its own cases are in tests/store/modelfile_test.cpp).
#include <gtest/gtest.h>

#include "cli/create_plan.h"
#include "common/test_paths.h"
#include "util/file_io.h"

namespace hearth::cli {
namespace {

using Json = nlohmann::json;

Result<CreatePlan> plan_of(const std::string& text, const std::string& dir = ".", const std::string& quantize = "") {
  auto modelfile = store::parse_modelfile(text);
  if (!modelfile.ok()) return modelfile.error();
  return plan_create(*modelfile, dir, "mine", quantize);
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
      {"FROM x\n\nPARAMETER temperature hot\n", "Modelfile line 3: parameter temperature: 'hot' is not a number"},
      {"FROM x\nPARAMETER num_ctx 4k\n", "Modelfile line 2: parameter num_ctx: '4k' is not an integer"},
      {"FROM x\nPARAMETER top_p 2\n", "Modelfile line 2: parameter top_p: '2' is not between 0 and 1"},
      {"FROM x\nPARAMETER colour blue\n", "Modelfile line 2: unknown parameter 'colour'"},
      {"FROM x\nMESSAGE robot hi\n", "Modelfile line 2: message role 'robot' is not one of system, user, assistant"},
      {"FROM x\nSYSTEM \"\"\"never\nclosed\n", "Modelfile line 2: SYSTEM: the \"\"\" string is never closed"},
      {"FROM x\nSYSTEM \"open\n", "Modelfile line 2: SYSTEM: the quoted string is never closed"},
      {"FROM x\nFROM y\n", "Modelfile line 2: a second FROM"},
      {"# c\n\nFROM ./missing.gguf\n", "Modelfile line 3: no such file './missing.gguf'"},
      {"FROM x\nSYSTEM s\nADAPTER ./missing.gguf\n", "Modelfile line 3: no such file './missing.gguf'"},
      {"FROM x\nADAPTER lora\n", "Modelfile line 2: ADAPTER names no file: 'lora'"},
      {"SYSTEM hi\n", "Modelfile has no FROM line"},
      {"FROM\n", "Modelfile line 1: FROM needs a value"},
  };
  for (const auto& c : cases) {
    auto plan = plan_of(c.text);
    ASSERT_FALSE(plan.ok()) << c.text;
    EXPECT_EQ(plan.error().message.rfind(c.message, 0), 0u) << plan.error().message;
  }
}

}  // namespace
}  // namespace hearth::cli
