// The child side of router mode: serves one loaded model (any protocol::InferenceBackend, in
// practice the engine's LocalBackend) to the router over a RunnerChannel. Requests arrive as
// frames, each accepted request's streams are pumped back as event frames by their own thread,
// and the runner's state goes out once a second. Links no engine: the app hands the backend in.
#pragma once

#include <functional>
#include <memory>

#include "protocol/backend.h"
#include "protocol/runner_wire.h"

namespace hearth::runner {

struct RunnerHooks {
  // The state to report while serving (phase kReady; memory and slot figures filled in).
  std::function<protocol::RunnerState()> sample_state;
  // The router asks for a KV limit (0: none): evict cached prefixes, release memory.
  std::function<void(uint64_t bytes)> set_kv_limit;
  // The router needs memory and this runner is idle: give back every cached KV chunk now.
  std::function<void()> shrink_kv;
};

// Sends the model's info and "ready", then serves until the router says kStop or goes away
// (end of file): either way running requests end with an error event and the backend is shut
// down. Returns the process exit status (0 after kStop, 1 when the channel broke).
int serve_runner(protocol::RunnerChannel& channel, std::shared_ptr<protocol::InferenceBackend> backend, const RunnerHooks& hooks);

}  // namespace hearth::runner
