// The framing check every request passes before cpp-httplib parses it. cpp-httplib 0.11 is
// lenient where leniency lets bytes that were not a request be served as one: it answers an
// invalid request line with 400 and keeps reading the connection, reads a negative or huge
// Content-Length as an unsigned number and skips that many bytes before answering, lets
// Transfer-Encoding win over Content-Length, reads a POST without either until the client
// closes, and skips header lines that end in a bare LF. check_request_head() reads the head
// (request line and header fields) once, strictly, and decides the framing; a head it refuses
// is answered with `status` and the connection closed, and a head it accepts is one cpp-httplib
// parses the same way (see http_listener.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace hearth::server {

struct RequestHead {
  int status = 0;        // 0: acceptable; else the 4xx to answer before closing
  std::string message;   // why, for the error body
  std::string method;
  std::string path;      // target up to '?', for the error's dialect
  bool chunked = false;
  bool has_length = false;
  uint64_t content_length = 0;
  // cpp-httplib reads a body for this method (POST, PUT, PATCH, DELETE, PRI); for others
  // (GET, HEAD, OPTIONS...) any body would be left on the connection.
  bool reads_body = false;
};

// Largest head (request line and headers together) accepted; beyond it: 431.
inline constexpr size_t kRequestHeadMaxBytes = 64 * 1024;
// Longest request target and header line, as cpp-httplib's own limits (414 / 431 beyond).
inline constexpr size_t kRequestLineMaxBytes = 8192;

// `head`: the bytes up to and including the first "\r\n\r\n". Refuses (400) a malformed request
// line, a bare CR or LF, control bytes, folded or nameless header lines, whitespace before a
// colon, a Content-Length that is not a plain decimal number or given twice with different
// values, both Content-Length and Transfer-Encoding, and any Transfer-Encoding but "chunked";
// 413 for a Content-Length above `max_body_bytes`; 414 for a target, 431 for a header line
// beyond kRequestLineMaxBytes.
// `upload_prefix`/`upload_max_bytes`: a POST whose path starts with the prefix may send up to
// that many bytes instead (blob uploads).
RequestHead check_request_head(std::string_view head, uint64_t max_body_bytes, std::string_view upload_prefix = {},
                               uint64_t upload_max_bytes = 0);

// Finds where a chunked body ends (RFC 9112 7.1), so that the whole body can be received before
// a worker reads it. Feed it the bytes after the head as they grow; it resumes where it stopped.
class ChunkedBodyScanner {
 public:
  enum class State { kIncomplete, kComplete, kInvalid, kTooLarge };
  explicit ChunkedBodyScanner(uint64_t max_body_bytes) : max_body_bytes_(max_body_bytes) {}
  // `body`: every byte received after the head so far (a longer view of the same bytes each time).
  State scan(std::string_view body);
  // With kComplete: the body's length on the wire (through the last CRLF).
  size_t end() const { return pos_; }
  // With kComplete: where the trailer fields start (after the last chunk's size line); cpp-httplib
  // 0.11 reads no trailer fields, so the gate removes them.
  size_t trailers_begin() const { return trailers_begin_; }
  // Data bytes (chunk contents) seen so far.
  uint64_t data_bytes() const { return data_bytes_; }

 private:
  uint64_t max_body_bytes_;
  size_t pos_ = 0;            // start of the next chunk-size line (or trailer line)
  bool in_trailers_ = false;  // the last chunk was seen
  size_t trailers_begin_ = 0;
  uint64_t data_bytes_ = 0;
};

}  // namespace hearth::server
