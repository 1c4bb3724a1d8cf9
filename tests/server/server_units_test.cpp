// The server's parts without HTTP: replay buffer bounds, the resumable stream registry, the
// access policy (key, origin parsing, Host allowlist), the request-head check, error → status mapping and the Prometheus text.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "prometheus_check.h"
#include "server/access_policy.h"
#include "server/http_error.h"
#include "server/metrics_text.h"
#include "server/replay_buffer.h"
#include "server/request_head.h"
#include "server/server_state.h"
#include "server/stream_registry.h"

namespace hearth::server {
namespace {

using namespace std::chrono_literals;

std::string read_all(const ReplayBuffer& b, uint64_t from) {
  std::string out;
  while (b.read(from + out.size(), out, 0ms) == ReplayBuffer::ReadStatus::kData) {
  }
  return out;
}

TEST(ReplayBuffer, KeepsNewestBytesAndReportsDropped) {
  ReplayBuffer b(10);
  b.append("abcdef");
  EXPECT_EQ(read_all(b, 0), "abcdef");
  EXPECT_EQ(read_all(b, 4), "ef");
  b.append("ghijkl");  // 12 bytes written; the first 2 are gone
  EXPECT_EQ(b.start_offset(), 2u);
  EXPECT_EQ(b.end_offset(), 12u);
  EXPECT_EQ(read_all(b, 2), "cdefghijkl");
  std::string out;
  EXPECT_EQ(b.read(1, out, 0ms), ReplayBuffer::ReadStatus::kGone);
  b.append(std::string(25, 'x') + "TAIL");  // one append larger than the capacity
  EXPECT_EQ(b.end_offset(), 41u);
  EXPECT_EQ(b.start_offset(), 31u);
  EXPECT_EQ(read_all(b, 31), "xxxxxxTAIL");
  EXPECT_EQ(b.read(41, out, 0ms), ReplayBuffer::ReadStatus::kTimeout);
  b.close();
  EXPECT_EQ(b.read(41, out, 0ms), ReplayBuffer::ReadStatus::kEnd);
  EXPECT_EQ(b.read(500, out, 0ms), ReplayBuffer::ReadStatus::kEnd);  // beyond the end: clamped
}

TEST(ReplayBuffer, ReaderFollowsWriterAcrossWraps) {
  ReplayBuffer b(64);
  std::string expected;
  for (int i = 0; i < 200; ++i) expected += "chunk" + std::to_string(i) + ";";
  std::thread writer([&] {
    for (int i = 0; i < 200; ++i) {
      b.append("chunk" + std::to_string(i) + ";");
      if (i % 8 == 0) std::this_thread::sleep_for(1ms);
    }
    b.close();
  });
  // A reader that keeps up sees every byte in order; one that falls behind is told kGone.
  std::string got;
  bool gone = false;
  for (;;) {
    auto st = b.read(got.size(), got, 100ms, 16);
    if (st == ReplayBuffer::ReadStatus::kEnd) break;
    if (st == ReplayBuffer::ReadStatus::kGone) {
      gone = true;
      break;
    }
  }
  writer.join();
  if (!gone) EXPECT_EQ(got, expected);
  else EXPECT_EQ(expected.compare(0, got.size(), got), 0);
}

StreamSource counting_source(int chunks, std::atomic<bool>* cancelled, std::chrono::milliseconds delay = 1ms) {
  auto i = std::make_shared<int>(0);
  StreamSource s;
  s.pump = [i, chunks, cancelled, delay](std::string& out, int&) {
    if (cancelled->load()) return false;
    std::this_thread::sleep_for(delay);
    out += "data: " + std::to_string((*i)++) + "\n\n";
    return *i < chunks;
  };
  s.cancel = [cancelled] { cancelled->store(true); };
  return s;
}

TEST(StreamRegistry, RunsWithoutReadersAndExpires) {
  auto now = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  StreamRegistry reg(StreamRegistryOptions{1024, 300, 4}, [now] { return *now; });
  std::atomic<bool> cancelled{false};
  HttpError err;
  auto s = reg.start("conv-1", "text/event-stream", counting_source(20, &cancelled), &err);
  ASSERT_TRUE(s.ok());
  (*s)->join();
  EXPECT_EQ((*s)->state(), StreamState::kDone);
  std::string all = read_all((*s)->buffer(), 0);
  EXPECT_EQ(all.substr(0, 9), "data: 0\n\n");
  EXPECT_NE(all.find("data: 19\n\n"), std::string::npos);
  auto status = reg.lookup({"conv-1", "nope"});
  ASSERT_EQ(status.size(), 2u);
  EXPECT_TRUE(status[0].found);
  EXPECT_EQ(status[0].bytes, all.size());
  EXPECT_FALSE(status[1].found);
  // Kept for keep_seconds after finishing, then forgotten.
  *now += std::chrono::seconds(299);
  EXPECT_NE(reg.find("conv-1"), nullptr);
  *now += std::chrono::seconds(2);
  EXPECT_EQ(reg.find("conv-1"), nullptr);
}

TEST(StreamRegistry, ConflictsCancelAndCapacity) {
  StreamRegistry reg(StreamRegistryOptions{1024, 300, 2});
  std::atomic<bool> c1{false}, c2{false}, c3{false};
  HttpError err;
  auto a = reg.start("a", "text/event-stream", counting_source(1000000, &c1, 2ms), &err);
  ASSERT_TRUE(a.ok());
  auto again = reg.start("a", "text/event-stream", counting_source(1, &c2), &err);
  EXPECT_FALSE(again.ok());
  EXPECT_EQ(err.status, 409);
  EXPECT_FALSE(reg.start("bad id!", "text/event-stream", counting_source(1, &c2), &err).ok());
  EXPECT_EQ(err.status, 400);
  auto b = reg.start("b", "text/event-stream", counting_source(1000000, &c2, 2ms), &err);
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(reg.start("c", "text/event-stream", counting_source(1, &c3), &err).ok());  // full of running streams
  EXPECT_EQ(err.status, 503);
  EXPECT_EQ(reg.running(), 2u);
  EXPECT_TRUE(reg.cancel("a"));
  (*a)->join();
  EXPECT_EQ((*a)->state(), StreamState::kCancelled);
  EXPECT_TRUE(c1.load());
  // A finished stream makes room, and its id can be reused.
  auto c = reg.start("a", "text/event-stream", counting_source(1, &c3), &err);
  EXPECT_TRUE(c.ok());
  EXPECT_FALSE(reg.cancel("unknown"));
}

TEST(AccessPolicy, ApiKeyHeaders) {
  AccessPolicy open("", {});
  EXPECT_TRUE(open.authorized("", ""));
  AccessPolicy keyed("s3cret", {});
  EXPECT_FALSE(keyed.authorized("", ""));
  EXPECT_TRUE(keyed.authorized("Bearer s3cret", ""));
  EXPECT_TRUE(keyed.authorized("bearer s3cret", ""));
  EXPECT_TRUE(keyed.authorized("", "s3cret"));
  EXPECT_FALSE(keyed.authorized("Bearer s3cre", ""));
  EXPECT_FALSE(keyed.authorized("Bearer s3cret2", ""));
  EXPECT_FALSE(keyed.authorized("Basic s3cret", ""));
  EXPECT_FALSE(keyed.authorized("", "wrong"));
}

TEST(AccessPolicy, Origins) {
  AccessPolicy p("", AccessPolicy::parse_origin_list(" https://app.example.com ,https://*.corp.example"));
  EXPECT_TRUE(p.origin_allowed("http://localhost"));
  EXPECT_TRUE(p.origin_allowed("http://localhost:3000"));
  EXPECT_TRUE(p.origin_allowed("http://127.0.0.1:8080"));
  EXPECT_TRUE(p.origin_allowed("https://app.example.com"));
  EXPECT_TRUE(p.origin_allowed("https://x.corp.example"));
  EXPECT_FALSE(p.origin_allowed("https://evil.example"));
  EXPECT_FALSE(p.origin_allowed("http://localhost.evil.example"));
  EXPECT_FALSE(p.origin_allowed("https://app.example.com.evil"));
  AccessPolicy any("", {"*"});
  EXPECT_TRUE(any.origin_allowed("https://anything"));
  EXPECT_TRUE(wildcard_match("a*b*c", "axxbyyc"));
  EXPECT_FALSE(wildcard_match("a*b*c", "axxbyy"));
}

TEST(AccessPolicy, SameOriginIsTheHostTheRequestNamed) {
  EXPECT_TRUE(same_origin("http://192.168.1.5:11434", "192.168.1.5:11434", false));
  EXPECT_TRUE(same_origin("http://Box.LAN:8080", "box.lan:8080", false));
  EXPECT_TRUE(same_origin("http://box.lan", "box.lan:80", false));  // default ports on either side
  EXPECT_TRUE(same_origin("http://box.lan:80", "box.lan", false));
  EXPECT_TRUE(same_origin("https://box.lan", "box.lan:443", true));
  EXPECT_TRUE(same_origin("http://[fe80::1]:11434", "[fe80::1]:11434", false));
  EXPECT_FALSE(same_origin("http://box.lan:8080", "box.lan:8081", false));  // another port: another server
  EXPECT_FALSE(same_origin("https://box.lan:8080", "box.lan:8080", false));  // the listener speaks http
  EXPECT_FALSE(same_origin("http://box.lan:8080", "box.lan:8080", true));
  EXPECT_FALSE(same_origin("http://box.lan", "box.lan:443", false));
  EXPECT_FALSE(same_origin("http://box.lan.evil.example", "box.lan", false));
  for (const char* host : {"", "box.lan/x", "box.lan:8080@evil", "box.lan:99999", "user@box.lan"}) {
    EXPECT_FALSE(same_origin("http://box.lan:8080", host, false)) << host;
  }
  EXPECT_FALSE(same_origin("null", "box.lan", false));
}

TEST(AccessPolicy, OriginParsingIsExact) {
  auto o = parse_origin("HTTP://LocalHost:5173");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->scheme, "http");
  EXPECT_EQ(o->host, "localhost");
  EXPECT_EQ(o->port, 5173);
  ASSERT_TRUE(parse_origin("http://[::1]:8080").has_value());
  EXPECT_EQ(parse_origin("http://[::1]:8080")->host, "[::1]");
  for (const char* bad : {"http://localhost:80@evil.com", "http://localhost/", "http://localhost:", "http://localhost:123456",
                          "http://", "localhost", "://x", "http://[::1", "http://[]", "http://a b", "null", ""}) {
    EXPECT_FALSE(parse_origin(bad).has_value()) << bad;
  }
  AccessPolicy p("", {"http://localhost:*"});
  EXPECT_FALSE(p.origin_allowed("http://localhost:80@evil.com"));
  EXPECT_FALSE(p.origin_allowed("http://127.0.0.1.nip.io"));
  EXPECT_TRUE(p.origin_allowed("http://[::1]:8080"));
  EXPECT_TRUE(p.origin_allowed("tauri://localhost"));
}

TEST(AccessPolicy, HostAllowlist) {
  EXPECT_EQ(host_without_port("LocalHost:11434"), "localhost");
  EXPECT_EQ(host_without_port("[::1]:8080"), "[::1]");
  EXPECT_EQ(host_without_port("example.com."), "example.com");
  AccessPolicy loopback("", {}, "127.0.0.1", {"box.lan", "*.corp.example"});
  for (const char* ok : {"localhost", "localhost:1", "127.0.0.1:11434", "[::1]", "ui.localhost", "box.lan:80", "x.corp.example", ""}) {
    EXPECT_TRUE(loopback.host_allowed(ok, "127.0.0.1")) << ok;
  }
  for (const char* bad : {"evil.example", "localhost.evil.example", "corp.example", "192.168.1.5", "box.lan.evil"}) {
    EXPECT_FALSE(loopback.host_allowed(bad, "127.0.0.1")) << bad;
  }
  // Bound to a LAN address, or to every address: the address the connection reached.
  AccessPolicy lan("", {}, "192.168.1.5");
  EXPECT_TRUE(lan.host_allowed("192.168.1.5:11434", "192.168.1.5"));
  AccessPolicy any_addr("", {}, "0.0.0.0");
  EXPECT_TRUE(any_addr.host_allowed("10.0.0.7:11434", "10.0.0.7"));
  EXPECT_FALSE(any_addr.host_allowed("evil.example", "10.0.0.7"));
  AccessPolicy v6("", {}, "::");
  EXPECT_TRUE(v6.host_allowed("[fe80::1]:11434", "fe80::1"));
  EXPECT_TRUE(AccessPolicy("k", {}).host_allowed("evil.example", "127.0.0.1"));  // a key makes the name moot
  EXPECT_TRUE(AccessPolicy("", {}, "127.0.0.1", {"*"}).host_allowed("anything", "127.0.0.1"));
}

TEST(RequestHead, AcceptsOrdinaryHeads) {
  auto h = check_request_head("POST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: a\r\ncontent-length:  12 \r\n\r\n", 100);
  EXPECT_EQ(h.status, 0) << h.message;
  EXPECT_EQ(h.path, "/v1/chat/completions");
  EXPECT_TRUE(h.has_length);
  EXPECT_EQ(h.content_length, 12u);
  EXPECT_TRUE(h.reads_body);
  auto c = check_request_head("POST /api/chat HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n", 100);
  EXPECT_EQ(c.status, 0);
  EXPECT_TRUE(c.chunked);
  auto g = check_request_head("GET /health HTTP/1.0\r\n\r\n", 100);
  EXPECT_EQ(g.status, 0);
  EXPECT_FALSE(g.reads_body);
  EXPECT_EQ(check_request_head("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", 100).status, 0);
}

TEST(RequestHead, RefusesAmbiguousFraming) {
  const std::pair<const char*, int> cases[] = {
      {"GET /\r\n\r\n", 400},
      {"get / HTTP/1.1\r\n\r\n", 400},
      {"GET / HTTP/2\r\n\r\n", 400},
      {"GET / HTTP/1.1 x\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length:\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: identity\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length : 1\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\n Content-Length: 1\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nnocolon\r\n\r\n", 400},
      {"POST / HTTP/1.1\nHost: a\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: a\rb\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: a\x01\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n", 413},
      {"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", 413},
  };
  for (const auto& [head, status] : cases) {
    EXPECT_EQ(check_request_head(head, 100).status, status) << head;
  }
  EXPECT_EQ(check_request_head("GET /" + std::string(9000, 'a') + " HTTP/1.1\r\n\r\n", 100).status, 414);
  EXPECT_EQ(check_request_head("GET / HTTP/1.1\r\nX: " + std::string(9000, 'a') + "\r\n\r\n", 100).status, 431);
}

TEST(LiveTap, KeepsEveryByteUntilDetached) {
  LiveTap tap;
  tap.append("ab");
  tap.append("cd");
  std::string out;
  EXPECT_EQ(tap.read(out, 0ms), LiveTap::ReadStatus::kData);
  EXPECT_EQ(out, "abcd");
  EXPECT_EQ(tap.read(out, 1ms), LiveTap::ReadStatus::kTimeout);
  tap.append("e");
  tap.close();
  EXPECT_EQ(tap.read(out, 0ms), LiveTap::ReadStatus::kData);
  EXPECT_EQ(tap.read(out, 0ms), LiveTap::ReadStatus::kEnd);
  EXPECT_EQ(out, "abcde");
  LiveTap gone;
  gone.detach();
  gone.append("x");
  gone.close();
  std::string none;
  EXPECT_EQ(gone.read(none, 0ms), LiveTap::ReadStatus::kEnd);
  EXPECT_TRUE(none.empty());
}

TEST(HttpErrors, KindsMapToStatuses) {
  EXPECT_EQ(http_error_from(make_error(ErrorKind::kInvalidArgument, "x")).status, 400);
  EXPECT_EQ(http_error_from(make_error(ErrorKind::kUnsupported, "x")).status, 400);
  EXPECT_EQ(http_error_from(make_error(ErrorKind::kOutOfRange, "x")).status, 400);
  EXPECT_EQ(http_error_from(make_error(ErrorKind::kNotFound, "x")).status, 404);
  EXPECT_EQ(http_error_from(make_error(ErrorKind::kInternal, "x")).status, 500);
  EXPECT_EQ(http_error_from(make_error(ErrorKind::kIo, "x")).status, 500);
  EXPECT_EQ(dialect_for_path("/api/chat"), api::Dialect::kOllama);
  EXPECT_EQ(dialect_for_path("/v1/messages/count_tokens"), api::Dialect::kAnthropic);
  EXPECT_EQ(dialect_for_path("/v1/chat/completions"), api::Dialect::kOpenAI);
  EXPECT_EQ(dialect_for_path("/health"), api::Dialect::kOpenAI);
}

// Routes answer in the dialect they were registered with; answers made before routing (401,
// 403, cpp-httplib's 404/405/413) take it from the path. Both must agree for every route.
TEST(HttpErrors, EachRouteIsRegisteredWithItsPathsDialect) {
  State s{ServerOptions{}};
  register_ollama_routes(s);
  register_openai_routes(s);
  register_anthropic_routes(s);
  register_extra_routes(s);
  register_stream_routes(s);
  ASSERT_GT(s.routes.size(), 20u);
  size_t per_dialect[3] = {0, 0, 0};
  for (const auto& route : s.routes) {
    EXPECT_EQ(route.dialect, dialect_for_path(route.pattern)) << route.method << " " << route.pattern;
    ++per_dialect[static_cast<int>(route.dialect)];
  }
  EXPECT_GT(per_dialect[static_cast<int>(api::Dialect::kOllama)], 0u);
  EXPECT_GT(per_dialect[static_cast<int>(api::Dialect::kOpenAI)], 0u);
  EXPECT_GT(per_dialect[static_cast<int>(api::Dialect::kAnthropic)], 0u);
}

TEST(MetricsText, IsValidPrometheusText) {
  protocol::EngineMetrics m;
  m.prompt_tokens_total = 120;
  m.generated_tokens_total = 33;
  m.requests_processing = 2;
  m.requests_waiting = 1;
  m.kv_blocks_used = 7;
  m.kv_blocks_total = 64;
  m.kv_blocks_cached = 5;
  m.cached_tokens_total = 40;
  m.kv_bytes_committed = 4 << 20;
  m.kv_device_bytes_committed = 2 << 20;
  m.kv_evictions_total = 3;
  m.ttft.bounds = {0.005, 0.05, 0.5};
  for (double v : {0.001, 0.02, 0.02, 3.0}) m.ttft.observe(v);
  m.inter_token.bounds = {0.01};
  ServerCounters s;
  s.responses_by_status = {{200, 5}, {400, 2}};
  std::string text = metrics_text(m, s);
  auto parsed = test::parse_prometheus_text(text);
  ASSERT_TRUE(parsed.ok) << parsed.error << "\n" << text;
  EXPECT_EQ(parsed.types["hearth_prompt_tokens_total"], "counter");
  EXPECT_EQ(parsed.types["hearth_time_to_first_token_seconds"], "histogram");
  EXPECT_EQ(parsed.samples["hearth_prompt_tokens_total"], 120);
  EXPECT_EQ(parsed.samples["hearth_generated_tokens_total"], 33);
  EXPECT_EQ(parsed.samples["hearth_requests_processing"], 2);
  EXPECT_EQ(parsed.samples["hearth_requests_waiting"], 1);
  EXPECT_EQ(parsed.samples["hearth_kv_blocks_used"], 7);
  EXPECT_EQ(parsed.samples["hearth_kv_blocks_total"], 64);
  EXPECT_EQ(parsed.samples["hearth_kv_blocks_cached"], 5);
  EXPECT_EQ(parsed.samples["hearth_kv_blocks_free"], 57);
  EXPECT_EQ(parsed.samples["hearth_kv_committed_bytes"], 4 << 20);
  EXPECT_EQ(parsed.samples["hearth_kv_device_committed_bytes"], 2 << 20);
  EXPECT_EQ(parsed.types["hearth_kv_evictions_total"], "counter");
  EXPECT_EQ(parsed.samples["hearth_kv_evictions_total"], 3);
  EXPECT_DOUBLE_EQ(parsed.samples["hearth_kv_prefix_hit_ratio"], 0.25);  // 40 of 160 prompt tokens
  EXPECT_EQ(parsed.samples["hearth_time_to_first_token_seconds_bucket{le=\"0.005\"}"], 1);
  EXPECT_EQ(parsed.samples["hearth_time_to_first_token_seconds_bucket{le=\"0.05\"}"], 3);
  EXPECT_EQ(parsed.samples["hearth_time_to_first_token_seconds_bucket{le=\"0.5\"}"], 3);
  EXPECT_EQ(parsed.samples["hearth_time_to_first_token_seconds_bucket{le=\"+Inf\"}"], 4);
  EXPECT_EQ(parsed.samples["hearth_time_to_first_token_seconds_count"], 4);
  EXPECT_NEAR(parsed.samples["hearth_time_to_first_token_seconds_sum"], 3.041, 1e-9);
  EXPECT_EQ(parsed.samples["hearth_http_responses_total{code=\"400\"}"], 2);
  EXPECT_EQ(parsed.samples["hearth_inter_token_latency_seconds_count"], 0);
  // The checker itself rejects broken text.
  EXPECT_FALSE(test::parse_prometheus_text("no_type 1\n").ok);
  EXPECT_FALSE(test::parse_prometheus_text("# TYPE x counter\nx{a=b} 1\n").ok);
  EXPECT_FALSE(test::parse_prometheus_text("# TYPE x counter\nx one\n").ok);
  EXPECT_EQ(prometheus_number(0.005), "0.005");
  EXPECT_EQ(prometheus_number(1.0 / 0.0), "+Inf");
}

}  // namespace
}  // namespace hearth::server
