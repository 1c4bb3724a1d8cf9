// `hearth run`, list, ps, stop and their errors, run as a user runs them against a real
// `hearth serve` with the stories260K model on a free loopback port; and `run` starting a
// server in the background when none answers.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <regex>

#include "app/hearth_process.h"
#include "app/server_process.h"
#include "common/test_paths.h"

namespace hearth::test {
namespace {

const char* const kModel = "stories260K-llama-f32";

// A loopback port nothing listens on (bound and released; the kernel does not reuse it at once).
int unused_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

class RunCommand : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_path_ = models_dir() + "/stories260K-llama-f32.gguf";
    server_ = new ServerProcess();
    // A small context keeps each answer short (generation ends when it is full).
    if (!server_->start({"-m", model_path_, "--request-ctx", "96", "--parallel", "2"})) start_error_ = server_->error();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    HEARTH_REQUIRE_FILE(model_path_);
    ASSERT_TRUE(start_error_.empty()) << start_error_;
    home_ = make_temp_dir();
    setenv("HOME", home_.c_str(), 1);
    unsetenv("OLLAMA_HOST");
    setenv("HEARTH_HOST", ("127.0.0.1:" + std::to_string(server_->port())).c_str(), 1);
  }
  void TearDown() override { unsetenv("HEARTH_HOST"); }

  static inline std::string model_path_;
  static inline ServerProcess* server_ = nullptr;
  static inline std::string start_error_;
  std::string home_;
};

int64_t prompt_eval_count(const std::string& err) {
  std::smatch m;
  if (!std::regex_search(err, m, std::regex("prompt eval count: +([0-9]+) token"))) return -1;
  return std::stoll(m[1]);
}

TEST_F(RunCommand, OneShotVerboseAndPipedStdin) {
  auto r = run_hearth("run " + std::string(kModel) + " 'Once upon a time' --verbose");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_GT(r.out.size(), 20u) << r.out;
  for (const char* line : {"total duration:", "prompt eval count:", "prompt eval rate:", "eval count:", "eval duration:", "eval rate:"}) {
    EXPECT_NE(r.err.find(line), std::string::npos) << line << " in " << r.err;
  }
  const int64_t words_only = prompt_eval_count(r.err);
  ASSERT_GT(words_only, 0);
  // Piped text comes first, then the words: the prompt grows by the piped text's tokens.
  const std::string piped = "Lily and Tom went to the park to play with a big red ball.";
  auto p = run_hearth("run " + std::string(kModel) + " 'Once upon a time' --verbose", &piped);
  EXPECT_EQ(p.status, 0) << p.err;
  EXPECT_GT(prompt_eval_count(p.err), words_only + 8) << p.err;
  auto only_pipe = run_hearth("run " + std::string(kModel), &piped);
  EXPECT_EQ(only_pipe.status, 0) << only_pipe.err;
  EXPECT_FALSE(only_pipe.out.empty());
}

TEST_F(RunCommand, ListPsAndStop) {
  auto list = run_hearth("list");
  EXPECT_EQ(list.status, 0) << list.err;
  EXPECT_EQ(list.out.rfind("NAME", 0), 0u) << list.out;
  EXPECT_NE(list.out.find("stories260K-llama-f32:latest    270cba1bd510    1.1 MB"), std::string::npos) << list.out;
  EXPECT_EQ(run_hearth("ls").out, list.out);
  auto ps = run_hearth("ps");
  EXPECT_EQ(ps.status, 0) << ps.err;
  EXPECT_NE(ps.out.find("PROCESSOR"), std::string::npos);
  EXPECT_NE(ps.out.find("stories260K-llama-f32:latest"), std::string::npos) << ps.out;
  auto show = run_hearth(std::string("show ") + kModel);
  EXPECT_EQ(show.status, 0) << show.err;
  EXPECT_NE(show.out.find("architecture"), std::string::npos) << show.out;
  auto tmpl = run_hearth(std::string("show ") + kModel + " --template");
  EXPECT_EQ(tmpl.status, 0) << tmpl.err;
  auto two = run_hearth(std::string("show ") + kModel + " --template --license");
  EXPECT_EQ(two.status, 2);
  EXPECT_NE(two.err.find("only one of"), std::string::npos) << two.err;
  auto stop = run_hearth(std::string("stop ") + kModel);
  EXPECT_EQ(stop.status, 0) << stop.err;
  auto stop_other = run_hearth("stop nosuch");
  EXPECT_EQ(stop_other.status, 1);
  EXPECT_NE(stop_other.err.find("model 'nosuch' is not running"), std::string::npos) << stop_other.err;
}

