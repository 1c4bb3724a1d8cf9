// Client disconnects and resumable streams over real sockets: a plain stream stops generating
// as soon as its client leaves; a stream started with X-Conversation-Id runs to the end without
// its client, and a reattaching client gets the byte-identical stream from any offset.
#include <gtest/gtest.h>

#include <thread>

#include "server_fixture.h"

namespace hearth::test {
namespace {

using api::Json;
using namespace std::chrono_literals;

bool wait_until(const std::function<bool()>& cond, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(2ms);
  }
  return cond();
}

class Streams : public ServerTest {
 protected:
  void SetUp() override {
    ServerTest::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    // Slow ticks make "stopped within a step or two" measurable.
    server::ServerOptions o;
    o.http_threads = 8;
    restart(o, false);
    backend_ = ScriptedBackend::create(scripted_model_path(), kScriptedReply, 5ms);
    server_->set_backend(backend_);
  }

};

// One streaming request that is abandoned after its first text chunk; returns the bytes
// received and how many tokens had been generated when the client hung up.
struct Abandoned {
  std::string received;
  int32_t generated_at_close = 0;
};

TEST_F(Streams, PlainStreamIsCancelledWhenItsClientLeaves) {
  struct Case {
    std::string path;
    std::string body;
    std::string marker;  // text that shows generated content arrived
  };
  const Case cases[] = {
      {"/v1/chat/completions", R"({"stream":true,"max_tokens":100000,"messages":[{"role":"user","content":"go"}]})", "\"content\":\" "},
      {"/api/chat", R"({"model":"scripted","options":{"num_predict":100000},"messages":[{"role":"user","content":"go"}]})", "\"content\":\" "},
      {"/v1/messages", R"({"stream":true,"max_tokens":100000,"messages":[{"role":"user","content":"go"}]})", "text_delta"},
  };
  size_t n = 0;
  for (const auto& c : cases) {
    Abandoned a;
    post_stream(c.path, c.body, {}, [&](const std::string& chunk) {
      a.received += chunk;
      if (a.received.find(c.marker) == std::string::npos) return true;
      a.generated_at_close = backend_->records().back()->generated;
      return false;  // hang up
    });
    ++n;
    ASSERT_TRUE(backend_->wait_for_records(n, 1s));
    auto record = backend_->records().back();
    ASSERT_TRUE(wait_until([&] { return record->finished.load(); }, 3s)) << c.path << " kept generating";
    EXPECT_TRUE(record->cancelled) << c.path;
    // 5 ms per token: the engine saw the cancellation within a few tokens (10 = 50 ms leaves
    // room for a loaded 2-core CI machine; one run at load 17 took 4).
    EXPECT_LE(record->generated - a.generated_at_close, 10) << c.path;
  }
  EXPECT_EQ(get("/health").status, 200);
}

TEST_F(Streams, NonStreamingRequestIsCancelledWhenItsClientLeaves) {
  httplib::Client cli("127.0.0.1", port_);
  cli.set_read_timeout(0, 200000);  // give up after 200 ms
  auto r = cli.Post("/v1/completions", R"({"prompt":"x","max_tokens":100000})", "application/json");
  EXPECT_FALSE(r);
  ASSERT_TRUE(backend_->wait_for_records(1, 1s));
  auto record = backend_->records()[0];
  ASSERT_TRUE(wait_until([&] { return record->finished.load(); }, 3s));
  EXPECT_TRUE(record->cancelled);
}

TEST_F(Streams, ResumableStreamCompletesAndReplaysByteIdentically) {
  const std::string body = R"({"stream":true,"max_tokens":40,"messages":[{"role":"user","content":"go"}]})";
  std::string first;
  auto r = post_stream("/v1/chat/completions", body, {{"X-Conversation-Id", "conv-A"}}, [&](const std::string& chunk) {
    first += chunk;
    return first.find("\"content\":\" ") == std::string::npos;  // hang up after the first text
  });
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("X-Conversation-Id"), "conv-A");
  ASSERT_TRUE(backend_->wait_for_records(1, 1s));
  auto record = backend_->records()[0];
  ASSERT_TRUE(wait_until([&] { return record->finished.load(); }, 5s));
  EXPECT_FALSE(record->cancelled);  // it kept going without its client
  EXPECT_EQ(record->generated, 40);

