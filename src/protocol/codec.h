// Serialisation of the protocol types, so the same request can cross a process boundary to a
// runner. The form is compact JSON (one object per message): a chat request already carries
// JSON (messages, tools, schemas), and JSON keeps a runner's traffic readable in logs; the
// codec costs microseconds against milliseconds per generated token (bench_protocol_codec).
// Decoding never trusts its input: any bytes give a value or an error, never a crash.
// Floats that JSON cannot hold (a banned token's -inf bias) travel as "inf", "-inf", "nan".
#pragma once

#include <string>
#include <string_view>

#include "protocol/events.h"
#include "protocol/model_info.h"
#include "protocol/requests.h"

namespace hearth::protocol {

std::string encode(const CompletionRequest& request);
std::string encode(const EmbeddingRequest& request);
std::string encode(const Event& event);
std::string encode(const ModelInfo& info);

// Errors: kCorrupt naming the first field that is missing, mistyped or out of range.
Result<CompletionRequest> decode_completion_request(std::string_view bytes);
Result<EmbeddingRequest> decode_embedding_request(std::string_view bytes);
Result<Event> decode_event(std::string_view bytes);
Result<ModelInfo> decode_model_info(std::string_view bytes);

}  // namespace hearth::protocol
