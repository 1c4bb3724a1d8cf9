// SHA-256 digests (OpenSSL) for content-addressed blobs and model file checks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "util/result.h"

namespace hearth {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* data, size_t size);
  // Lower-case hex digest (64 characters). The hasher must not be updated afterwards.
  std::string finish_hex();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

std::string sha256_hex(std::string_view data);
Result<std::string> sha256_file_hex(const std::string& path);

}  // namespace hearth
