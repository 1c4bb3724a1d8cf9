// Where tests find shared data (../shared beside the checkout, or HEARTH_SHARED_DIR, with
// models overridable by HEARTH_TEST_MODELS) and how a missing file is handled: under CI=true
// it is a failure, elsewhere the test is skipped with a message saying what is missing.
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace hearth::test {

std::string shared_dir();     // .../shared
std::string models_dir();     // .../shared/models unless HEARTH_TEST_MODELS is set
std::string reference_dir();  // .../shared/reference
std::string vocab_dir();      // .../shared/vocab
std::string templates_dir();  // .../shared/templates
std::string source_dir();     // the checkout (for committed test data)
std::string binary_dir();     // the build tree (for the hearth executable)
bool running_in_ci();
bool file_exists(const std::string& path);
// A fresh empty directory under the system temp dir, unique per call.
std::string make_temp_dir();

}  // namespace hearth::test

// Use at the top of a test: HEARTH_REQUIRE_FILE(path); fails under CI, skips elsewhere.
#define HEARTH_REQUIRE_FILE(path)                                                              \
  do {                                                                                         \
    if (!::hearth::test::file_exists(path)) {                                                  \
      if (::hearth::test::running_in_ci()) FAIL() << "required test data missing: " << (path); \
      GTEST_SKIP() << "test data missing: " << (path);                                         \
    }                                                                                          \
  } while (0)
