// The `hearth run` REPL in a real terminal: tmux runs it against a real `hearth serve`
// (stories260K, a context long enough for a reply to run for many seconds), the test types
// with send-keys and reads the screen with capture-pane. Covers `"""` input, /set parameter
// and /show parameters, Ctrl-C in the middle of a reply (the REPL stays and answers again),
// Ctrl-C at an empty prompt, and /bye.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <thread>

#include "app/hearth_process.h"
#include "app/server_process.h"
#include "common/test_paths.h"

namespace hearth::test {
namespace {

std::string shell_output(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class ReplInTmux : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("tmux -V >/dev/null 2>&1") != 0) {
      if (std::getenv("CI") != nullptr) FAIL() << "tmux is not installed (scripts/setup.sh installs it)";
      GTEST_SKIP() << "tmux is not installed";
    }
    const std::string model = models_dir() + "/stories260K-llama-f32.gguf";
    HEARTH_REQUIRE_FILE(model);
    ASSERT_TRUE(server_.start({"-m", model, "--request-ctx", "16384", "--no-memory-check"})) << server_.error();
    home_ = make_temp_dir();
    socket_ = home_ + "/tmux.sock";
    const std::string command = "env HOME=" + shell_quote(home_) + " HEARTH_HOST=127.0.0.1:" + std::to_string(server_.port()) +
                                " " + shell_quote(HEARTH_EXE) + " run stories260K-llama-f32; echo REPL-EXITED $?; sleep 30";
    ASSERT_EQ(tmux("-f /dev/null new-session -d -s repl -x 100 -y 50 " + shell_quote(command)), 0);
  }
  void TearDown() override {
    if (!socket_.empty()) tmux("kill-server");
  }

  int tmux(const std::string& args) {
    return std::system(("tmux -S " + shell_quote(socket_) + " " + args + " >/dev/null 2>&1").c_str());
  }
  void type(const std::string& text) { ASSERT_EQ(tmux("send-keys -t repl -l " + shell_quote(text)), 0); }
  void key(const std::string& name) { ASSERT_EQ(tmux("send-keys -t repl " + name), 0); }
  void line(const std::string& text) {
    type(text);
    key("Enter");
  }
  // The screen and its scrollback.
  std::string screen() { return shell_output("tmux -S " + shell_quote(socket_) + " capture-pane -p -J -S -1000 -t repl"); }
  // Waits until pred(screen) holds; fails the test with the screen after `seconds`.
  bool wait_for(const std::function<bool(const std::string&)>& pred, const std::string& what, double seconds = 20) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    std::string s;
    while (std::chrono::steady_clock::now() < deadline) {
      s = screen();
      if (pred(s)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "timed out waiting for " << what << "; the screen:\n" << s;
    return false;
  }
  bool wait_for_text(const std::string& text, double seconds = 20) {
    return wait_for([&](const std::string& s) { return s.find(text) != std::string::npos; }, "'" + text + "'", seconds);
  }
  // The last non-empty line of the screen.
  static std::string last_line(const std::string& s) {
    size_t end = s.find_last_not_of("\n ");
    if (end == std::string::npos) return "";
    size_t start = s.rfind('\n', end);
    return s.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
  }
  bool wait_for_prompt(double seconds = 20) {
    return wait_for([](const std::string& s) { return last_line(s) == ">>>"; }, "the >>> prompt", seconds);
  }

  ServerProcess server_;
  std::string home_;
  std::string socket_;
};

TEST_F(ReplInTmux, MultilineSetShowCtrlCAndBye) {
  ASSERT_TRUE(wait_for_prompt(60));
  line("/set parameter num_predict 8");
  ASSERT_TRUE(wait_for_text("Set parameter 'num_predict' to '8'"));
  line("/show parameters");
  ASSERT_TRUE(wait_for_text("User defined parameters:\nnum_predict 8"));
  line("/set verbose");
  ASSERT_TRUE(wait_for_text("Set 'verbose' mode."));

  // A message over two lines: the continuation prompt, then one answer of 8 tokens.
  line("\"\"\"Once upon");
  ASSERT_TRUE(wait_for_text("... "));
  line("a time\"\"\"");
  ASSERT_TRUE(wait_for_text("eval count:           8 token(s)"));
  ASSERT_TRUE(wait_for_prompt());
  EXPECT_NE(screen().find(">>> \"\"\"Once upon\n... a time\"\"\""), std::string::npos) << screen();

  // Ctrl-C in the middle of a long reply: it stops (no timings printed) and the REPL stays.
  line("/set parameter num_predict 100000");
  ASSERT_TRUE(wait_for_text("Set parameter 'num_predict' to '100000'"));
  line("Tell me a very long story.");
  const size_t before = screen().size();
  ASSERT_TRUE(wait_for([&](const std::string& s) { return s.size() > before + 200; }, "the reply to start"));
  key("C-c");
  ASSERT_TRUE(wait_for_prompt(10));
  EXPECT_EQ(count_of(screen(), "\neval count:"), 1u) << "the interrupted reply printed timings:\n" << screen();

  // The session goes on: another short answer, with its timings.
  line("/set parameter num_predict 4");
  ASSERT_TRUE(wait_for_text("Set parameter 'num_predict' to '4'"));
  line("Lily saw a cat.");
  ASSERT_TRUE(wait_for_text("eval count:           4 token(s)"));
  ASSERT_TRUE(wait_for_prompt());

  // Ctrl-C at an empty prompt only says how to leave.
  key("C-c");
  ASSERT_TRUE(wait_for_text("Use Ctrl + d or /bye to exit."));
  ASSERT_TRUE(wait_for_prompt());
  line("/bye");
  ASSERT_TRUE(wait_for_text("REPL-EXITED 0"));
}

TEST_F(ReplInTmux, CtrlDLeavesAndHistoryIsKept) {
  ASSERT_TRUE(wait_for_prompt(60));
  line("/set parameter num_predict 2");
  ASSERT_TRUE(wait_for_text("Set parameter 'num_predict' to '2'"));
  key("C-d");
  ASSERT_TRUE(wait_for_text("REPL-EXITED 0"));
  auto history = shell_output("cat " + shell_quote(home_ + "/.hearth/history"));
  EXPECT_NE(history.find("num_predict"), std::string::npos) << history;
}

}  // namespace
}  // namespace hearth::test
