// The poll thread where connections wait for a whole request (see connection_gate.h).
#include "server/connection_gate.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>

namespace hearth::server {
namespace {

using Clock = std::chrono::steady_clock;

// How often waiting connections are checked against their deadlines.
constexpr int kTickMs = 100;

// Where the line of header `name` starts in `head` and how long it is with its CRLF.
std::optional<std::pair<size_t, size_t>> find_header_line(std::string_view head, std::string_view name) {
  size_t pos = head.find("\r\n");
  while (pos != std::string_view::npos && pos + 2 < head.size()) {
    const size_t start = pos + 2;
    const size_t end = head.find("\r\n", start);
    if (end == std::string_view::npos || end == start) break;
    const std::string_view line = head.substr(start, end - start);
    if (line.size() > name.size() && line[name.size()] == ':' &&
        std::equal(name.begin(), name.end(), line.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
        })) {
      return std::make_pair(start, end + 2 - start);
    }
    pos = end;
  }
  return std::nullopt;
}

RequestHead refusal(const RequestHead& head, int status, std::string message) {
  RequestHead out = head;
  out.status = status;
  out.message = std::move(message);
  return out;
}

}  // namespace

Connection::Connection(int fd, std::string ip, int read_timeout_ms, int write_timeout_ms, std::function<void()> on_close)
    : stream(fd, read_timeout_ms, write_timeout_ms), client_ip(std::move(ip)), fd_(fd), on_close_(std::move(on_close)) {}

Connection::~Connection() {
  ::shutdown(fd_, SHUT_RDWR);
  ::close(fd_);
  if (on_close_) on_close_();
}

ConnectionGate::ConnectionGate(GateLimits limits, Dispatch dispatch, Refuse refuse)
    : limits_(limits), dispatch_(std::move(dispatch)), refuse_(std::move(refuse)) {
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

ConnectionGate::~ConnectionGate() {
  stop();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void ConnectionGate::start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { run(); });
}

void ConnectionGate::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    incoming_.clear();
  }
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
}

void ConnectionGate::add(std::shared_ptr<Connection> connection) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;  // dropping the last owner closes it
    connection->progress_ = Connection::Progress{};
    connection->progress_.waiting_since = Clock::now();
    incoming_.push_back(std::move(connection));
  }
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof(one));
}

size_t ConnectionGate::receive_limit(const Connection& c) const {
  const auto& p = c.progress_;
  if (!p.head_checked) return kRequestHeadMaxBytes;
  if (c.head.chunked) return p.head_size + 2 * limits_.max_body_bytes + kRequestHeadMaxBytes;  // chunk framing
  return p.head_size + c.head.content_length;
}

ConnectionGate::Verdict ConnectionGate::examine(Connection& c, bool got_data, Clock::time_point now) {
  auto& p = c.progress_;
  std::string_view bytes = c.stream.unread();
  if (!p.head_checked) {
    if (bytes.empty()) return now - p.waiting_since > limits_.idle_timeout ? Verdict::kClose : Verdict::kWait;
    if (!p.first_byte) p.first_byte = now;
    const size_t end = got_data ? bytes.find("\r\n\r\n") : std::string_view::npos;
    if (end == std::string_view::npos || end + 4 > kRequestHeadMaxBytes) {
      if (bytes.size() >= kRequestHeadMaxBytes) {
        c.head = refusal(c.head, 431, "the request head is larger than " + std::to_string(kRequestHeadMaxBytes) + " bytes");
        return Verdict::kRefuse;
      }
      if (now - *p.first_byte > limits_.head_timeout) {
        c.head = refusal(RequestHead{}, 408, "the request head did not arrive in time");
        return Verdict::kRefuse;
      }
      return Verdict::kWait;
    }
    c.head = check_request_head(bytes.substr(0, end + 4), limits_.max_body_bytes, limits_.upload_prefix,
                                limits_.upload_max_bytes);
    if (c.head.status != 0) return Verdict::kRefuse;
    p.head_size = end + 4;
    if (c.head.reads_body && !c.head.has_length && !c.head.chunked) {
      // No framing means no body (RFC 9112 6.3); cpp-httplib would read until the client closes.
      constexpr std::string_view kNoBody = "Content-Length: 0\r\n";
      c.stream.replace_unread(p.head_size - 2, 0, kNoBody);
      p.head_size += kNoBody.size();
    }
    const std::string_view head_bytes = c.stream.unread().substr(0, p.head_size);
    auto expect = find_header_line(head_bytes, "Expect");
    std::string expect_line = expect ? std::string(head_bytes.substr(expect->first, expect->second)) : "";
    for (auto& ch : expect_line) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (expect && expect_line.find("100-continue") == std::string::npos) {
      expect.reset();  // another expectation: left for cpp-httplib
    }
    if (expect) {
      // The gate answers "100 Continue" itself (cpp-httplib would only after the body arrived).
      c.stream.replace_unread(expect->first, expect->second, "");
      p.head_size -= expect->second;
      p.wants_continue = true;
    }
    if (c.head.chunked) p.chunks.emplace(limits_.max_body_bytes);
    p.head_checked = true;
    p.body_since = now;
    bytes = c.stream.unread();
  }
  if (c.head.reads_body && !limits_.upload_prefix.empty() && c.head.method == "POST" &&
      c.head.path.rfind(limits_.upload_prefix, 0) == 0) {
    // An upload (up to upload_max_bytes, far beyond what a buffer should hold): its route reads
    // the body from the connection as it arrives, under the connection's read timeout.
    if (p.wants_continue && !c.stream.send_now("HTTP/1.1 100 Continue\r\n\r\n")) return Verdict::kClose;
    c.body_streamed = true;
    c.request_bytes = p.head_size + (c.head.chunked ? 0 : c.head.content_length);
    return Verdict::kReady;
  }

  const std::string_view body = bytes.substr(p.head_size);
  bool complete = false;
  size_t body_size = 0;
  if (!c.head.reads_body) {
    // cpp-httplib never reads a body here; the connection closes after the answer.
    complete = true;
    c.body_left_unread = c.head.chunked || c.head.content_length > 0;
  } else if (c.head.chunked) {
    switch (p.chunks->scan(body)) {
      case ChunkedBodyScanner::State::kInvalid:
        c.head = refusal(c.head, 400, "malformed chunked body");
        return Verdict::kRefuse;
      case ChunkedBodyScanner::State::kTooLarge:
        c.head = refusal(c.head, 413, "");
        return Verdict::kRefuse;
      case ChunkedBodyScanner::State::kComplete:
        complete = true;
        body_size = p.chunks->end();
        if (body_size > p.chunks->trailers_begin() + 2) {
          // Trailer fields: cpp-httplib 0.11 cannot read them, and Hearth uses none.
          const size_t trailers = body_size - 2 - p.chunks->trailers_begin();
          c.stream.replace_unread(p.head_size + p.chunks->trailers_begin(), trailers, "");
          body_size -= trailers;
        }
        break;
      case ChunkedBodyScanner::State::kIncomplete:
        if (bytes.size() >= receive_limit(c)) {
          c.head = refusal(c.head, 413, "");
          return Verdict::kRefuse;
        }
        break;
    }
  } else {
    body_size = c.head.content_length;
    complete = body.size() >= body_size;
  }
  if (complete) {
    c.request_bytes = p.head_size + body_size;
    return Verdict::kReady;
  }
  if (p.wants_continue && !p.continue_sent) {
    p.continue_sent = true;
    if (!c.stream.send_now("HTTP/1.1 100 Continue\r\n\r\n")) return Verdict::kClose;
  }
  const auto late = now - p.body_since - limits_.body_grace;
  if (late.count() > 0) {
    const double owed = std::chrono::duration<double>(late).count() * static_cast<double>(limits_.body_min_bytes_per_second);
    if (static_cast<double>(body.size()) < owed) {
      c.head = refusal(c.head, 408, "the request body arrived slower than " + std::to_string(limits_.body_min_bytes_per_second) +
                                        " bytes per second");
      return Verdict::kRefuse;
    }
  }
  return Verdict::kWait;
}

