// A real registry for tests: Debian's docker-registry (the reference Docker Distribution
// server) started on a free loopback port with a fresh storage folder, ready once GET /v2/
// answers, and stopped (SIGTERM, then SIGKILL) with its folder removed when the object goes.
// Registry and store tests both use it; nothing here knows Hearth's registry client.
#pragma once

#include <sys/types.h>

#include "common/test_paths.h"

#include <memory>
#include <string>

namespace hearth::test {

class DockerRegistry {
 public:
  // The executable: HEARTH_DOCKER_REGISTRY, else /usr/bin/docker-registry.
  static std::string executable();
  // Starts one; on failure returns nullptr and sets *error to what went wrong (with the log).
  static std::unique_ptr<DockerRegistry> start(std::string* error);
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

// Starts a registry into `var` (a std::unique_ptr<DockerRegistry>); fails under CI=true and
// skips elsewhere when docker-registry is not installed.
#define HEARTH_START_DOCKER_REGISTRY(var)                                                                  \
  do {                                                                                                     \
    if (!::hearth::test::file_exists(::hearth::test::DockerRegistry::executable())) {                      \
      if (::hearth::test::running_in_ci()) FAIL() << "docker-registry missing (scripts/setup.sh installs it)"; \
      GTEST_SKIP() << "docker-registry missing: " << ::hearth::test::DockerRegistry::executable();         \
    }                                                                                                      \
    std::string hearth_registry_error_;                                                                    \
    var = ::hearth::test::DockerRegistry::start(&hearth_registry_error_);                                  \
    ASSERT_NE(var, nullptr) << hearth_registry_error_;                                                     \
  } while (0)
