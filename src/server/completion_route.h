// The part every text-generation route shares once its dialect parsed the body: model checks,
// prompt preparation, submission, and the three ways to answer — a plain stream (cancelled
// when the client goes away), a single JSON body, or a resumable stream when the request
// carries X-Conversation-Id (generation continues without the client; bytes go to the replay
// buffer, which this connection and any later GET /v1/stream/{id} follow).
#pragma once

#include <memory>
#include <string>

#include "api/response_encoder.h"
#include "server/server_state.h"

namespace hearth::server {

using EncoderFactory = std::unique_ptr<api::ResponseEncoder> (*)(const api::CompletionJob&, api::ResponseMeta);

// Answers `job` (the route's translation of the body it parsed once) in call.dialect's shape.
void serve_completion(const RouteCall& call, Result<api::CompletionJob> job, EncoderFactory make_encoder,
                      const std::string& id_prefix);

// Answers with a resumable stream's bytes from absolute offset `from`: chunked and following
// live for event streams, the whole body (after it completes) for JSON responses; a 410 for
// dropped bytes in call.dialect's shape.
void serve_stream_follow(const RouteCall& call, std::shared_ptr<ResumableStream> stream, uint64_t from);

}  // namespace hearth::server
