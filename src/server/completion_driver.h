// Drives one HTTP completion: the engine streams of its choices in, the dialect's encoder
// bytes out. The same driver feeds a plain streaming response, a non-streaming one (which
// collects everything) and a resumable stream's producer. Each pump() call waits a little for
// events, so the caller can check on its client between calls.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/response_encoder.h"
#include "protocol/backend.h"
#include "server/http_error.h"

namespace hearth::server {

class CompletionDriver {
 public:
  CompletionDriver(std::vector<std::shared_ptr<protocol::EventStream>> streams, std::unique_ptr<api::ResponseEncoder> encoder,
                   api::Dialect dialect, bool streaming);
  ~CompletionDriver();  // cancels whatever is still running

  // Appends the next bytes to `out`, waiting up to `wait` for engine events. Returns false once
  // the response is complete (the last bytes were appended by that call).
  bool pump(std::string& out, std::chrono::milliseconds wait);
  // Stops every unfinished choice (the engine frees their slots within one step).
  void cancel();

  // The first engine error, if any. A streaming response has already carried it as an error
  // chunk; a non-streaming one should answer with this status instead of the body.
  const std::optional<HttpError>& error() const { return error_; }
  const char* content_type() const { return encoder_->content_type(); }

 private:
  void finish_with_error(const Error& error, std::string& out);

  std::vector<std::shared_ptr<protocol::EventStream>> streams_;
  std::vector<bool> done_;
  std::unique_ptr<api::ResponseEncoder> encoder_;
  api::Dialect dialect_;
  bool streaming_;
  bool begun_ = false;
  bool finished_ = false;
  size_t next_ = 0;  // round-robin position among choices
  std::optional<HttpError> error_;
};

}  // namespace hearth::server
