// Resumable stream registry and producers (see stream_registry.h).
#include "server/stream_registry.h"

#include <algorithm>
#include <cctype>

namespace hearth::server {

const char* stream_state_name(StreamState s) {
  switch (s) {
    case StreamState::kRunning: return "running";
    case StreamState::kDone: return "done";
    case StreamState::kCancelled: return "cancelled";
  }
  return "unknown";
}

ResumableStream::ResumableStream(std::string id, std::string content_type, size_t buffer_bytes)
    : id_(std::move(id)), content_type_(std::move(content_type)), buffer_(buffer_bytes) {}

ResumableStream::~ResumableStream() {
  cancel();
  join();
}

StreamState ResumableStream::state() const {
  std::lock_guard lock(mu_);
  return state_;
}

int ResumableStream::status() const {
  std::lock_guard lock(mu_);
  return status_;
}

void ResumableStream::cancel() {
  std::function<void()> fn;
  {
    std::lock_guard lock(mu_);
    if (state_ != StreamState::kRunning) return;
    cancel_requested_ = true;
    fn = cancel_fn_;
  }
  if (fn) fn();
}

void ResumableStream::join() {
  if (producer_.joinable() && producer_.get_id() != std::this_thread::get_id()) producer_.join();
}

void ResumableStream::start(StreamSource source, std::function<void()> on_finish) {
  {
    std::lock_guard lock(mu_);
    cancel_fn_ = source.cancel;
  }
  producer_ = std::thread([this, source = std::move(source), on_finish = std::move(on_finish)] {
    std::string chunk;
    int status = 200;
    bool more = true;
    while (more) {
      chunk.clear();
      more = source.pump(chunk, status);
      {
        std::lock_guard lock(mu_);
        status_ = status;
      }
      buffer_.append(chunk);
      live_.append(chunk);
    }
    {
      std::lock_guard lock(mu_);
      state_ = cancel_requested_ ? StreamState::kCancelled : StreamState::kDone;
    }
    buffer_.close();
    live_.close();
    on_finish();
  });
}

StreamRegistry::StreamRegistry(StreamRegistryOptions options, Clock clock)
    : options_(options), clock_(clock ? std::move(clock) : [] { return std::chrono::steady_clock::now(); }) {}

StreamRegistry::~StreamRegistry() {
  std::map<std::string, Entry> entries;
  {
    std::lock_guard lock(mu_);
    entries.swap(entries_);
  }
  for (auto& [id, e] : entries) e.stream->cancel();
  for (auto& [id, e] : entries) e.stream->join();
}

bool StreamRegistry::valid_id(const std::string& id) {
  if (id.empty() || id.size() > 128) return false;
  return std::all_of(id.begin(), id.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '_' || c == ':' || c == '-';
  });
}

Result<std::shared_ptr<ResumableStream>> StreamRegistry::start(const std::string& id, const std::string& content_type,
                                                               StreamSource source, HttpError* http_error) {
  auto fail = [&](HttpError e) -> Error {
    Error err = make_error(ErrorKind::kInvalidArgument, e.message);
    if (http_error) *http_error = std::move(e);
    return err;
  };
  if (!valid_id(id)) return fail({400, "X-Conversation-Id must be 1-128 characters of A-Z a-z 0-9 . _ : -"});
  std::shared_ptr<ResumableStream> replaced;
  auto stream = std::make_shared<ResumableStream>(id, content_type, options_.buffer_bytes);
  {
    std::lock_guard lock(mu_);
    sweep_locked(clock_());
    auto it = entries_.find(id);
    if (it != entries_.end()) {
      if (!it->second.finished) {
        return fail(http_conflict("conversation '" + id + "' already has a running stream; DELETE /v1/stream/" + id +
                                  " to stop it"));
      }
      replaced = std::move(it->second.stream);
      entries_.erase(it);
    }
    if (entries_.size() >= options_.max_streams) {
      // Make room by forgetting the oldest finished stream; refuse when all are running.
      auto oldest = entries_.end();
      for (auto e = entries_.begin(); e != entries_.end(); ++e) {
        if (e->second.finished && (oldest == entries_.end() || e->second.finished_at < oldest->second.finished_at)) oldest = e;
      }
      if (oldest == entries_.end()) return fail(http_unavailable("too many resumable streams are running; try again later"));
      replaced = std::move(oldest->second.stream);
      entries_.erase(oldest);
    }
    entries_[id] = Entry{stream, {}, false};
  }
  std::weak_ptr<ResumableStream> weak = stream;
  stream->start(std::move(source), [this, weak, id] {
    std::lock_guard lock(mu_);
    auto it = entries_.find(id);
    auto s = weak.lock();
    if (it != entries_.end() && s && it->second.stream == s) {
      it->second.finished = true;
      it->second.finished_at = clock_();
    }
  });
  (void)replaced;  // joined (and freed) outside the lock when it goes out of scope
  return stream;
}

std::shared_ptr<ResumableStream> StreamRegistry::find(const std::string& id) {
  std::lock_guard lock(mu_);
  sweep_locked(clock_());
  auto it = entries_.find(id);
  return it == entries_.end() ? nullptr : it->second.stream;
}

bool StreamRegistry::cancel(const std::string& id) {
  auto s = find(id);
  if (!s) return false;
  s->cancel();
  return true;
}

std::vector<StreamRegistry::Status> StreamRegistry::lookup(const std::vector<std::string>& ids) {
  std::vector<Status> out;
  std::lock_guard lock(mu_);
  sweep_locked(clock_());
  for (const auto& id : ids) {
    Status s;
    s.id = id;
    auto it = entries_.find(id);
    if (it != entries_.end()) {
      s.found = true;
      s.state = it->second.stream->state();
      s.bytes = it->second.stream->buffer().end_offset();
      s.first_byte = it->second.stream->buffer().start_offset();
    }
    out.push_back(std::move(s));
  }
  return out;
}

size_t StreamRegistry::running() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [id, e] : entries_) n += e.finished ? 0 : 1;
  return n;
}

size_t StreamRegistry::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

void StreamRegistry::sweep() {
  std::lock_guard lock(mu_);
  sweep_locked(clock_());
}

void StreamRegistry::sweep_locked(std::chrono::steady_clock::time_point now) {
  const auto keep = std::chrono::seconds(options_.keep_seconds);
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.finished && now - it->second.finished_at >= keep) {
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace hearth::server
