// Manifest and config JSON (see manifest.h). Unknown fields are ignored on read, as the
// registry protocol allows; what is written uses ollama's field names.
#include "store/manifest.h"

#include <algorithm>

#include "store/model_name.h"

namespace hearth::store {
namespace {

using Json = nlohmann::json;

Result<Layer> parse_layer(const Json& j, const std::string& where) {
  auto corrupt = [&](const std::string& why) { return make_error(ErrorKind::kCorrupt, "manifest " + where + ": " + why); };
  if (!j.is_object()) return corrupt("is not an object");
  Layer l;
  if (!j.contains("digest") || !j["digest"].is_string()) return corrupt("has no digest");
  l.digest = j["digest"].get<std::string>();
  if (!is_valid_digest(l.digest)) return corrupt("digest '" + l.digest.substr(0, 100) + "' is not sha256:<64 hex>");
  if (j.contains("mediaType") && j["mediaType"].is_string()) l.media_type = j["mediaType"].get<std::string>();
  if (j.contains("size")) {
    if (!j["size"].is_number_integer() || j["size"].get<int64_t>() < 0) return corrupt("size is not a non-negative integer");
    l.size = j["size"].get<uint64_t>();
  }
  if (j.contains("from") && j["from"].is_string()) l.from = j["from"].get<std::string>();
  return l;
}

nlohmann::ordered_json layer_json(const Layer& l) {
  nlohmann::ordered_json j;
  j["mediaType"] = l.media_type;
  j["digest"] = l.digest;
  j["size"] = l.size;
  if (!l.from.empty()) j["from"] = l.from;
  return j;
}

}  // namespace

nlohmann::ordered_json ModelConfig::to_json() const {
  nlohmann::ordered_json j;
  j["model_format"] = model_format;
  j["model_family"] = model_family;
  j["model_families"] = model_families;
  j["model_type"] = model_type;
  j["file_type"] = file_type;
  if (!capabilities.empty()) j["capabilities"] = capabilities;
  if (!requires_version.empty()) j["requires"] = requires_version;
  j["architecture"] = "amd64";
  j["os"] = "linux";
  j["rootfs"] = {{"type", "layers"}, {"diff_ids", diff_ids}};
  return j;
}

Result<ModelConfig> ModelConfig::from_json(const nlohmann::json& j) {
  if (!j.is_object()) return make_error(ErrorKind::kCorrupt, "model config is not a JSON object");
  ModelConfig c;
  auto str = [&](const char* key, std::string& out) {
    if (j.contains(key) && j[key].is_string()) out = j[key].get<std::string>();
  };
  auto list = [&](const nlohmann::json& v, std::vector<std::string>& out) {
    if (!v.is_array()) return;
    for (const auto& e : v) {
      if (e.is_string()) out.push_back(e.get<std::string>());
    }
  };
  str("model_format", c.model_format);
  str("model_family", c.model_family);
  str("model_type", c.model_type);
  str("file_type", c.file_type);
  str("requires", c.requires_version);
  if (j.contains("model_families")) list(j["model_families"], c.model_families);
  if (j.contains("capabilities")) list(j["capabilities"], c.capabilities);
  if (j.contains("rootfs") && j["rootfs"].is_object() && j["rootfs"].contains("diff_ids")) list(j["rootfs"]["diff_ids"], c.diff_ids);
  return c;
}

Result<Manifest> Manifest::parse(std::string_view text) {
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return make_error(ErrorKind::kCorrupt, "manifest is not a JSON object");
  Manifest m;
  if (j.contains("schemaVersion")) {
    if (!j["schemaVersion"].is_number_integer() || j["schemaVersion"].get<int>() != 2) {
      return make_error(ErrorKind::kUnsupported, "manifest schemaVersion is not 2");
    }
  }
  if (j.contains("mediaType") && j["mediaType"].is_string()) m.media_type = j["mediaType"].get<std::string>();
  if (!j.contains("config")) return make_error(ErrorKind::kCorrupt, "manifest has no config");
  HEARTH_ASSIGN(m.config, parse_layer(j["config"], "config"));
  if (!j.contains("layers") || !j["layers"].is_array()) return make_error(ErrorKind::kCorrupt, "manifest has no layers array");
  for (size_t i = 0; i < j["layers"].size(); ++i) {
    HEARTH_ASSIGN(Layer l, parse_layer(j["layers"][i], "layer " + std::to_string(i)));
    m.layers.push_back(std::move(l));
  }
  return m;
}

std::string Manifest::to_json() const {
  nlohmann::ordered_json j;
  j["schemaVersion"] = schema_version;
  j["mediaType"] = media_type;
  j["config"] = layer_json(config);
  j["layers"] = nlohmann::ordered_json::array();
  for (const auto& l : layers) j["layers"].push_back(layer_json(l));
  return j.dump();
}

std::vector<std::string> Manifest::blob_digests() const {
  std::vector<std::string> out{config.digest};
  for (const auto& l : layers) {
    if (std::find(out.begin(), out.end(), l.digest) == out.end()) out.push_back(l.digest);
  }
  return out;
}

const Layer* Manifest::find_layer(std::string_view type) const {
  for (const auto& l : layers) {
    if (l.media_type == type) return &l;
  }
  return nullptr;
}

uint64_t Manifest::total_size() const {
  uint64_t n = config.size;
  for (const auto& l : layers) n += l.size;
  return n;
}

}  // namespace hearth::store
