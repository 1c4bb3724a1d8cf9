// `hearth serve`'s HTTP server: binds the address, answers /health (503 until a model is set)
// and every API route once set_backend() hands it the loaded model. Owns the cpp-httplib
// server, the resumable stream registry and the access policy; inference happens behind the
// protocol::InferenceBackend.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "protocol/backend.h"
#include "server/web_ui.h"
#include "router/model_router.h"
#include "store/model_description.h"
#include "store/model_store.h"
#include "util/result.h"

namespace hearth::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 11434;                      // 0: any free port (see HttpServer::port())
  std::string api_key;                   // empty: no key required
  std::vector<std::string> origins;      // CORS origins allowed besides the loopback defaults
  std::vector<std::string> allowed_hosts;  // Host names answered besides loopback and `host`
  size_t max_body_bytes = 32u << 20;     // larger request bodies get 413
  int http_threads = 32;                 // requests served at once (worker threads)
  size_t max_connections = 512;          // open connections in all; beyond: 503 and close
  size_t max_connections_per_client = 128;  // open connections from one address; beyond: 503
  int64_t head_timeout_ms = 10000;       // a request head must be complete this long after its first byte
  int64_t body_grace_ms = 10000;         // a body may stall this long at its start ...
  uint64_t body_min_bytes_per_second = 4096;  // ... and must then keep up this average rate
  size_t stream_buffer_bytes = 4u << 20; // replay bytes kept per resumable stream
  int64_t stream_keep_seconds = 300;     // finished resumable streams are kept this long
  size_t max_streams = 256;              // resumable streams held at once
  std::string version = "0.0.0";         // reported by /api/version and /props
  // Store mode (`hearth serve` without -m): /api/tags lists this store, /api/create, /api/copy,
  // /api/delete and /api/blobs manage it, and a request naming a stored model loads it through
  // the loader given to set_model_loader(). Null: one model given by set_backend().
  std::shared_ptr<const store::ModelStore> store;
  // /api/create may name GGUF files by their path on the server (registered in place by hard
  // link). Off by default: a client could otherwise read any file the server can.
  bool allow_local_files = false;
  uint64_t max_blob_bytes = 1ull << 40;  // POST /api/blobs bodies (read in pieces, never held)
  std::string tls_cert_file;             // both set: HTTPS with this PEM certificate (chain) ...
  std::string tls_key_file;              // ... and this PEM private key
  std::span<const WebAsset> web_ui;      // the browser UI's files served at /; empty: a page saying how to get it
};

// Loads a stored model for serving and returns its backend, which answers to the model's name
// (the app's job: the server holds no engine). Called with no other load running.
using StoreModelLoader =
    std::function<Result<std::shared_ptr<protocol::InferenceBackend>>(const store::ModelDescription& model)>;

class HttpServer {
 public:
  explicit HttpServer(ServerOptions options);
  ~HttpServer();  // stops and joins

  // Loads the TLS files when set, then binds host:port (port 0 picks a free one). Errors: TLS
  // files that cannot be used, an address that cannot be bound.
  Status bind();
  int port() const;
  // Serves on a background thread until stop().
  void start();
  void stop();

  // The model is ready: API routes start answering. Until then they (and /health) give 503.
  void set_backend(std::shared_ptr<protocol::InferenceBackend> backend);
  // Store mode: how a requested model is loaded. One model is loaded at a time; a request for
  // another replaces it (requests still running on the old one finish first on it).
  void set_model_loader(StoreModelLoader loader);
  // Router mode (store mode with runner processes): requests name any stored model; the router
  // loads each in its own runner (several at once), `make_spec` says what a model needs.
  void set_model_router(std::shared_ptr<router::ModelRouter> router,
                        std::function<router::ModelLoadSpec(const store::ModelDescription&)> make_spec);
  // Store mode: the loaded model's backend, when one is loaded (for shutting it down).
  std::shared_ptr<protocol::InferenceBackend> loaded_backend() const;

  struct State;

 private:
  std::unique_ptr<State> state_;
  std::thread thread_;
};

}  // namespace hearth::server
