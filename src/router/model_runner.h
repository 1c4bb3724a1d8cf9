// What the model scheduler (model_router.h) needs of one loaded model: its backend to forward
// requests to, whether it is busy or alive, its memory, and ways to shrink and stop it. The
// real one is a runner process (runner_client.h); scheduling tests use fakes.
#pragma once

#include <cstdint>
#include <memory>

#include "protocol/backend.h"

namespace hearth::router {

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  virtual std::shared_ptr<protocol::InferenceBackend> backend() = 0;
  // Streams accepted and not yet finished (a request in flight keeps its model loaded).
  virtual int32_t in_flight() const = 0;
  // False once the runner died or was stopped.
  virtual bool alive() const = 0;
  // Memory the model holds now: weights + committed KV + buffers (the process's RSS).
  virtual uint64_t memory_bytes() const = 0;
  // Of that, KV memory an idle runner can give back.
  virtual uint64_t kv_committed_bytes() const = 0;
  // Asks an idle runner to give its cached KV back (asynchronous).
  virtual void shrink_kv() = 0;
  // Stops it: running requests end with an error, the process exits or is killed after a
  // grace period. Returns at once; safe to call twice.
  virtual void stop() = 0;
};

}  // namespace hearth::router
