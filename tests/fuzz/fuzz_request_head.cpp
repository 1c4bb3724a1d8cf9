// libFuzzer target: the request heads that reach `hearth serve` from the network, before
// cpp-httplib sees them. Any crash or sanitizer report is a bug, and so is an accepted head
// whose framing contradicts itself (chunked and a Content-Length at once, a length over the
// limit) or a refusal without a 4xx status and a reason. The same bytes are also scanned as a
// chunked body, first half then whole (the gate feeds it as bytes arrive): a body end beyond the
// bytes, or data beyond the limit, is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/request_head.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 2 * hearth::server::kRequestHeadMaxBytes) return 0;
  std::string_view head(reinterpret_cast<const char*>(data), size);
  constexpr uint64_t kLimit = 1 << 20;
  const hearth::server::RequestHead h = hearth::server::check_request_head(head, kLimit);
  if (h.status == 0) {
    if (h.chunked && h.has_length) __builtin_trap();
    if (h.has_length && h.content_length > kLimit) __builtin_trap();
    if (h.method.empty()) __builtin_trap();
  } else if (h.status < 400 || h.status > 499 || h.message.empty()) {
    __builtin_trap();
  }
  hearth::server::ChunkedBodyScanner chunks(kLimit);
  using State = hearth::server::ChunkedBodyScanner::State;
  State state = chunks.scan(head.substr(0, size / 2));
  if (state == State::kIncomplete) state = chunks.scan(head);
  if (state == State::kComplete && (chunks.end() > size || chunks.trailers_begin() + 2 > chunks.end())) __builtin_trap();
  if (chunks.data_bytes() > kLimit) __builtin_trap();
  return 0;
}
