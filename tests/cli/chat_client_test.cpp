// The native-API client, a streamed reply and the REPL against a real HTTP server (scripted engine).
#include <gtest/gtest.h>

#include <sstream>

#include "cli/chat_turn.h"
#include "cli/line_reader.h"
#include "cli/repl.h"
#include "cli/ollama_client.h"
#include "scripted_server_test.h"

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

class ChatClient : public ScriptedServerTest {
 protected:
  std::string reply_text() const {
    std::string text;
    for (int32_t id : backend_->tokenizer().encode(" The end.", false, false)) text += backend_->tokenizer().token_to_piece(id, false);
    return text;
  }
};

TEST_F(ChatClient, VersionModelsAndChat) {
  OllamaClient client({"127.0.0.1", server_->port()}, "");
  auto v = client.version();
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(*v, "1.2.3");
  auto names = client.model_names();
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, std::vector<std::string>{"scripted:latest"});
  SessionOptions session;
  session.model = "scripted";
  session.parameters = {{"seed", 5}};
  nlohmann::json body = session_request(session);
  body["messages"] = {{{"role", "user"}, {"content", "Hi"}}};
  std::ostringstream out, err;
  Console console{out, err};
  auto reply = stream_reply(client, "/api/chat", body, session, console);
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  EXPECT_EQ(out.str(), reply_text());
  EXPECT_EQ(reply->content, reply_text());
  EXPECT_EQ(reply->stats.done_reason, "stop");
  EXPECT_GT(reply->stats.eval_count, 0);
  EXPECT_GT(reply->stats.total_duration_ns, 0);
  EXPECT_EQ(backend_->records()[0]->request.sampling.seed, 5u);

  body["model"] = "other-model";
  auto missing = stream_reply(client, "/api/chat", body, session, console);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, "model 'other-model' not found");
  OllamaClient nowhere({"127.0.0.1", 1}, "");
  auto down = nowhere.version();
  ASSERT_FALSE(down.ok());
  EXPECT_NE(down.error().message.find("hearth serve"), std::string::npos);
}

TEST_F(ChatClient, ReplKeepsHistoryAndClears) {
  OllamaClient client({"127.0.0.1", server_->port()}, "");
  SessionOptions o;
  o.model = "scripted";
  o.system = "You are terse.";
  std::istringstream in("Hello\nHow are you?\n/clear\n\nAgain\n/nonsense\n/bye\nnever sent\n");
  std::ostringstream out, err, prompts;
  Console console{out, err};
  auto reader = make_stream_line_reader(in, prompts);
  EXPECT_EQ(run_repl(client, o, *reader, console), 0);
  EXPECT_EQ(out.str(), reply_text() + "\n\n" + reply_text() + "\n\nCleared session context\n" + reply_text() +
                           "\n\nUnknown command '/nonsense'. Type /? for help\n");
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
  SessionOptions session;
  session.model = "scripted";
  nlohmann::json body = session_request(session);
  body["messages"] = {{{"role", "user"}, {"content", "Hi"}}};
  std::ostringstream out, err;
  Console console{out, err};
  EXPECT_FALSE(stream_reply(without, "/api/chat", body, session, console).ok());
  auto reply = stream_reply(with, "/api/chat", body, session, console);
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  EXPECT_EQ(out.str(), reply_text());
}

}  // namespace
}  // namespace hearth::cli
