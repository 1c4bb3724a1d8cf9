// OpenSSL server context from PEM files (see tls_context.h).
#include "server/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

namespace hearth::server {
namespace {

std::string openssl_reason() {
  const unsigned long e = ERR_get_error();
  if (e == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  ERR_clear_error();
  return buf;
}

}  // namespace

Result<std::shared_ptr<TlsContext>> TlsContext::load(const std::string& cert_file, const std::string& key_file) {
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return make_error(ErrorKind::kInternal, "cannot create a TLS context: " + openssl_reason());
  std::shared_ptr<TlsContext> out(new TlsContext(ctx));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // Writes may be retried from a moved buffer and may complete in parts (connection_stream.cpp).
  SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_ENABLE_PARTIAL_WRITE);
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1) {
    return make_error(ErrorKind::kInvalidArgument, "--ssl-cert-file " + cert_file + ": " + openssl_reason());
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    return make_error(ErrorKind::kInvalidArgument, "--ssl-key-file " + key_file + ": " + openssl_reason());
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return make_error(ErrorKind::kInvalidArgument,
                      "--ssl-key-file " + key_file + " does not match the certificate in " + cert_file + ": " + openssl_reason());
  }
  return out;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

SSL* TlsContext::new_session() const { return SSL_new(ctx_); }

}  // namespace hearth::server