TEST_F(RunCommand, ErrorsAreClearWithExitCodes) {
  auto unknown = run_hearth("run nosuch-model hello");
  EXPECT_EQ(unknown.status, 1);
  EXPECT_NE(unknown.err.find("model 'nosuch-model' not found"), std::string::npos) << unknown.err;
  auto bad_flag = run_hearth(std::string("run ") + kModel + " hi --format xml");
  EXPECT_EQ(bad_flag.status, 2);
  EXPECT_NE(bad_flag.err.find("--format"), std::string::npos) << bad_flag.err;
  auto no_model = run_hearth("run");
  EXPECT_EQ(no_model.status, 2);
  EXPECT_NE(no_model.err.find("no model given"), std::string::npos) << no_model.err;
  auto bad_keepalive = run_hearth(std::string("run ") + kModel + " hi --keepalive soon");
  EXPECT_EQ(bad_keepalive.status, 1);
  EXPECT_NE(bad_keepalive.err.find("keep_alive"), std::string::npos) << bad_keepalive.err;

  setenv("HEARTH_HOST", ("127.0.0.1:" + std::to_string(unused_port())).c_str(), 1);
  for (const char* command : {"list", "ps", "show x", "rm x", "cp a b", "pull x", "stop x"}) {
    auto down = run_hearth(command);
    EXPECT_EQ(down.status, 1) << command;
    EXPECT_NE(down.err.find("cannot reach the server at 127.0.0.1:"), std::string::npos) << command << ": " << down.err;
    EXPECT_NE(down.err.find("hearth serve"), std::string::npos) << down.err;
  }
  setenv("HEARTH_HOST", "http://127.0.0.1:notaport", 1);
  auto bad_host = run_hearth("list");
  EXPECT_EQ(bad_host.status, 2);
  EXPECT_NE(bad_host.err.find("HEARTH_HOST"), std::string::npos) << bad_host.err;
  unsetenv("HEARTH_HOST");
  setenv("OLLAMA_HOST", ("127.0.0.1:" + std::to_string(server_->port())).c_str(), 1);
  EXPECT_EQ(run_hearth("list").status, 0);  // the fallback variable
  unsetenv("OLLAMA_HOST");
}

TEST_F(RunCommand, ApiKeyFromTheVariable) {
  ServerProcess locked;
  ASSERT_TRUE(locked.start({"-m", model_path_, "--request-ctx", "64", "--api-key", "sesame"})) << locked.error();
  setenv("HEARTH_HOST", ("127.0.0.1:" + std::to_string(locked.port())).c_str(), 1);
  auto refused = run_hearth("list");
  EXPECT_EQ(refused.status, 1);
  EXPECT_FALSE(refused.err.empty());
  setenv("HEARTH_API_KEY", "sesame", 1);
  auto list = run_hearth("list");
  auto answer = run_hearth(std::string("run ") + kModel + " hi");
  unsetenv("HEARTH_API_KEY");
  EXPECT_EQ(list.status, 0) << list.err;
  EXPECT_EQ(answer.status, 0) << answer.err;
  EXPECT_EQ(run_hearth("list --api-key sesame").status, 0);
}

TEST_F(RunCommand, VersionFlags) {
  for (const char* flag : {"--version", "-v"}) {
    auto v = run_hearth(flag);
    EXPECT_EQ(v.status, 0);
    EXPECT_EQ(v.out.rfind("hearth version ", 0), 0u) << v.out;
  }
}

TEST_F(RunCommand, StartsAServerWhenNoneAnswers) {
  const int port = unused_port();
  setenv("HEARTH_HOST", ("127.0.0.1:" + std::to_string(port)).c_str(), 1);
  setenv("HEARTH_REQUEST_CTX", "64", 1);
  // A server that cannot start: the error quotes its log.
  setenv("HEARTH_MODEL", (home_ + "/missing.gguf").c_str(), 1);
  auto broken = run_hearth(std::string("run ") + kModel + " hi");
  EXPECT_EQ(broken.status, 1);
  EXPECT_NE(broken.err.find("exited at once; its log (" + home_ + "/.hearth/logs/server.log)"), std::string::npos) << broken.err;
  EXPECT_NE(broken.err.find("missing.gguf"), std::string::npos) << broken.err;

  setenv("HEARTH_MODEL", model_path_.c_str(), 1);
  auto r = run_hearth(std::string("run ") + kModel + " 'Once upon a time'");
  unsetenv("HEARTH_MODEL");
  unsetenv("HEARTH_REQUEST_CTX");
  std::smatch m;
  const bool started = std::regex_search(r.err, m, std::regex("in the background \\(pid ([0-9]+)\\), log: (.*)"));
  const pid_t pid = started ? static_cast<pid_t>(std::stol(m[1])) : -1;
  EXPECT_TRUE(started) << r.err;
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(r.out.empty());
  if (started) EXPECT_EQ(m[2].str(), home_ + "/.hearth/logs/server.log");
  // It keeps serving after `run` left; the next command finds it.
  auto list = run_hearth("list");
  EXPECT_EQ(list.status, 0) << list.err;
  if (pid > 0) ::kill(pid, SIGTERM);
}

}  // namespace
}  // namespace hearth::test
