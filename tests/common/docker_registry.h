// A real registry for tests: Debian's docker-registry (the reference Docker Distribution
// server) started on a free loopback port with a fresh storage folder, ready once GET /v2/
// answers, and stopped (SIGTERM, then SIGKILL) with its folder removed when the object goes.
// Registry and store tests use it (through require_docker_registry.h), and so does the pull
// benchmark; it needs neither GoogleTest nor Hearth's registry client.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

namespace hearth::test {

class DockerRegistry {
 public:
  // The executable: HEARTH_DOCKER_REGISTRY, else /usr/bin/docker-registry.
  static std::string executable();
  // Starts one; on failure returns nullptr and sets *error to what went wrong (with the log).
  // `extra_config` is appended to config.yml (an `auth:` section, for instance).
  static std::unique_ptr<DockerRegistry> start(std::string* error, const std::string& extra_config = "");
  ~DockerRegistry();
  DockerRegistry(const DockerRegistry&) = delete;
  DockerRegistry& operator=(const DockerRegistry&) = delete;

  int port() const { return port_; }
  std::string address() const;  // "127.0.0.1:PORT"
  std::string url() const;      // "http://127.0.0.1:PORT"
  const std::string& storage_dir() const { return storage_; }
  // Where the registry keeps a blob's bytes ("sha256:<hex>"), for tests that corrupt it.
  std::string blob_data_path(const std::string& digest) const;

 private:
  DockerRegistry() = default;
  pid_t pid_ = -1;
  int port_ = 0;
  std::string dir_;      // config, log and storage live here
  std::string storage_;  // dir_/storage
};

// A free TCP port on 127.0.0.1 (bound and released; a small race with other processes).
int pick_free_loopback_port();

}  // namespace hearth::test
