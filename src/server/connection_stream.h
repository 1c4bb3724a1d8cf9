// One client connection's socket as cpp-httplib's Stream, with the bytes received and not yet
// read kept in a buffer. The connection gate (connection_gate.h) fills that buffer without
// waiting until it holds a whole request, and the worker thread then lets cpp-httplib read the
// request from it, so a worker never waits on a slow client. Besides: writes use MSG_NOSIGNAL,
// so a client that vanished never raises SIGPIPE; is_writable() notices a peer that closed its
// socket (cpp-httplib 0.11 only notices when a write fails), so a streaming response can cancel
// its generation at once. With TLS (tls_context.h) the same stream reads and writes through an
// OpenSSL session on a non-blocking socket; the gate runs the handshake.
#pragma once

#include <httplib.h>

#include <cstdint>
#include <string>
#include <string_view>

typedef struct ssl_st SSL;

namespace hearth::server {

class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(int fd, int read_timeout_ms, int write_timeout_ms)
      : fd_(fd), read_timeout_ms_(read_timeout_ms), write_timeout_ms_(write_timeout_ms) {}
  ~ConnectionStream() override;  // ends the TLS session, if any (the socket is the owner's)
  ConnectionStream(const ConnectionStream&) = delete;
  ConnectionStream& operator=(const ConnectionStream&) = delete;

  // Serves this connection over TLS: takes `ssl` (set to this socket), makes the socket
  // non-blocking. The gate then calls handshake() until it is done.
  void use_tls(SSL* ssl);
  enum class Handshake { kDone, kWaiting, kFailed };
  Handshake handshake();
  bool tls() const { return ssl_ != nullptr; }
  // Decrypted bytes held inside the TLS session (poll() does not see them).
  bool has_pending() const;

  // cpp-httplib's side.
  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return fd_; }

  // False once the peer closed or reset its side. Bytes waiting to be read (a pipelined
  // request) do not count as a close.
  bool peer_connected() const;

  // The gate's side.
  enum class Receive { kData, kNothing, kClosed };
  // Appends what the socket holds now, without waiting, until `limit` unread bytes are buffered.
  Receive receive_available(size_t limit);
  // The bytes received and not yet read.
  std::string_view unread() const { return std::string_view(buf_).substr(pos_); }
  // Replaces `count` unread bytes at `offset` with `bytes` (a header the gate adds or removes).
  void replace_unread(size_t offset, size_t count, std::string_view bytes);
  // Sends `bytes` if the socket takes them now (a small answer from the gate); false if not.
  bool send_now(std::string_view bytes);
  // Bytes handed to cpp-httplib so far.
  uint64_t consumed() const { return consumed_; }
  // Drops the bytes already read and gives back a buffer that a large body grew. Returns the
  // capacity released.
  size_t release_read_bytes();

 private:
  // recv() or SSL_read(): > 0 bytes, 0 at end of stream, < 0 with errno (EAGAIN when nothing is
  // there yet and `wait` is false).
  ssize_t recv_some(char* to, size_t size, bool wait);
  ssize_t send_some(const char* from, size_t size, bool wait);

  int fd_;
  int read_timeout_ms_;
  int write_timeout_ms_;
  std::string buf_;  // bytes received; [pos_, size) not yet read
  size_t pos_ = 0;
  uint64_t consumed_ = 0;
  SSL* ssl_ = nullptr;
};

// The textual address of a peer or local socket address.
void socket_address_text(const sockaddr_storage& addr, std::string& ip, int& port);

}  // namespace hearth::server
