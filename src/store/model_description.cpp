// Reading a stored model's layers back (see model_description.h).
#include "store/model_description.h"

#include <sys/stat.h>

#include "gguf/file_type_names.h"
#include "gguf/gguf_file.h"

namespace hearth::store {
namespace {

Result<std::string> layer_text(const ModelStore& store, const Layer& l) {
  HEARTH_ASSIGN(std::string text, store.read_blob(l.digest));
  if (text.size() != l.size) {
    return make_error(ErrorKind::kCorrupt, "blob " + l.digest + " has " + std::to_string(text.size()) + " bytes, the manifest says " +
                                               std::to_string(l.size));
  }
  return text;
}

}  // namespace

Modelfile ModelDescription::modelfile() const {
  Modelfile m;
  m.from = model_path;
  m.adapters = adapter_paths;
  m.parameters = parameters;
  m.template_text = template_text ? template_text : (gguf_template.empty() ? std::nullopt : std::optional(gguf_template));
  m.system = system;
  m.licenses = licenses;
  m.messages = messages;
  m.requires_version = config.requires_version;
  return m;
}

std::string ModelDescription::parameters_text() const {
  std::string out;
  for (const auto& item : parameters.items()) {
    const std::string& name = item.key();
    const nlohmann::json& value = item.value();
    const auto add = [&](const nlohmann::json& v) {
      std::string padded = name;
      padded.resize(std::max<size_t>(padded.size() + 1, 30), ' ');
      out += padded + (v.is_string() ? "\"" + v.get<std::string>() + "\"" : v.dump()) + "\n";
    };
    if (value.is_array()) {
      for (const auto& v : value) add(v);
    } else {
      add(value);
    }
  }
  if (!out.empty()) out.pop_back();
  return out;
}

Result<ModelDescription> describe_model(const ModelStore& store, const StoredModel& model, bool read_gguf) {
  ModelDescription d;
  d.stored = model;
  const std::string name = model.name.display();
  auto config_text = store.read_blob(model.manifest.config.digest);
  if (config_text.ok()) {
    auto c = ModelConfig::from_json(nlohmann::json::parse(*config_text, nullptr, false));
    if (c.ok()) d.config = *c;
  }
  for (const auto& l : model.manifest.layers) {
    const std::string& t = l.media_type;
    if (t == media_type::kModel) {
      if (!d.model_path.empty()) continue;  // the first model layer is the weights
      auto path = store.find_blob(l.digest);
      if (!path) return make_error(ErrorKind::kNotFound, "model '" + name + "': its weights (blob " + l.digest + ") are missing");
      struct stat st {};
      if (::stat(path->c_str(), &st) != 0 || static_cast<uint64_t>(st.st_size) != l.size) {
        return make_error(ErrorKind::kCorrupt, "model '" + name + "': blob " + l.digest + " does not have the manifest's size " +
                                                   std::to_string(l.size) + " (was the file it was linked from edited?)");
      }
      d.model_path = *path;
      d.model_digest = l.digest;
      d.model_size = l.size;
    } else if (t == media_type::kAdapter) {
      auto path = store.find_blob(l.digest);
      if (!path) return make_error(ErrorKind::kNotFound, "model '" + name + "': adapter blob " + l.digest + " is missing");
      d.adapter_paths.push_back(*path);
    } else if (t == media_type::kTemplate) {
      HEARTH_ASSIGN(d.template_text, layer_text(store, l));
    } else if (t == media_type::kSystem) {
      HEARTH_ASSIGN(d.system, layer_text(store, l));
    } else if (t == media_type::kLicense) {
      HEARTH_ASSIGN(std::string text, layer_text(store, l));
      d.licenses.push_back(std::move(text));
    } else if (t == media_type::kParams) {
      HEARTH_ASSIGN(const std::string text, layer_text(store, l));
      d.parameters = nlohmann::json::parse(text, nullptr, false);
      if (!d.parameters.is_object()) return make_error(ErrorKind::kCorrupt, "model '" + name + "': its params layer is not a JSON object");
    } else if (t == media_type::kMessages) {
      HEARTH_ASSIGN(const std::string text, layer_text(store, l));
      const nlohmann::json msgs = nlohmann::json::parse(text, nullptr, false);
      if (!msgs.is_array()) return make_error(ErrorKind::kCorrupt, "model '" + name + "': its messages layer is not a JSON array");
      for (const auto& m : msgs) {
        if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") || !m["content"].is_string()) {
          return make_error(ErrorKind::kCorrupt, "model '" + name + "': a message in its messages layer has no role or content");
        }
        d.messages.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
      }
    }
  }
  if (d.model_path.empty()) return make_error(ErrorKind::kUnsupported, "model '" + name + "' has no GGUF model layer");
  if (read_gguf) {
    auto f = gguf::File::open(d.model_path);
    if (!f.ok()) return make_error(ErrorKind::kCorrupt, "model '" + name + "': " + f.error().message);
    d.model_info = gguf::metadata_summary(*f);
    d.gguf_template = f->get_or<std::string>("tokenizer.chat_template", "");
    const std::string arch = f->architecture();
    d.context_length = f->get_or<int32_t>(arch + ".context_length", 0);
    // Encoders (the bert family) answer embeddings only.
    d.embedding_only = arch.find("bert") != std::string::npos;
    if (d.config.model_family.empty()) d.config.model_family = arch;
    if (d.config.file_type.empty()) d.config.file_type = gguf::quantization_label(*f);
    if (d.config.model_type.empty()) d.config.model_type = gguf::parameter_size_text(gguf::parameter_count(*f));
  }
  return d;
}

}  // namespace hearth::store
