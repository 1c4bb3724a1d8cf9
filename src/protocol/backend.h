// The line between the HTTP side and an inference engine. The HTTP side holds an
// InferenceBackend and never a model: it submits protocol requests and reads events. The
// engine side implements it in this process (engine::LocalBackend); a runner process behind
// a socket can implement it with the same types (protocol/codec.h).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/engine_status.h"
#include "protocol/events.h"
#include "protocol/model_info.h"
#include "protocol/requests.h"
#include "util/result.h"

namespace hearth::protocol {

// One choice's (or one embedding input's) events, read by one consumer. Thread-safe.
class EventStream {
 public:
  virtual ~EventStream() = default;
  // Waits up to `timeout` for the next event; false when none came in time. After the final
  // event (kDone, kError, kEmbedding) it returns false at once.
  virtual bool next(Event& out, std::chrono::milliseconds timeout) = 0;
  // The consumer is gone: the engine stops the request within one step (the final event is
  // then kDone with StopReason::kCancelled). Dropping the last reference does not cancel.
  virtual void cancel() = 0;
};

// An accepted completion: one stream per choice, prompt-major (all choices of prompt 0, then
// prompt 1, ...), and what the engine side made of each prompt.
struct CompletionSubmission {
  std::vector<std::shared_ptr<EventStream>> streams;
  std::vector<PromptInfo> prompts;
};

// An accepted embeddings request: one stream per input, each yielding one kEmbedding event
// (whose n_tokens counts the input's tokens after truncation).
struct EmbeddingSubmission {
  std::vector<std::shared_ptr<EventStream>> streams;
};

// One token of /tokenize: its id and its bytes.
struct TokenPiece {
  int32_t id = 0;
  std::string piece;
};

class InferenceBackend {
 public:
  virtual ~InferenceBackend() = default;
  virtual const ModelInfo& model_info() const = 0;
  // sha256 of the model file in lower-case hex; "" while it is still being computed.
  virtual std::string digest() const { return model_info().digest; }

  // Prepares and queues a request; never waits for generation. A request the engine side
  // rejects (a bad prompt, grammar or sampling option, a full queue: kUnavailable) is an
  // error here, before any event, so the HTTP side can still answer with a status.
  virtual Result<CompletionSubmission> submit(const CompletionRequest& request) = 0;
  virtual Result<EmbeddingSubmission> submit(const EmbeddingRequest& request) = 0;

  // A prompt as the engine side would prepare it, without running it (Anthropic's
  // count_tokens).
  virtual Result<PromptInfo> render_prompt(const PromptSource& source) const = 0;
  // llama-server's /tokenize, /detokenize and /apply-template. `chat` is an OpenAI-style body.
  virtual Result<std::vector<TokenPiece>> tokenize(const std::string& text, bool add_special, bool parse_special,
                                                   bool with_pieces) const = 0;
  virtual Result<std::string> detokenize(const std::vector<int32_t>& ids) const = 0;
  virtual Result<std::string> apply_template(const nlohmann::ordered_json& chat) const = 0;

  virtual EngineMetrics metrics() const = 0;
  virtual std::vector<SlotInfo> slots() const = 0;

  // The process is stopping: every queued and running request ends with a kError event
  // (kUnavailable, "the server is shutting down") and later submissions are refused. Returns
  // once nothing generates any more. A backend with nothing to stop does nothing.
  virtual void shut_down() {}
};

}  // namespace hearth::protocol
