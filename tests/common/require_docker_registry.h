// The one way a test starts docker-registry: skipped (with the reason) when it is not
// installed, a failure under CI=true, where a skip would hide a missing package.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "common/docker_registry.h"
#include "common/test_paths.h"

// Starts a registry into `var` (a std::unique_ptr<DockerRegistry>), with `extra_config` appended
// to its config.yml; fails under CI=true and skips elsewhere when docker-registry is missing.
#define HEARTH_START_DOCKER_REGISTRY_WITH(var, extra_config)                                                 \
  do {                                                                                                       \
    if (!::hearth::test::file_exists(::hearth::test::DockerRegistry::executable())) {                        \
      if (::hearth::test::running_in_ci()) FAIL() << "docker-registry missing (scripts/setup.sh installs it)"; \
      GTEST_SKIP() << "docker-registry missing: " << ::hearth::test::DockerRegistry::executable();           \
    }                                                                                                        \
    std::string hearth_registry_error_;                                                                      \
    var = ::hearth::test::DockerRegistry::start(&hearth_registry_error_, extra_config);                      \
    ASSERT_NE(var, nullptr) << hearth_registry_error_;                                                       \
  } while (0)
#define HEARTH_START_DOCKER_REGISTRY(var) HEARTH_START_DOCKER_REGISTRY_WITH(var, "")
