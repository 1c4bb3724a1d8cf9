// HTTPS for `hearth serve --ssl-cert-file C --ssl-key-file K` (llama-server's flags): the
// OpenSSL context made once from the PEM files, and a session per accepted connection. The
// connection stream (connection_stream.h) reads and writes through the session, and the gate
// runs the handshake under the same deadlines as a request head, so the slow-client and
// connection-cap protections hold for HTTPS too. OpenSSL writes with write(2), not send() with
// MSG_NOSIGNAL: the process must ignore SIGPIPE (`hearth serve` does).
#pragma once

#include <memory>
#include <string>

#include "util/result.h"

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace hearth::server {

class TlsContext {
 public:
  // Errors (kInvalidArgument): a file that cannot be read, is not PEM, or a key that does not
  // match the certificate; the message names the file and OpenSSL's reason.
  static Result<std::shared_ptr<TlsContext>> load(const std::string& cert_file, const std::string& key_file);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // A new server session (owned by the caller), or nullptr when OpenSSL is out of memory.
  SSL* new_session() const;

 private:
  explicit TlsContext(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* ctx_;
};

}  // namespace hearth::server
