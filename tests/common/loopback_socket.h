// A TCP connection to a server on this machine's loopback address, for tests that must send
// bytes a client library would never send (or watch a connection the way a client would not).
#pragma once

namespace hearth::test {

// A connected socket to 127.0.0.1:port, or -1. The caller closes it.
int connect_loopback(int port);

}  // namespace hearth::test
