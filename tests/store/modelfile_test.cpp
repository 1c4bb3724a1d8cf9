// Modelfile parsing: every command, case-insensitive, quoted and """ strings, comments, typed
// parameters, and errors that name the line.
#include <gtest/gtest.h>

#include "store/model_parameters.h"
#include "store/modelfile.h"

namespace hearth::store {
namespace {

TEST(Modelfile, ParsesEveryCommand) {
  const char* text = R"(# a comment
from ./stories.gguf
PARAMETER temperature 0.25
parameter num_ctx 512
PARAMETER stop "<|im_end|>"
PARAMETER stop User:
PARAMETER use_mmap false
Template """{{ if .System }}{{ .System }}
{{ end }}{{ .Prompt }}"""
SYSTEM "You are \"terse\"."
MESSAGE user Hello there
MESSAGE assistant """Hi!
How can I help?"""
ADAPTER sha256:0000000000000000000000000000000000000000000000000000000000000000
LICENSE MIT
LICENSE """second
license"""
REQUIRES 0.6.0
)";
  auto m = parse_modelfile(text);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(m->from, "./stories.gguf");
  EXPECT_EQ(m->parameters["temperature"], 0.25);
  EXPECT_EQ(m->parameters["num_ctx"], 512);
  EXPECT_TRUE(m->parameters["num_ctx"].is_number_integer());
  EXPECT_EQ(m->parameters["stop"], nlohmann::json({"<|im_end|>", "User:"}));
  EXPECT_EQ(m->parameters["use_mmap"], false);
  EXPECT_EQ(*m->template_text, "{{ if .System }}{{ .System }}\n{{ end }}{{ .Prompt }}");
  EXPECT_EQ(*m->system, "You are \"terse\".");
  ASSERT_EQ(m->messages.size(), 2u);
  EXPECT_EQ(m->messages[0].role, "user");
  EXPECT_EQ(m->messages[0].content, "Hello there");
  EXPECT_EQ(m->messages[1].content, "Hi!\nHow can I help?");
  ASSERT_EQ(m->adapters.size(), 1u);
  ASSERT_EQ(m->licenses.size(), 2u);
  EXPECT_EQ(m->licenses[1], "second\nlicense");
  EXPECT_EQ(m->requires_version, "0.6.0");

