// Locating shared test data (see test_paths.h).
#include "common/test_paths.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>

namespace hearth::test {
namespace {
std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? std::string(v) : fallback;
}
}  // namespace

std::string shared_dir() { return env_or("HEARTH_SHARED_DIR", HEARTH_DEFAULT_SHARED_DIR); }
std::string models_dir() { return env_or("HEARTH_TEST_MODELS", shared_dir() + "/models"); }
std::string reference_dir() { return shared_dir() + "/reference"; }
std::string vocab_dir() { return shared_dir() + "/vocab"; }
std::string templates_dir() { return shared_dir() + "/templates"; }
std::string source_dir() { return HEARTH_SOURCE_DIR; }
std::string binary_dir() { return HEARTH_BINARY_DIR; }

bool running_in_ci() {
  const char* v = std::getenv("CI");
  return v != nullptr && std::string(v) != "" && std::string(v) != "0" && std::string(v) != "false";
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::string make_temp_dir() {
  static std::atomic<int> counter{0};
  std::string base = env_or("TMPDIR", "/tmp");
  for (;;) {
    std::string dir = base + "/hearth-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    if (::mkdir(dir.c_str(), 0700) == 0) return dir;
  }
}

}  // namespace hearth::test
