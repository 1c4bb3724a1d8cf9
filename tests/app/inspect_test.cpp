// Runs the built `hearth inspect` on the shared models and on malformed files, as a user
// would, and checks its text and JSON output against the facts in the models' READMEs and
// manifest.json, and its error message and exit status on a bad file.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "app/hearth_process.h"
#include "common/test_paths.h"
#include "util/file_io.h"

namespace {

using RunResult = hearth::test::HearthRun;
using hearth::test::run_hearth;
using hearth::test::shell_quote;

nlohmann::json inspect_json(const std::string& path) {
  RunResult r = run_hearth("inspect --json " + shell_quote(path));
  EXPECT_EQ(r.status, 0) << r.err;
  return nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
}

TEST(InspectCommand, Stories260KJson) {
  const std::string path = hearth::test::models_dir() + "/stories260K-llama-f32.gguf";
  HEARTH_REQUIRE_FILE(path);
  auto j = inspect_json(path);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["architecture"], "llama");
  EXPECT_EQ(j["parameter_count"], 292800);
  EXPECT_EQ(j["file_type"], "unknown (absent)");
  EXPECT_EQ(j["file_type_guess"], "ALL_F32");
  EXPECT_EQ(j["tokenizer"]["model"], "llama");
  EXPECT_TRUE(j["tokenizer"]["pre"].is_null());
  EXPECT_EQ(j["tokenizer"]["vocab_size"], 512);
  EXPECT_EQ(j["context_length"], 2048);
  EXPECT_EQ(j["has_chat_template"], false);
  EXPECT_EQ(j["version"], 3);
  EXPECT_EQ(j["alignment"], 32);
  EXPECT_EQ(j["metadata_count"], 19);
  EXPECT_EQ(j["file_size"], 1185376);
  ASSERT_EQ(j["tensors"].size(), 48u);
  int64_t total_bytes = 0;
  for (const auto& t : j["tensors"]) {
    EXPECT_EQ(t["type"], "F32");
    EXPECT_EQ(t["offset"].get<int64_t>() % 32, 0);
    total_bytes += t["bytes"].get<int64_t>();
  }
  EXPECT_EQ(total_bytes, 292800 * 4);
  EXPECT_EQ(j["tensors"][2]["name"], "output.weight");
  EXPECT_EQ(j["tensors"][2]["shape"], nlohmann::json({64, 512}));
  EXPECT_EQ(j["tensors"][2]["bytes"], 131072);
}

TEST(InspectCommand, Stories260KText) {
  const std::string path = hearth::test::models_dir() + "/stories260K-llama-f32.gguf";
  HEARTH_REQUIRE_FILE(path);
  RunResult r = run_hearth("inspect " + shell_quote(path));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("architecture:      llama\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("parameters:        292,800\n"), std::string::npos);
  EXPECT_NE(r.out.find("file type:         unknown (absent), tensors suggest ALL_F32\n"), std::string::npos);
  EXPECT_NE(r.out.find("tokenizer:         llama (pre: (absent))\n"), std::string::npos);
  EXPECT_NE(r.out.find("vocab size:        512\n"), std::string::npos);
  EXPECT_NE(r.out.find("context length:    2048\n"), std::string::npos);
  EXPECT_NE(r.out.find("chat template:     no\n"), std::string::npos);
  EXPECT_NE(r.out.find("alignment:         32\n"), std::string::npos);
  EXPECT_NE(r.out.find("metadata entries:  19\n"), std::string::npos);
  EXPECT_NE(r.out.find("tensors (48):"), std::string::npos);
  EXPECT_NE(r.out.find("output.weight"), std::string::npos);
  EXPECT_NE(r.out.find("[64, 512]"), std::string::npos);
  EXPECT_EQ(r.out.find("tokenizer.ggml.seperator_token_id"), std::string::npos);

  RunResult m = run_hearth("inspect --metadata " + shell_quote(path));
  ASSERT_EQ(m.status, 0);
  EXPECT_NE(m.out.find("tokenizer.ggml.seperator_token_id"), std::string::npos);
  EXPECT_NE(m.out.find("llama.context_length"), std::string::npos);
}

TEST(InspectCommand, Llama2TinyRandomJson) {
  const std::string path = hearth::test::models_dir() + "/llama2-tiny-random-f16.gguf";
  HEARTH_REQUIRE_FILE(path);
  auto j = inspect_json(path);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["parameter_count"], 513048);
  EXPECT_EQ(j["file_type"], "MOSTLY_F16");
  EXPECT_EQ(j["file_type_id"], 1);
  EXPECT_EQ(j["tokenizer"]["vocab_size"], 32000);
  EXPECT_EQ(j["context_length"], 4096);
  std::map<std::string, int> counts;
  for (const auto& t : j["tensors"]) counts[t["type"]]++;
  EXPECT_EQ(counts, (std::map<std::string, int>{{"F16", 9}, {"F32", 3}}));
}