  // Printing and parsing again gives the same Modelfile.
  auto again = parse_modelfile(format_modelfile(*m, "x:latest"));
  ASSERT_TRUE(again.ok()) << again.error().to_string() << "\n" << format_modelfile(*m, "x:latest");
  EXPECT_EQ(again->parameters, m->parameters);
  EXPECT_EQ(*again->template_text, *m->template_text);
  EXPECT_EQ(*again->system, *m->system);
  EXPECT_EQ(again->messages.size(), 2u);
  EXPECT_EQ(again->licenses, m->licenses);
}

TEST(Modelfile, AwkwardValuesPrintBackUnchanged) {
  auto m = parse_modelfile("FROM x\nSYSTEM say \"hi\"\nTEMPLATE a\"\"\"b\nPARAMETER stop \"x\\\" y\"\nPARAMETER stop \"#\"\n"
                           "MESSAGE user \"\"\nLICENSE \"\"\"\nmulti\nline\"\"\"\n");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(*m->system, "say \"hi\"");
  EXPECT_EQ(*m->template_text, "a\"\"\"b");
  EXPECT_EQ(m->parameters["stop"], nlohmann::json({"x\" y", "#"}));
  const std::string printed = format_modelfile(*m, "x:latest");
  auto again = parse_modelfile(printed);
  ASSERT_TRUE(again.ok()) << again.error().to_string() << "\n" << printed;
  EXPECT_EQ(*again->system, *m->system);
  EXPECT_EQ(*again->template_text, *m->template_text);
  EXPECT_EQ(again->parameters, m->parameters);
  EXPECT_EQ(again->messages[0].content, "");
  EXPECT_EQ(again->licenses, m->licenses);
}

void expect_error(const std::string& text, const std::string& wanted) {
  auto m = parse_modelfile(text);
  ASSERT_FALSE(m.ok()) << text;
  EXPECT_EQ(m.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_NE(m.error().message.find(wanted), std::string::npos) << m.error().message;
}

TEST(Modelfile, ErrorsNameTheLine) {
  expect_error("FROM x\n\nFROB y\n", "Modelfile line 3: unknown command 'FROB'");
  expect_error("FROM x\nPARAMETER temperature hot\n", "line 2: parameter temperature: 'hot' is not a number");
  expect_error("FROM x\nPARAMETER top_p 1.5\n", "line 2: parameter top_p: '1.5' is not between 0 and 1");
  expect_error("FROM x\nPARAMETER num_ctx 12.5\n", "line 2: parameter num_ctx: '12.5' is not an integer");
  expect_error("FROM x\nPARAMETER num_ctx 0\n", "is not at least 1");
  expect_error("FROM x\nPARAMETER mirostat 3\n", "between 0 and 2");
  expect_error("FROM x\nPARAMETER use_mmap maybe\n", "a boolean");
  expect_error("FROM x\nPARAMETER flavour sweet\n", "line 2: unknown parameter 'flavour'");
  expect_error("FROM x\nPARAMETER temperature\n", "line 2: PARAMETER temperature needs a value");
  expect_error("FROM x\nMESSAGE robot hi\n", "line 2: message role 'robot'");
  expect_error("FROM x\nSYSTEM \"\"\"never\nclosed\n", "line 2: SYSTEM: the \"\"\" string is never closed");
  expect_error("FROM x\nTEMPLATE \"\"\"a\nb\"\"\" junk\n", "line 3: TEMPLATE: unexpected text");
  expect_error("FROM x\nSYSTEM \"open\n", "line 2: SYSTEM: the quoted string is never closed");
  expect_error("FROM\n", "line 1: FROM needs a value");
  expect_error("FROM x\nSYSTEM hi\nFROM y\n", "Modelfile line 3: a second FROM (line 1 has one");
  expect_error("# only a comment\nSYSTEM hi\n", "no FROM line");
}

TEST(Modelfile, FromAndAdaptersKeepTheirLines) {
  auto m = parse_modelfile("# c\nFROM ./a.gguf\n\nADAPTER one.gguf\nSYSTEM \"\"\"x\ny\"\"\"\nADAPTER two.gguf\n");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->from_line, 2);
  EXPECT_EQ(m->adapter_lines, (std::vector<int>{4, 7}));
}

// The text forms the CLI's `/set parameter` and a PARAMETER line share.
TEST(Modelfile, FromAdapterAndRequiresWithSpacesOrLineBreaksPrintBackUnchanged) {
  // Found by fuzz_store: a """ FROM spanning lines was printed bare and broke the lines after it.
  auto m = parse_modelfile("FROM \"\"\"./my models/a.gguf\nsecond line\"\"\"\nADAPTER \"./lora one.gguf\"\n"
                           "REQUIRES \" 0.9 \"\nLICENSE MIT\n");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  auto again = parse_modelfile(format_modelfile(*m, "x:latest"));
  ASSERT_TRUE(again.ok()) << again.error().to_string() << "\n" << format_modelfile(*m, "x:latest");
  EXPECT_EQ(again->from, "./my models/a.gguf\nsecond line");
  EXPECT_EQ(again->adapters, m->adapters);
  EXPECT_EQ(again->requires_version, " 0.9 ");
  EXPECT_EQ(again->licenses, m->licenses);
}

TEST(ModelParameters, TextValuesAreTypedLikeOllamasOptions) {
  nlohmann::json p = nlohmann::json::object();
  for (const auto& [name, text] : std::vector<std::pair<std::string, std::string>>{
           {"seed", "-3"}, {"top_p", "0.9"}, {"penalize_newline", "TRUE"}, {"stop", "a"}, {"stop", "b"}}) {
    auto v = parse_parameter_value(name, text);
    ASSERT_TRUE(v.ok()) << v.error().message;
    add_parameter(p, name, *v);
  }
  EXPECT_EQ(p, (nlohmann::json{{"seed", -3}, {"top_p", 0.9}, {"penalize_newline", true}, {"stop", {"a", "b"}}}));
  EXPECT_FALSE(parse_parameter_value("seed", "1.5").ok());
  EXPECT_FALSE(parse_parameter_value("top_p", "nan").ok());
  EXPECT_FALSE(parse_parameter_value("use_mmap", "yes").ok());
  EXPECT_FALSE(parse_parameter_value("num_predict", "99999999999999999999").ok());
}

TEST(ModelParameters, JsonValuesAreChecked) {
  EXPECT_EQ(*check_parameter_value("temperature", 0.5), 0.5);
  EXPECT_EQ(*check_parameter_value("num_ctx", "2048"), 2048);
  EXPECT_EQ(*check_parameter_value("stop", nlohmann::json({"a", "b"})), nlohmann::json({"a", "b"}));
  EXPECT_FALSE(check_parameter_value("num_ctx", 1.5).ok());
  EXPECT_FALSE(check_parameter_value("temperature", -1).ok());
  EXPECT_FALSE(check_parameter_value("use_mmap", 1).ok());
  EXPECT_FALSE(check_parameter_value("stop", nlohmann::json({1})).ok());
  EXPECT_FALSE(check_parameter_value("nope", 1).ok());
}

}  // namespace
}  // namespace hearth::store
