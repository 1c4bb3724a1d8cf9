// The native-API client and the chat REPL against a real HTTP server (scripted engine).
#include <gtest/gtest.h>

#include <sstream>

#include "cli/chat_repl.h"
#include "cli/ollama_client.h"
#include "common/test_paths.h"
#include "scripted_backend.h"
#include "server/http_server.h"

namespace hearth::cli {
namespace {

TEST(ServerAddress, ParsesHearthHostForms) {
  struct Case {
    std::string text;
    std::string host;
    int port;
  };
  const Case cases[] = {
      {"", "127.0.0.1", 11434},
      {"localhost", "localhost", 11434},
      {"0.0.0.0:8080", "0.0.0.0", 8080},
      {"http://10.0.0.2:9000/", "10.0.0.2", 9000},
      {":7000", "127.0.0.1", 7000},
      {"[::1]:8081", "::1", 8081},
      {"[::1]", "::1", 11434},
  };
  for (const auto& c : cases) {
    auto a = parse_server_address(c.text);
    ASSERT_TRUE(a.ok()) << c.text;
    EXPECT_EQ(a->host, c.host) << c.text;
    EXPECT_EQ(a->port, c.port) << c.text;
  }
  for (const char* bad : {"https://x", "host:port", "host:99999", "[::1"}) EXPECT_FALSE(parse_server_address(bad).ok()) << bad;
}

TEST(LineSplitter, KeepsPartialLines) {
  LineSplitter s;
  std::vector<std::string> lines;
  auto collect = [&](const std::string& l) {
    lines.push_back(l);
    return true;
  };
  EXPECT_TRUE(s.feed("{\"a\":1}\n{\"b\"", collect));
  EXPECT_EQ(lines, std::vector<std::string>{"{\"a\":1}"});
  EXPECT_EQ(s.pending(), "{\"b\"");
  EXPECT_TRUE(s.feed(":2}\r\n\n", collect));
  EXPECT_EQ(lines.back(), "{\"b\":2}");
  EXPECT_TRUE(s.pending().empty());
}

class ChatClient : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = test::models_dir() + "/stories260K-llama-f32.gguf";
    HEARTH_REQUIRE_FILE(path);
    backend_ = test::ScriptedBackend::create(path, " The end.");
    ASSERT_NE(backend_, nullptr);
    server::ServerOptions o;
    o.port = 0;
    o.version = "1.2.3";
    server_ = std::make_unique<server::HttpServer>(o);
    ASSERT_TRUE(server_->bind().ok());
    server_->start();
    server_->set_backend(backend_);
  }
  void TearDown() override {
    if (server_) server_->stop();
  }
  std::string reply_text() const {
    std::string text;
    for (int32_t id : backend_->tokenizer().encode(" The end.", false, false)) text += backend_->tokenizer().token_to_piece(id, false);
    return text;
  }

  std::shared_ptr<test::ScriptedBackend> backend_;
  std::unique_ptr<server::HttpServer> server_;
};

TEST_F(ChatClient, VersionModelsAndChat) {
  OllamaClient client({"127.0.0.1", server_->port()}, "");
  auto v = client.version();
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(*v, "1.2.3");
  auto names = client.model_names();
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, std::vector<std::string>{"scripted:latest"});
  std::string text;
  auto stats = client.chat("scripted", {{"user", "Hi"}}, {{"seed", 5}}, [&](std::string_view piece) {
    text.append(piece);
    return true;
  });
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_EQ(text, reply_text());
  EXPECT_EQ(stats->done_reason, "stop");
  EXPECT_GT(stats->eval_count, 0);
  EXPECT_EQ(backend_->records()[0]->request.sampling.seed, 5u);

  auto missing = client.chat("other-model", {{"user", "Hi"}}, {}, [](std::string_view) { return true; });
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, "model 'other-model' not found");
  OllamaClient nowhere({"127.0.0.1", 1}, "");
  auto down = nowhere.version();
  ASSERT_FALSE(down.ok());
  EXPECT_NE(down.error().message.find("hearth serve"), std::string::npos);
}

TEST_F(ChatClient, ReplKeepsHistoryAndClears) {
  OllamaClient client({"127.0.0.1", server_->port()}, "");
  ChatReplOptions o;
  o.model = "scripted";
  o.system = "You are terse.";
  std::istringstream in("Hello\nHow are you?\n/clear\n\nAgain\n/nonsense\n/bye\nnever sent\n");
  std::ostringstream out, err;
  EXPECT_EQ(run_chat_repl(client, o, in, out, err), 0);
  EXPECT_EQ(out.str(), reply_text() + "\n" + reply_text() + "\n(conversation cleared)\n" + reply_text() + "\n");
  EXPECT_NE(err.str().find("unknown command '/nonsense'"), std::string::npos);
  auto records = backend_->records();
  ASSERT_EQ(records.size(), 3u);
  auto prompt_of = [&](size_t i) { return backend_->tokenizer().decode(records[i]->request.prompt, true); };
  EXPECT_NE(prompt_of(1).find("Hello"), std::string::npos);           // the history went along
  EXPECT_NE(prompt_of(1).find("The end."), std::string::npos);        // including the first reply
  EXPECT_EQ(prompt_of(2).find("Hello"), std::string::npos);           // cleared
  EXPECT_NE(prompt_of(2).find("You are terse."), std::string::npos);  // the system message stays
}

TEST_F(ChatClient, ApiKeyIsSent) {
  server_->stop();
  server::ServerOptions o;
  o.port = 0;
  o.api_key = "sesame";
  server_ = std::make_unique<server::HttpServer>(o);
  ASSERT_TRUE(server_->bind().ok());
  server_->start();
  server_->set_backend(backend_);
  OllamaClient without({"127.0.0.1", server_->port()}, "");
  EXPECT_FALSE(without.model_names().ok());
  OllamaClient with({"127.0.0.1", server_->port()}, "sesame");
  EXPECT_TRUE(with.model_names().ok());
  std::ostringstream out, err;
  ChatReplOptions ro;
  ro.model = "scripted";
  EXPECT_EQ(run_chat_once(with, ro, "Hi", out, err), 0);
  EXPECT_EQ(out.str(), reply_text() + "\n");
}

}  // namespace
}  // namespace hearth::cli