void ConnectionGate::run() {
  std::vector<std::shared_ptr<Connection>> waiting;
  std::vector<bool> fresh;  // just added: examine its buffered bytes as new data
  std::vector<pollfd> fds;
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) break;
      for (auto& c : incoming_) {
        waiting.push_back(std::move(c));
        fresh.push_back(true);
      }
      incoming_.clear();
    }
    fds.assign(1, pollfd{wake_fd_, POLLIN, 0});
    bool any_fresh = false;
    for (size_t i = 0; i < waiting.size(); ++i) {
      fds.push_back(pollfd{waiting[i]->fd_, POLLIN, 0});
      any_fresh = any_fresh || fresh[i] || waiting[i]->stream.has_pending();
    }
    int r = ::poll(fds.data(), fds.size(), any_fresh ? 0 : (waiting.empty() ? -1 : kTickMs));
    if (r < 0 && errno != EINTR) break;
    if (fds[0].revents & POLLIN) {
      uint64_t v;
      [[maybe_unused]] ssize_t n = ::read(wake_fd_, &v, sizeof(v));
    }
    const auto now = Clock::now();
    size_t kept = 0;
    for (size_t i = 0; i < waiting.size(); ++i) {
      std::shared_ptr<Connection> c = std::move(waiting[i]);
      bool got_data = fresh[i];
      bool readable = fds[i + 1].revents != 0 || c->stream.has_pending();
      bool failed = false;
      if (c->stream.tls() && !c->tls_ready && (readable || fresh[i])) {
        // The handshake's own deadline is the idle timeout: no request byte has come yet.
        const auto h = c->stream.handshake();
        failed = h == ConnectionStream::Handshake::kFailed;
        c->tls_ready = h == ConnectionStream::Handshake::kDone;
        readable = c->tls_ready;
      }
      if (readable && (!c->stream.tls() || c->tls_ready)) {
        const auto received = c->stream.receive_available(receive_limit(*c));
        if (received == ConnectionStream::Receive::kClosed) c->peer_closed = true;
        got_data = got_data || received != ConnectionStream::Receive::kNothing;
      }
      Verdict v = failed ? Verdict::kClose : examine(*c, got_data, now);
      if (v == Verdict::kWait && c->peer_closed) v = Verdict::kClose;
      switch (v) {
        case Verdict::kWait:
          waiting[kept] = std::move(c);
          fresh[kept] = false;
          ++kept;
          break;
        case Verdict::kReady:
          dispatch_(std::move(c));
          break;
        case Verdict::kRefuse:
          refuse_(*c, c->head);
          break;
        case Verdict::kClose:
          break;
      }
    }
    waiting.resize(kept);
    fresh.resize(kept);
  }
}

}  // namespace hearth::server
