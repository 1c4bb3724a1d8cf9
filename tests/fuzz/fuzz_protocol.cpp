// libFuzzer target: messages from the other side of a process boundary. The first byte picks a
// decoder (completion request, embedding request, event, model info), the rest is the message.
// Any crash, sanitizer report or escaping exception is a bug; a message that decodes must
// encode and decode again to the same bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/codec.h"

namespace {

template <typename T, typename Decode>
void round_trip(std::string_view bytes, Decode decode) {
  auto first = decode(bytes);
  if (!first.ok()) return;
  const std::string once = hearth::protocol::encode(*first);
  auto second = decode(once);
  if (!second.ok() || hearth::protocol::encode(*second) != once) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 65536) return 0;
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 4) {
    case 0: round_trip<hearth::protocol::CompletionRequest>(bytes, hearth::protocol::decode_completion_request); break;
    case 1: round_trip<hearth::protocol::EmbeddingRequest>(bytes, hearth::protocol::decode_embedding_request); break;
    case 2: round_trip<hearth::protocol::Event>(bytes, hearth::protocol::decode_event); break;
    default: round_trip<hearth::protocol::ModelInfo>(bytes, hearth::protocol::decode_model_info); break;
  }
  return 0;
}
