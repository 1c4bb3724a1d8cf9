// A small model for registry tests, laid out the way ollama stores one: a config blob, a
// "model" layer of random bytes and a template layer, each a file named sha256-<hex> in one
// folder, and the manifest that names them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "registry/registry_manifest.h"

namespace hearth::test {

struct TestModel {
  std::string dir;
  std::string manifest;
  std::vector<registry::BlobDescriptor> blobs;  // config first

  std::string blob_path(const std::string& digest) const;
  const registry::BlobDescriptor& model_layer() const { return blobs[1]; }
};

// Blob file path for `digest` inside `dir` (dir/sha256-<hex>).
std::string blob_file(const std::string& dir, const std::string& digest);
// Writes the blobs into `dir` and builds the manifest; model_bytes of random data from `seed`.
TestModel make_test_model(const std::string& dir, uint64_t model_bytes, uint32_t seed);
std::string read_whole_file(const std::string& path);
// Files in `dir` (names only, sorted).
std::vector<std::string> list_dir(const std::string& dir);

}  // namespace hearth::test
