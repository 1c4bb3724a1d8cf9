// Test models for the registry tests (see registry_test_model.h).
#include "registry/registry_test_model.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "util/sha256.h"

namespace hearth::test {
namespace {

registry::BlobDescriptor write_blob(const std::string& dir, const std::string& bytes, const std::string& media_type) {
  registry::BlobDescriptor d{"sha256:" + sha256_hex(bytes), bytes.size(), media_type};
  std::ofstream(blob_file(dir, d.digest), std::ios::binary) << bytes;
  return d;
}

}  // namespace

std::string blob_file(const std::string& dir, const std::string& digest) {
  return dir + "/sha256-" + digest.substr(digest.find(':') + 1);
}

std::string TestModel::blob_path(const std::string& digest) const { return blob_file(dir, digest); }

TestModel make_test_model(const std::string& dir, uint64_t model_bytes, uint32_t seed) {
  TestModel m;
  m.dir = dir;
  std::mt19937_64 rng(seed);
  std::string model(model_bytes, '\0');
  for (size_t i = 0; i + 8 <= model.size(); i += 8) {
    uint64_t v = rng();
    std::memcpy(model.data() + i, &v, 8);
  }
  for (size_t i = model.size() / 8 * 8; i < model.size(); ++i) model[i] = static_cast<char>(rng());
  std::string config = nlohmann::json{{"model_format", "gguf"}, {"model_family", "llama"},
                                      {"file_type", "F16"}, {"seed", seed}}.dump();
  m.blobs.push_back(write_blob(dir, config, "application/vnd.docker.container.image.v1+json"));
  m.blobs.push_back(write_blob(dir, model, "application/vnd.ollama.image.model"));
  m.blobs.push_back(write_blob(dir, "{{ .Prompt }} seed " + std::to_string(seed), "application/vnd.ollama.image.template"));
  nlohmann::ordered_json j;
  j["schemaVersion"] = 2;
  j["mediaType"] = registry::kManifestMediaType;
  auto desc = [](const registry::BlobDescriptor& d) {
    return nlohmann::ordered_json{{"mediaType", d.media_type}, {"digest", d.digest}, {"size", d.size}};
  };
  j["config"] = desc(m.blobs[0]);
  j["layers"] = {desc(m.blobs[1]), desc(m.blobs[2])};
  m.manifest = j.dump();
  return m;
}

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace hearth::test
