// Resumable responses. A chat request sent with X-Conversation-Id runs detached from its HTTP
// connection: a producer thread pumps the response bytes into the conversation's ReplayBuffer
// whether or not anyone is connected, so a client that disconnects can come back with
// GET /v1/stream/{id}?from=N and receive the rest byte-identically. Finished streams stay for
// `keep_seconds`, then are forgotten. The registry only answers about ids a caller names;
// nothing lists them. It knows nothing about the engine: a stream is a pump function (produce
// the next bytes) and a cancel function.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/http_error.h"
#include "server/live_tap.h"
#include "server/replay_buffer.h"
#include "util/result.h"

namespace hearth::server {

// Produces a response's bytes. pump() appends the next bytes to `out` (waiting a little for
// them) and returns false once the response is complete; it may set `status` (an HTTP status
// for a response that failed before its first byte). cancel() asks it to stop soon.
struct StreamSource {
  std::function<bool(std::string& out, int& status)> pump;
  std::function<void()> cancel;
};

enum class StreamState { kRunning, kDone, kCancelled };
const char* stream_state_name(StreamState s);  // "running", "done", "cancelled"

class ResumableStream {
 public:
  ResumableStream(std::string id, std::string content_type, size_t buffer_bytes);
  ~ResumableStream();

  const std::string& id() const { return id_; }
  const std::string& content_type() const { return content_type_; }
  const ReplayBuffer& buffer() const { return buffer_; }
  // Every byte of the response for the connection that started it, whatever the replay
  // buffer drops (that connection reads only from here; see live_tap.h).
  LiveTap& live() { return live_; }
  StreamState state() const;
  int status() const;  // HTTP status of the response (200 unless it failed up front)
  void cancel();
  // Waits until the producer finished (tests, shutdown).
  void join();

 private:
  friend class StreamRegistry;
  void start(StreamSource source, std::function<void()> on_finish);

  const std::string id_;
  const std::string content_type_;
  ReplayBuffer buffer_;
  LiveTap live_;
  mutable std::mutex mu_;
  StreamState state_ = StreamState::kRunning;
  int status_ = 200;
  bool cancel_requested_ = false;
  std::function<void()> cancel_fn_;
  std::thread producer_;
};

struct StreamRegistryOptions {
  size_t buffer_bytes = 4u << 20;  // replay bytes kept per conversation
  int64_t keep_seconds = 300;      // finished streams stay this long
  size_t max_streams = 256;        // running + finished streams held at once
};

class StreamRegistry {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  explicit StreamRegistry(StreamRegistryOptions options = {}, Clock clock = nullptr);
  ~StreamRegistry();  // cancels and joins every producer

  // Ids are 1-128 characters of [A-Za-z0-9._:-].
  static bool valid_id(const std::string& id);

  // Starts the producer for `id`. Errors: a bad id (400), a stream still running under this id
  // (409), or the registry full of running streams (503). A finished stream under the same id
  // is replaced.
  Result<std::shared_ptr<ResumableStream>> start(const std::string& id, const std::string& content_type,
                                                 StreamSource source, HttpError* http_error);
  std::shared_ptr<ResumableStream> find(const std::string& id);
  // Stops a stream; false when the id is unknown.
  bool cancel(const std::string& id);

  struct Status {
    std::string id;
    bool found = false;
    StreamState state = StreamState::kRunning;
    uint64_t bytes = 0;         // end offset
    uint64_t first_byte = 0;    // oldest byte still replayable
  };
  std::vector<Status> lookup(const std::vector<std::string>& ids);

  size_t running() const;
  size_t size() const;
  // Forgets finished streams older than keep_seconds (also done on every start/find/lookup).
  void sweep();

 private:
  void sweep_locked(std::chrono::steady_clock::time_point now);

  StreamRegistryOptions options_;
  Clock clock_;
  mutable std::mutex mu_;
  struct Entry {
    std::shared_ptr<ResumableStream> stream;
    std::chrono::steady_clock::time_point finished_at;
    bool finished = false;
  };
  std::map<std::string, Entry> entries_;
};

}  // namespace hearth::server
