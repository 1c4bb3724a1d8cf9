// Strict parsing of registry manifests (see registry_manifest.h).
#include "registry/registry_manifest.h"

#include <nlohmann/json.hpp>

#include "registry/registry_reference.h"
#include "util/json_nesting.h"

namespace hearth::registry {
namespace {

Error corrupt(const std::string& message) { return make_error(ErrorKind::kCorrupt, "manifest: " + message); }

Result<BlobDescriptor> parse_descriptor(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) return corrupt(where + " is not an object");
  BlobDescriptor d;
  if (!j.contains("digest") || !j["digest"].is_string()) return corrupt(where + " has no digest");
  d.digest = j["digest"].get<std::string>();
  if (auto s = validate_blob_digest(d.digest); !s.ok()) return corrupt(where + ": " + s.error().message);
  if (!j.contains("size") || !j["size"].is_number_unsigned()) return corrupt(where + " has no non-negative size");
  d.size = j["size"].get<uint64_t>();
  if (j.contains("mediaType")) {
    if (!j["mediaType"].is_string()) return corrupt(where + " mediaType is not a string");
    d.media_type = j["mediaType"].get<std::string>();
  }
  return d;
}

}  // namespace

std::vector<BlobDescriptor> Manifest::blobs() const {
  std::vector<BlobDescriptor> out;
  auto add = [&](const BlobDescriptor& d) {
    for (const auto& o : out) {
      if (o.digest == d.digest) return;
    }
    out.push_back(d);
  };
  add(config);
  for (const auto& l : layers) add(l);
  return out;
}

Result<Manifest> parse_manifest(std::string_view bytes) {
  if (bytes.size() > kMaxManifestBytes) return corrupt("larger than " + std::to_string(kMaxManifestBytes) + " bytes");
  if (!json_nesting_within(bytes)) return corrupt("nested deeper than " + std::to_string(kMaxJsonNesting) + " levels");
  auto j = nlohmann::json::parse(bytes, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return corrupt("not a JSON object");
  if (!j.contains("schemaVersion") || j["schemaVersion"] != 2) return corrupt("schemaVersion is not 2");
  Manifest m;
  if (j.contains("mediaType") && j["mediaType"].is_string()) m.media_type = j["mediaType"].get<std::string>();
  if (!m.media_type.empty() && m.media_type != kManifestMediaType && m.media_type != kOciManifestMediaType) {
    return make_error(ErrorKind::kUnsupported, "manifest media type '" + m.media_type + "' is not an image manifest");
  }
  if (!j.contains("config")) return corrupt("no config");
  HEARTH_ASSIGN(m.config, parse_descriptor(j["config"], "config"));
  if (!j.contains("layers") || !j["layers"].is_array()) return corrupt("no layers array");
  for (size_t i = 0; i < j["layers"].size(); ++i) {
    HEARTH_ASSIGN(auto layer, parse_descriptor(j["layers"][i], "layer " + std::to_string(i)));
    m.layers.push_back(std::move(layer));
  }
  return m;
}

}  // namespace hearth::registry