TEST(InspectCommand, RandomModelsMatchManifest) {
  const std::string dir = hearth::test::models_dir() + "/random";
  HEARTH_REQUIRE_FILE(dir + "/manifest.json");
  std::ifstream in(dir + "/manifest.json");
  auto manifest = nlohmann::json::parse(in);
  for (const auto& m : manifest["models"]) {
    const std::string file = m["file"];
    SCOPED_TRACE(file);
    HEARTH_REQUIRE_FILE(dir + "/" + file);
    auto j = inspect_json(dir + "/" + file);
    ASSERT_FALSE(j.is_discarded());
    const std::string type = m["type"];
    EXPECT_EQ(j["architecture"], m["arch"]);
    EXPECT_EQ(j["file_type"], type == "F32" ? "ALL_F32" : "MOSTLY_" + type);
    EXPECT_EQ(j["file_size"], m["bytes"]);
    EXPECT_EQ(j["context_length"], m["hparams"]["n_ctx_train"]);
    EXPECT_EQ(j["tokenizer"]["vocab_size"], m["hparams"]["n_vocab"]);
    EXPECT_EQ(j["tokenizer"]["model"], m["vocab"]["tokenizer_model"]);
    EXPECT_EQ(j["tokenizer"]["pre"], m["vocab"]["tokenizer_pre"]);
    EXPECT_EQ(j["has_chat_template"], m["arch"] == "phi3");
    ASSERT_EQ(j["tensors"].size(), m["tensor_types"].size());
    int64_t params = 0;
    for (const auto& t : j["tensors"]) {
      EXPECT_EQ(t["type"], m["tensor_types"][t["name"].get<std::string>()]) << t["name"];
      int64_t n = 1;
      for (const auto& d : t["shape"]) n *= d.get<int64_t>();
      params += n;
    }
    EXPECT_EQ(j["parameter_count"], params);
  }
}

TEST(InspectCommand, BadFileIsNamedAndExitsOne) {
  const std::string path = hearth::test::models_dir() + "/stories260K-llama-f32.gguf";
  HEARTH_REQUIRE_FILE(path);
  auto bytes = hearth::read_file(path);
  ASSERT_TRUE(bytes.ok());
  const std::string bad = hearth::test::make_temp_dir() + "/cut.gguf";
  ASSERT_TRUE(hearth::write_file_atomic(bad, bytes->substr(0, 5000)).ok());
  RunResult r = run_hearth("inspect " + shell_quote(bad));
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(r.err.rfind("hearth inspect: " + bad + ": ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("truncated file in metadata entry"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(bad, 17 + bad.size()), std::string::npos) << "path printed twice: " << r.err;

  const std::string magic = hearth::test::make_temp_dir() + "/magic.gguf";
  ASSERT_TRUE(hearth::write_file_atomic(magic, "not a gguf file at all").ok());
  RunResult m = run_hearth("inspect --json " + shell_quote(magic));
  EXPECT_EQ(m.status, 1);
  EXPECT_NE(m.err.find("bad magic"), std::string::npos) << m.err;

  RunResult missing = run_hearth("inspect /nonexistent/x.gguf");
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.err.find("hearth inspect: /nonexistent/x.gguf: "), std::string::npos) << missing.err;
}

TEST(InspectCommand, UsageErrorsAndHelp) {
  RunResult none = run_hearth("inspect");
  EXPECT_EQ(none.status, 2);
  EXPECT_NE(none.err.find("FILE.gguf"), std::string::npos);
  RunResult unknown = run_hearth("inspect --bogus x.gguf");
  EXPECT_EQ(unknown.status, 2);
  RunResult help = run_hearth("inspect --help");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("--json"), std::string::npos);
}

}  // namespace
