// Engine events → encoder bytes for one request (see completion_driver.h).
#include "server/completion_driver.h"

#include <algorithm>

namespace hearth::server {

CompletionDriver::CompletionDriver(std::vector<std::shared_ptr<protocol::EventStream>> streams,
                                   std::unique_ptr<api::ResponseEncoder> encoder, api::Dialect dialect, bool streaming)
    : streams_(std::move(streams)),
      done_(streams_.size(), false),
      encoder_(std::move(encoder)),
      dialect_(dialect),
      streaming_(streaming) {}

CompletionDriver::~CompletionDriver() { cancel(); }

void CompletionDriver::cancel() {
  for (size_t i = 0; i < streams_.size(); ++i) {
    if (!done_[i]) streams_[i]->cancel();
  }
}

void CompletionDriver::finish_with_error(const Error& error, std::string& out) {
  error_ = http_error_from(error);
  cancel();
  if (streaming_) out += encoder_->error_chunk(api::error_body(dialect_, error_->status, error_->message));
  finished_ = true;
}

bool CompletionDriver::pump(std::string& out, std::chrono::milliseconds wait) {
  if (finished_) return false;
  if (!begun_) {
    begun_ = true;
    out += encoder_->begin();
  }
  const size_t active = static_cast<size_t>(std::count(done_.begin(), done_.end(), false));
  // With one choice running, block on it; with several, share the wait among them.
  const auto slice = active <= 1 ? wait : std::max(std::chrono::milliseconds(1), wait / static_cast<int>(active));
  for (size_t tried = 0; tried < streams_.size(); ++tried) {
    const size_t i = (next_ + tried) % streams_.size();
    if (done_[i]) continue;
    protocol::Event event;
    bool got = streams_[i]->next(event, slice);
    // Drain what is already queued without waiting again.
    while (got) {
      if (event.kind == protocol::Event::Kind::kError) {
        done_[i] = true;
        finish_with_error(event.error, out);
        return false;
      }
      if (event.kind == protocol::Event::Kind::kEmbedding) {
        done_[i] = true;
        finish_with_error(make_error(ErrorKind::kInternal, "the engine answered a completion with an embedding"), out);
        return false;
      }
      out += encoder_->on_event(static_cast<int32_t>(i), event);
      if (event.kind == protocol::Event::Kind::kDone) {
        done_[i] = true;
        break;
      }
      got = streams_[i]->next(event, std::chrono::milliseconds(0));
    }
    if (!out.empty()) {
      next_ = (i + 1) % streams_.size();
      break;
    }
  }
  if (std::all_of(done_.begin(), done_.end(), [](bool d) { return d; })) {
    out += encoder_->end();
    finished_ = true;
    return false;
  }
  return true;
}

}  // namespace hearth::server
