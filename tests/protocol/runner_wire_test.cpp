// The router <-> runner wire: frames round-trip over a socket pair, a closed peer and a bad
// header are errors (never a crash or a huge allocation), and the small payloads (state,
// submission, metrics, slots, errors) decode what was encoded and survive garbage.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include "protocol/runner_wire.h"

namespace hearth::protocol {
namespace {

struct Pair {
  int fds[2];
  Pair() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0); }
};

TEST(RunnerWire, FramesRoundTrip) {
  Pair p;
  RunnerChannel a(p.fds[0]), b(p.fds[1]);
  ASSERT_TRUE(a.send({RunnerMessage::kEvent, 42, 3, std::string("hello\0world", 11)}).ok());
  ASSERT_TRUE(a.send({RunnerMessage::kStop, 0, 0, ""}).ok());
  auto f = b.receive();
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->type, RunnerMessage::kEvent);
  EXPECT_EQ(f->id, 42u);
  EXPECT_EQ(f->index, 3u);
  EXPECT_EQ(f->payload, std::string("hello\0world", 11));
  auto g = b.receive();
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->type, RunnerMessage::kStop);
}

TEST(RunnerWire, ClosedPeerAndBadHeadersAreErrors) {
  {
    Pair p;
    RunnerChannel b(p.fds[1]);
    ::close(p.fds[0]);
    auto f = b.receive();
    ASSERT_FALSE(f.ok());
    EXPECT_EQ(f.error().kind, ErrorKind::kIo);
  }
  {
    Pair p;
    RunnerChannel b(p.fds[1]);
    const unsigned char huge[17] = {0xff, 0xff, 0xff, 0xff, 67};
    ASSERT_EQ(::write(p.fds[0], huge, sizeof huge), 17);
    auto f = b.receive();
    ASSERT_FALSE(f.ok());
    EXPECT_EQ(f.error().kind, ErrorKind::kCorrupt);
    ::close(p.fds[0]);
  }
  {
    Pair p;
    RunnerChannel b(p.fds[1]);
    const unsigned char unknown[17] = {0, 0, 0, 0, 99};
    ASSERT_EQ(::write(p.fds[0], unknown, sizeof unknown), 17);
    auto f = b.receive();
    ASSERT_FALSE(f.ok());
    EXPECT_NE(f.error().message.find("unknown message type 99"), std::string::npos);
    ::close(p.fds[0]);
  }
}

TEST(RunnerWire, PayloadsRoundTripAndRefuseGarbage) {
  RunnerState s;
  s.phase = RunnerState::Phase::kFailed;
  s.resident_bytes = 123456789;
  s.kv_committed_bytes = 2 << 20;
  s.busy_slots = 3;
  s.error = make_error(ErrorKind::kOutOfRange, "needs 9 GiB, 4 GiB available");
  auto back = decode_runner_state(encode_runner_state(s));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->phase, RunnerState::Phase::kFailed);
  EXPECT_EQ(back->resident_bytes, 123456789u);
  EXPECT_EQ(back->busy_slots, 3);
  EXPECT_EQ(back->error.kind, ErrorKind::kOutOfRange);
  EXPECT_EQ(back->error.message, s.error.message);
  EXPECT_FALSE(decode_runner_state("{\"phase\":\"dancing\"}").ok());
  EXPECT_FALSE(decode_runner_state("[1,2").ok());

  PromptInfo prompt{3, {1, 2, 3}, "abc"};
  prompt.output.family = "hermes";  // how the server splits tool calls and reasoning out of the text
  prompt.output.tool_calls = true;
  prompt.output.reasoning_open = true;
  prompt.output.framed = true;
  prompt.output.prefilled = "Sure <tool_call>";
  auto sub = decode_submitted(encode_submitted(2, {prompt}));
  ASSERT_TRUE(sub.ok());
  EXPECT_EQ(sub->first, 2u);
  ASSERT_EQ(sub->second.size(), 1u);
  EXPECT_EQ(sub->second[0].ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(sub->second[0].output.family, "hermes");
  EXPECT_TRUE(sub->second[0].output.tool_calls);
  EXPECT_FALSE(sub->second[0].output.reasoning);
  EXPECT_TRUE(sub->second[0].output.reasoning_open);
  EXPECT_TRUE(sub->second[0].output.framed);
  EXPECT_EQ(sub->second[0].output.prefilled, "Sure <tool_call>");
  EXPECT_FALSE(decode_submitted("{\"streams\":0}").ok());
  EXPECT_FALSE(decode_submitted("{\"streams\":\"x\"}").ok());

  EngineMetrics m;
  m.generated_tokens_total = 77;
  m.kv_preemptions_total = 5;
  m.kv_bytes_committed = 4 << 20;
  m.kv_device_bytes_committed = 3 << 20;
  m.ttft.bounds = {0.1, 1.0};
  m.ttft.counts = {1, 2, 3};
  m.ttft.count = 6;
  const EngineMetrics mb = metrics_from_json(metrics_to_json(m));
  EXPECT_EQ(mb.generated_tokens_total, 77u);
  EXPECT_EQ(mb.kv_preemptions_total, 5u);
  EXPECT_EQ(mb.kv_bytes_committed, 4u << 20);
  EXPECT_EQ(mb.kv_device_bytes_committed, 3u << 20);
  EXPECT_EQ(mb.ttft.counts, m.ttft.counts);
  EXPECT_EQ(metrics_from_json(nlohmann::json::parse("{\"ttft\":{\"bounds\":[1],\"counts\":[1,2,3,4]}}")).ttft.counts.size(), 2u);

  SlotInfo slot;
  slot.id = 1;
  slot.busy = true;
  slot.generated = 9;
  const auto slots = slots_from_json(slots_to_json({slot}));
  ASSERT_EQ(slots.size(), 1u);
  EXPECT_TRUE(slots[0].busy);
  EXPECT_EQ(slots[0].generated, 9);
  EXPECT_TRUE(slots_from_json(nlohmann::json::parse("[1, \"x\", {\"id\": \"bad\"}]")).size() == 1u);
  EXPECT_EQ(error_from_json(nlohmann::json(5)).kind, ErrorKind::kInternal);
}

}  // namespace
}  // namespace hearth::protocol