  auto lookup = post("/v1/streams/lookup", R"({"conversation_ids":["conv-A","conv-unknown"]})").json();
  ASSERT_EQ(lookup["streams"].size(), 2u);
  ASSERT_TRUE(wait_until([&] {
    return post("/v1/streams/lookup", R"({"conversation_ids":["conv-A"]})").json()["streams"][0]["status"] == "done";
  }, 2s));
  EXPECT_EQ(lookup["streams"][1]["status"], "not_found");

  auto full = get("/v1/stream/conv-A?from=0");
  ASSERT_EQ(full.status, 200);
  EXPECT_EQ(full.header("Content-Type"), "text/event-stream");
  EXPECT_EQ(full.body.compare(0, first.size(), first), 0) << "the replay must start with the bytes the client saw";
  const std::string done = "data: [DONE]\n\n";
  ASSERT_GT(full.body.size(), done.size());
  EXPECT_EQ(full.body.substr(full.body.size() - done.size()), done);
  std::string text;
  size_t pos = 0;
  while ((pos = full.body.find("\"content\":\"", pos)) != std::string::npos) {
    size_t end = full.body.find('"', pos + 11);
    text += full.body.substr(pos + 11, end - pos - 11);
    pos = end;
  }
  EXPECT_EQ(text, scripted_text(40));

  auto rest = get("/v1/stream/conv-A?from=" + std::to_string(first.size()));
  EXPECT_EQ(rest.header("X-Stream-Offset"), std::to_string(first.size()));
  EXPECT_EQ(first + rest.body, full.body);
  EXPECT_EQ(lookup["streams"][0]["conversation_id"], "conv-A");
}

TEST_F(Streams, ReattachFollowsLiveAndDeleteStops) {
  std::thread starter([&] {
    post_stream("/api/chat", R"({"model":"scripted","options":{"num_predict":30},"messages":[{"role":"user","content":"go"}]})",
                {{"X-Conversation-Id", "conv-B"}}, [](const std::string&) { return false; });
  });
  starter.join();
  ASSERT_TRUE(backend_->wait_for_records(1, 1s));
  auto follow = get("/v1/stream/conv-B");  // attaches while it runs and follows to the end
  ASSERT_EQ(follow.status, 200);
  EXPECT_EQ(follow.header("Content-Type"), "application/x-ndjson");
  EXPECT_NE(follow.body.find("\"done\":true"), std::string::npos);
  EXPECT_EQ(get("/v1/stream/conv-B?from=0").body, follow.body);

  // A second request under a running id conflicts; DELETE stops it.
  std::thread long_one([&] {
    post_stream("/v1/chat/completions", R"({"stream":true,"max_tokens":100000,"messages":[{"role":"user","content":"go"}]})",
                {{"X-Conversation-Id", "conv-C"}}, [](const std::string&) { return false; });
  });
  long_one.join();
  ASSERT_TRUE(backend_->wait_for_records(2, 1s));
  auto conflict = post("/v1/chat/completions", R"({"stream":true,"messages":[{"role":"user","content":"go"}]})",
                       {{"X-Conversation-Id", "conv-C"}});
  EXPECT_EQ(conflict.status, 409);
  auto stopped = del("/v1/stream/conv-C");
  ASSERT_EQ(stopped.status, 200);
  EXPECT_EQ(stopped.json()["status"], "cancelled");
  auto record = backend_->records()[1];
  ASSERT_TRUE(wait_until([&] { return record->finished.load(); }, 2s));
  EXPECT_TRUE(record->cancelled);
  // The id is free again once the stream ended.
  auto again = post("/v1/chat/completions", R"({"max_tokens":2,"messages":[{"role":"user","content":"go"}]})",
                    {{"X-Conversation-Id", "conv-C"}});
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(again.json()["object"], "chat.completion");
  EXPECT_EQ(get("/v1/stream/conv-C").body, again.body);  // a JSON response replays too
}

}  // namespace
}  // namespace hearth::test
