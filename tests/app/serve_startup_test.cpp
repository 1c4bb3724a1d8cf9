// `hearth serve` start-up checks as a user meets them: a model far bigger than memory (a sparse
// file with a valid header) is refused at once with needed vs available; llama-server's flags
// are accepted where Hearth has the feature and refused by name where it does not; OLLAMA_*
// variables stand in for HEARTH_* ones; the default context gives each request a useful size.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "app/hearth_process.h"
#include "app/server_process.h"
#include "common/test_paths.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"

namespace hearth::test {
namespace {

using Json = nlohmann::json;

uint64_t mem_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

// Copies `model` with one more F32 tensor, then widens that tensor in the header to `huge`
// elements and extends the file sparsely to match: a valid GGUF of that size, written in
// milliseconds and taking no disk space.
std::string make_sparse_giant(const std::string& model, uint64_t huge_bytes) {
  auto src = gguf::File::open(model);
  if (!src.ok()) return "";
  gguf::Writer w;
  for (const auto& kv : src->metadata()) w.set(kv.key, kv.value);
  for (const auto& t : src->tensors()) {
    if (!w.add_tensor(t.name, t.type, t.shape, std::string_view(reinterpret_cast<const char*>(t.data), t.size_bytes)).ok()) {
      return "";
    }
  }
  const std::string name = "zzz.giant.weight";  // last, so its data ends the file
  if (!w.add_tensor(name, DType::kF32, {8}, std::string(32, '\0')).ok()) return "";
  std::string bytes = w.serialize();
  // Tensor info: u64 name length, name, u32 n_dims, u64 dims[n_dims], u32 type, u64 offset.
  const size_t at = bytes.find(name);
  if (at == std::string::npos) return "";
  const uint64_t elems = huge_bytes / 4;
  std::memcpy(&bytes[at + name.size() + 4], &elems, 8);
  const std::string path = ::testing::TempDir() + "/hearth-giant-" + std::to_string(::getpid()) + ".gguf";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  const uint64_t data_end = bytes.size() - 32 + elems * 4;
  if (::truncate(path.c_str(), static_cast<off_t>(data_end + 64)) != 0) return "";
  return path;
}

// llama-server's /props: the context of one request (slot).
int slot_context(int port) {
  httplib::Client cli("127.0.0.1", port);
  auto r = cli.Get("/props");
  if (!r || r->status != 200) return -1;
  return Json::parse(r->body)["default_generation_settings"]["n_ctx"].get<int>();
}

int slot_count(int port) {
  httplib::Client cli("127.0.0.1", port);
  auto r = cli.Get("/slots");
  if (!r || r->status != 200) return -1;
  return static_cast<int>(Json::parse(r->body).size());
}

TEST(ServeStartup, AModelBiggerThanMemoryIsRefusedAtOnceWithTheNumbers) {
  const std::string model = models_dir() + "/stories260K-llama-f32.gguf";
  HEARTH_REQUIRE_FILE(model);
  const uint64_t available = mem_available();
  ASSERT_GT(available, 0u);
  const uint64_t huge = std::max<uint64_t>(45ull << 30, available * 2);
  const std::string giant = make_sparse_giant(model, huge);
  ASSERT_FALSE(giant.empty());
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run_hearth("serve -m " + shell_quote(giant) + " --port 0");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::unlink(giant.c_str());
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_LT(s, 5.0);
  EXPECT_NE(r.err.find("not enough memory: the model needs about"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" GiB is available (MemAvailable"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--no-memory-check"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("listening"), std::string::npos) << r.out;
}

TEST(ServeStartup, LlamaServerFlagsAreAcceptedOrRefusedByName) {
  // Head size 64: a quantized KV cache needs heads of whole 32-element blocks.
  const std::string model = models_dir() + "/random/llama-F32.gguf";
  HEARTH_REQUIRE_FILE(model);
  const std::string key_file = ::testing::TempDir() + "/hearth-key-" + std::to_string(::getpid());
  {
    std::ofstream(key_file) << "\n  sekrit  \n";
  }
  ServerProcess server;
  ASSERT_TRUE(server.start({"-m", model, "-np", "2", "-c", "2048", "-t", "1", "-ub", "256", "-b", "512", "--jinja",
                            "-ngl", "auto", "-fa", "-ctk", "q8_0", "-ctv", "q8_0", "--context-shift", "--chat-template", "chatml",
                            "--api-key-file", key_file, "-a", "tiny"}))
      << server.error();
  httplib::Client cli("127.0.0.1", server.port());
  auto refused = cli.Get("/api/tags");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 401);
  httplib::Headers auth = {{"Authorization", "Bearer sekrit"}};
  auto props = cli.Get("/props", auth);
  ASSERT_TRUE(props);
  ASSERT_EQ(props->status, 200) << props->body;
  Json p = Json::parse(props->body);
  EXPECT_NE(p["chat_template"].get<std::string>().find("<|im_start|>"), std::string::npos) << props->body;
  auto show = cli.Post("/api/show", auth, R"({"model":"tiny"})", "application/json");
  ASSERT_TRUE(show);
  EXPECT_EQ(show->status, 200) << show->body;
  EXPECT_EQ(server.stop(), 0);
  ::unlink(key_file.c_str());

  struct Case {
    std::string args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"-ngl lots", "option -ngl (--n-gpu-layers): 'lots' is not a valid integer"},
      {"-ctk q4_1", "option -ctk (--cache-type-k): 'q4_1' is not supported (supported: f16, bf16, f32, q8_0, q4_0)"},
      {"-ctk q8_0 -ctv f16", "-ctk q8_0 and -ctv f16 differ; Hearth keeps K and V in one type (--kv-type)"},
      {"--flash-attn=maybe", "option --flash-attn: 'maybe' is not supported (supported: on, off, auto)"},
      {"-fa maybe", "unexpected argument 'maybe'"},
      {"--chat-template vicuna", "--chat-template: unknown template name 'vicuna' (built-in: chatml, llama3, plain"},
      {"--ssl-key-file k.pem", "--ssl-cert-file and --ssl-key-file go together"},
      {"--lora a.gguf", "option --lora is not supported: LoRA adapters are not supported"},
      {"--mmproj p.gguf", "option --mmproj is not supported: multimodal projectors"},
      {"-np 0", "option -np (--parallel): 0 is out of range (allowed: 1 to 256)"},
  };
  for (const auto& c : cases) {
    auto r = run_hearth("serve -m " + shell_quote(model) + " --port 0 " + c.args);
    EXPECT_EQ(r.status, 2) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << ": " << r.err;
  }
  auto help = run_hearth("serve --help");
  EXPECT_NE(help.out.find("also -np, --n-parallel"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("[env HEARTH_HOST, OLLAMA_HOST]"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--no-memory-check"), std::string::npos) << help.out;
}

TEST(ServeStartup, OllamaVariablesAndTheDefaultContextPerRequest) {
  const std::string model = models_dir() + "/stories260K-llama-f32.gguf";
  HEARTH_REQUIRE_FILE(model);
  setenv("OLLAMA_NUM_PARALLEL", "3", 1);
  setenv("OLLAMA_CONTEXT_LENGTH", "1024", 1);
  ServerProcess ollama_env;
  const bool started = ollama_env.start({"-m", model});
  unsetenv("OLLAMA_NUM_PARALLEL");
  unsetenv("OLLAMA_CONTEXT_LENGTH");
  ASSERT_TRUE(started) << ollama_env.error();
  EXPECT_EQ(slot_context(ollama_env.port()), 1024);
  EXPECT_EQ(slot_count(ollama_env.port()), 3);
  EXPECT_EQ(ollama_env.stop(), 0);

  // ollama's KV cache variable reaches the engine: stories260K (head size 8) cannot take a
  // Q8_0 cache, and says so; a type Hearth lacks is refused by the variable's name.
  setenv("OLLAMA_KV_CACHE_TYPE", "q8_0", 1);
  auto q8 = run_hearth("serve -m " + shell_quote(model) + " --port 0");
  setenv("OLLAMA_KV_CACHE_TYPE", "q4_1", 1);
  auto q41 = run_hearth("serve -m " + shell_quote(model) + " --port 0");
  unsetenv("OLLAMA_KV_CACHE_TYPE");
  EXPECT_NE(q8.status, 0);
  EXPECT_NE(q8.err.find("a Q8_0 KV cache needs head sizes that are multiples of 32"), std::string::npos) << q8.err;
  EXPECT_EQ(q41.status, 2) << q41.err;
  EXPECT_NE(q41.err.find("environment variable OLLAMA_KV_CACHE_TYPE (--kv-type): 'q4_1' is not supported"),
            std::string::npos)
      << q41.err;

  // No flags: each of the 4 slots gets the model's whole training context (2048), not 512.
  ServerProcess plain;
  ASSERT_TRUE(plain.start({"-m", model})) << plain.error();
  EXPECT_EQ(slot_context(plain.port()), 2048);
  EXPECT_EQ(slot_count(plain.port()), 4);
  httplib::Client cli("127.0.0.1", plain.port());
  auto show = cli.Post("/api/show", R"({"model":"stories260K-llama-f32"})", "application/json");
  ASSERT_TRUE(show);
  ASSERT_EQ(show->status, 200) << show->body;
  // A base model without a chat template is reported as having none (ollama's shape).
  EXPECT_EQ(Json::parse(show->body)["template"], "") << show->body;
  EXPECT_EQ(plain.stop(), 0);

  // OLLAMA_HOST gives the address when HEARTH_HOST is unset (a value Hearth refuses shows it
  // was read, without binding anything).
  setenv("OLLAMA_HOST", "https://example.com", 1);
  auto read = run_hearth("serve -m " + shell_quote(model) + " --port 0");
  unsetenv("OLLAMA_HOST");
  EXPECT_EQ(read.status, 2);
  EXPECT_NE(read.err.find("https is not supported"), std::string::npos) << read.err;
}

// A context per request beyond the model's training context (2048 for stories260K) is served
// but warned about. The port is held by the test, so the run stops right after the warning.
TEST(ServeStartup, AContextBeyondTheTrainingContextIsWarnedAbout) {
  const std::string model = models_dir() + "/stories260K-llama-f32.gguf";
  HEARTH_REQUIRE_FILE(model);
  httplib::Server holder;
  const int port = holder.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  const std::string args = "serve -m " + shell_quote(model) + " --port " + std::to_string(port);
  auto beyond = run_hearth(args + " --request-ctx 4096");
  EXPECT_EQ(beyond.status, 1) << beyond.err;
  EXPECT_NE(beyond.err.find("context per request is beyond the model's training context"), std::string::npos) << beyond.err;
  EXPECT_NE(beyond.err.find("n_ctx_train=2048"), std::string::npos) << beyond.err;
  auto within = run_hearth(args + " --request-ctx 2048");
  EXPECT_EQ(within.status, 1) << within.err;
  EXPECT_EQ(within.err.find("training context"), std::string::npos) << within.err;
  auto total = run_hearth(args + " -c 8192 -np 2");  // llama-server's meaning: 4096 per slot
  EXPECT_NE(total.err.find("request_ctx=4096"), std::string::npos) << total.err;
}

}  // namespace
}  // namespace hearth::test
