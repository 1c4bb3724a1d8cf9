// libFuzzer target: what a registry sends back and what a user types as a name. The first byte
// picks a parser (manifest, WWW-Authenticate challenge, endpoint, repository/reference), the
// rest is the input. Any crash, sanitizer report or escaping exception is a bug; a manifest that
// parses must name only valid digests, since they become file names.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "registry/http_client.h"
#include "registry/registry_manifest.h"
#include "registry/registry_reference.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hearth::registry;
  if (size < 1 || size > 65536) return 0;
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 4) {
    case 0: {
      auto m = parse_manifest(bytes);
      if (m.ok()) {
        for (const auto& b : m->blobs()) {
          if (!validate_blob_digest(b.digest).ok()) __builtin_trap();
        }
      }
      break;
    }
    case 1: (void)parse_auth_challenge(bytes); break;
    case 2: {
      auto ep = parse_registry_endpoint(bytes, data[0] & 4);
      if (ep.ok() && !parse_registry_endpoint(ep->base_url(), true).ok()) __builtin_trap();
      break;
    }
    case 3: {
      size_t colon = bytes.find(':');
      (void)validate_repository(bytes.substr(0, colon));
      if (colon != std::string_view::npos) (void)validate_reference(bytes.substr(colon + 1));
      break;
    }
  }
  return 0;
}
