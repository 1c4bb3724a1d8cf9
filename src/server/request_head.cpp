// Strict request-head check (see request_head.h).
#include "server/request_head.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace hearth::server {
namespace {

RequestHead refuse(RequestHead head, int status, std::string message) {
  head.status = status;
  head.message = std::move(message);
  return head;
}

bool ieq(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// RFC 9110 token characters (a method or a field name).
bool is_token_char(char c) {
  if (std::isalnum(static_cast<unsigned char>(c))) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The methods cpp-httplib 0.11 parses (any other gets its 400), and which of them it reads a
// body for (detail::expect_content).
constexpr std::array<std::string_view, 10> kMethods = {"GET",     "HEAD",    "POST",  "PUT",   "DELETE",
                                                       "CONNECT", "OPTIONS", "TRACE", "PATCH", "PRI"};
bool method_reads_body(std::string_view m) {
  return m == "POST" || m == "PUT" || m == "PATCH" || m == "PRI" || m == "DELETE";
}

}  // namespace

RequestHead check_request_head(std::string_view head, uint64_t max_body_bytes, std::string_view upload_prefix,
                               uint64_t upload_max_bytes) {
  RequestHead out;
  if (head.size() < 4 || head.substr(head.size() - 4) != "\r\n\r\n") {
    return refuse(out, 400, "the request head does not end with an empty line");
  }
  // Line endings and control bytes, for the whole head at once: only CRLF ends a line, and
  // only horizontal tab is allowed among the control bytes.
  for (size_t i = 0; i < head.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(head[i]);
    if (c == '\r') {
      if (i + 1 >= head.size() || head[i + 1] != '\n') return refuse(out, 400, "a bare CR in the request head");
      ++i;
    } else if (c == '\n') {
      return refuse(out, 400, "a line of the request head ends with LF instead of CRLF");
    } else if ((c < 0x20 && c != '\t') || c == 0x7f) {
      return refuse(out, 400, "a control byte in the request head");
    }
  }

  // Request line: METHOD SP TARGET SP HTTP/1.x, single spaces, nothing else.
  const size_t line_end = head.find("\r\n");
  const std::string_view line = head.substr(0, line_end);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp1 == std::string_view::npos || sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return refuse(out, 400, "the request line is not METHOD TARGET VERSION");
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  out.path = std::string(target.substr(0, target.find('?')));
  if (std::find(kMethods.begin(), kMethods.end(), method) == kMethods.end()) {
    return refuse(out, 400, "unknown request method");
  }
  out.method = std::string(method);
  out.reads_body = method_reads_body(method);
  if (target.empty() || target.find('\t') != std::string_view::npos) return refuse(out, 400, "an invalid request target");
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return refuse(out, 400, "the HTTP version must be HTTP/1.1 or HTTP/1.0");
  if (line.size() > kRequestLineMaxBytes) return refuse(out, 414, "the request target is too long");

  // Header fields.
  bool has_te = false;
  size_t pos = line_end + 2;
  while (pos < head.size() - 2) {
    const size_t end = head.find("\r\n", pos);
    const std::string_view field = head.substr(pos, end - pos);
    pos = end + 2;
    if (field.size() > kRequestLineMaxBytes) return refuse(out, 431, "a header line is too long");
    if (field.front() == ' ' || field.front() == '\t') return refuse(out, 400, "a folded header line (obsolete line folding)");
    const size_t colon = field.find(':');
    if (colon == std::string_view::npos || colon == 0) return refuse(out, 400, "a header line without a name");
    const std::string_view name = field.substr(0, colon);
    if (!std::all_of(name.begin(), name.end(), is_token_char)) {
      return refuse(out, 400, "an invalid header name (whitespace before the colon?)");
    }
    const std::string_view value = trim_ows(field.substr(colon + 1));
    if (ieq(name, "Content-Length")) {
      if (value.empty() || !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return refuse(out, 400, "Content-Length must be a non-negative decimal number");
      }
      uint64_t n = 0;
      bool overflow = false;
      for (char c : value) {
        const uint64_t digit = static_cast<uint64_t>(c - '0');
        if (n > (UINT64_MAX - digit) / 10) overflow = true;
        n = overflow ? UINT64_MAX : n * 10 + digit;
      }
      if (out.has_length && n != out.content_length) return refuse(out, 400, "two different Content-Length values");
      out.has_length = true;
      out.content_length = n;
    } else if (ieq(name, "Transfer-Encoding")) {
      if (has_te) return refuse(out, 400, "Transfer-Encoding given twice");
      has_te = true;
      if (!ieq(value, "chunked")) return refuse(out, 400, "only Transfer-Encoding: chunked is supported");
      out.chunked = true;
    }
  }
  if (out.has_length && out.chunked) return refuse(out, 400, "both Content-Length and Transfer-Encoding");
  if (!upload_prefix.empty() && out.method == "POST" && out.path.rfind(upload_prefix, 0) == 0) max_body_bytes = upload_max_bytes;
  if (out.has_length && out.content_length > max_body_bytes) {
    return refuse(out, 413, "the body is larger than the " + std::to_string(max_body_bytes) + " bytes this server accepts");
  }
  return out;
}

ChunkedBodyScanner::State ChunkedBodyScanner::scan(std::string_view body) {
  // A chunk-size line (with extensions) or a trailer line longer than this is refused.
  constexpr size_t kLineMax = 4096;
  for (;;) {
    const size_t line_end = body.find("\r\n", pos_);
    if (line_end == std::string_view::npos) {
      return body.size() - pos_ > kLineMax ? State::kInvalid : State::kIncomplete;
    }
    if (line_end - pos_ > kLineMax) return State::kInvalid;
    const std::string_view line = body.substr(pos_, line_end - pos_);
    if (in_trailers_) {
      pos_ = line_end + 2;
      if (line.empty()) return State::kComplete;
      if (line.find(':') == std::string_view::npos) return State::kInvalid;
      continue;
    }
    const std::string_view size_text = trim_ows(line.substr(0, line.find(';')));
    if (size_text.empty() || size_text.size() > 15) return State::kInvalid;
    uint64_t size = 0;
    for (char c : size_text) {
      const int digit = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                        : (c >= 'a' && c <= 'f')                   ? c - 'a' + 10
                        : (c >= 'A' && c <= 'F')                   ? c - 'A' + 10
                                                                   : -1;
      if (digit < 0) return State::kInvalid;
      size = size * 16 + static_cast<uint64_t>(digit);
    }
    if (size == 0) {
      in_trailers_ = true;
      pos_ = line_end + 2;
      trailers_begin_ = pos_;
      continue;
    }
    if (data_bytes_ + size > max_body_bytes_) return State::kTooLarge;
    const size_t data = line_end + 2;
    if (body.size() < data + size + 2) return State::kIncomplete;
    if (body.substr(data + size, 2) != "\r\n") return State::kInvalid;
    data_bytes_ += size;
    pos_ = data + size + 2;
  }
}

}  // namespace hearth::server
