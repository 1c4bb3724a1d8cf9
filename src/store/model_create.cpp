// Model creation (see model_create.h).
#include "store/model_create.h"

#include <algorithm>
#include <filesystem>

#include "gguf/file_type_names.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_quantizer.h"
#include "store/model_quantize.h"
#include "store/model_parameters.h"
#include "util/settings.h"
#include "util/sha256.h"

namespace hearth::store {
namespace {

namespace fs = std::filesystem;

bool is_digest_form(const std::string& s) { return s.rfind("sha256:", 0) == 0 || s.rfind("sha256-", 0) == 0; }

std::string expand_path(const std::string& path, const CreateOptions& o) {
  if (path.rfind("~/", 0) == 0) return home_directory() + path.substr(1);
  if (!path.empty() && path[0] == '/') return path;
  return (fs::path(o.base_dir) / path).lexically_normal().string();
}

Error local_files_refused(const std::string& path) {
  return make_error(ErrorKind::kInvalidArgument,
                    "'" + path.substr(0, 200) + "' is a file on the server, and reading server files is off; upload it with "
                    "POST /api/blobs/<digest> and name it in `files`, or start the server with --allow-local-files");
}

class LayerBuilder {
 public:
  LayerBuilder(const ModelStore& store, const CreateProgress& progress) : store_(store), progress_(progress) {}

  // A blob already in the store (adopted into the primary store if it lives in a fallback).
  Result<Layer> existing(const char* type, const std::string& digest_text) {
    HEARTH_ASSIGN(const std::string digest, parse_digest(digest_text));
    if (!store_.has_blob(digest)) {
      return make_error(ErrorKind::kNotFound, "blob " + digest + " is not in the store; upload it first with POST /api/blobs/" + digest);
    }
    HEARTH_TRY(store_.adopt_blob(digest));
    HEARTH_ASSIGN(const std::string path, store_.blob_path(digest));
    std::error_code ec;
    const uint64_t size = fs::file_size(path, ec);
    if (ec) return make_error(ErrorKind::kIo, "cannot read the size of blob " + digest);
    progress_("using existing layer " + digest);
    return Layer{type, digest, size, ""};
  }

  Result<Layer> file(const char* type, const std::string& path) {
    progress_("copying file " + path);
    HEARTH_ASSIGN(ImportedBlob b, store_.import_file(path));
    progress_(std::string(b.method == ImportMethod::kCopy ? "creating new layer " : "using file in place (") +
              (b.method == ImportMethod::kCopy ? b.digest : std::string(import_method_name(b.method)) + ") " + b.digest));
    return Layer{type, b.digest, b.size, ""};
  }

  Result<Layer> text(const char* type, const std::string& bytes) {
    const std::string digest = "sha256:" + sha_of(bytes);
    const bool had = store_.has_blob(digest);
    if (!had) HEARTH_TRY(store_.put_blob(bytes));
    else HEARTH_TRY(store_.adopt_blob(digest));
    progress_((had ? "using existing layer " : "creating new layer ") + digest);
    return Layer{type, digest, bytes.size(), ""};
  }

 private:
  static std::string sha_of(const std::string& bytes) { return sha256_hex(bytes); }
  const ModelStore& store_;
  const CreateProgress& progress_;
};

// Config facts read from a GGUF blob. Errors: not a GGUF.
Result<ModelConfig> config_from_gguf(const ModelStore& store, const Layer& model) {
  auto path = store.find_blob(model.digest);
  if (!path) return make_error(ErrorKind::kNotFound, "blob " + model.digest + " is not in the store");
  auto f = gguf::File::open(*path);
  if (!f.ok()) return make_error(ErrorKind::kCorrupt, "the model file is not a usable GGUF: " + f.error().message);
  ModelConfig c;
  c.model_family = f->architecture();
  if (!c.model_family.empty()) c.model_families = {c.model_family};
  c.model_type = gguf::parameter_size_text(gguf::parameter_count(*f));
  c.file_type = gguf::quantization_label(*f);
  return c;
}

void put_layer(std::vector<Layer>& layers, Layer l, bool replace_same_type) {
  if (replace_same_type) {
    std::erase_if(layers, [&](const Layer& x) { return x.media_type == l.media_type; });
  }
  layers.push_back(std::move(l));
}

// ollama's layer order.
int layer_rank(const std::string& type) {
  static const char* const kOrder[] = {media_type::kModel,  media_type::kProjector, media_type::kAdapter,
                                       media_type::kTemplate, media_type::kSystem,  media_type::kParams,
                                       media_type::kMessages, media_type::kLicense};
  for (int i = 0; i < 8; ++i) {
    if (type == kOrder[i]) return i;
  }
  return 8;
}

}  // namespace

bool names_local_file(const std::string& from) {
  if (from.empty()) return false;
  if (from[0] == '/' || from[0] == '~' || from.rfind("./", 0) == 0 || from.rfind("../", 0) == 0) return true;
  return from.size() > 5 && from.compare(from.size() - 5, 5, ".gguf") == 0;
}

CreateRequest create_request_from(const Modelfile& m) {
  CreateRequest r;
  r.from = m.from;
  r.adapter_sources = m.adapters;
  r.template_text = m.template_text;
  r.system = m.system;
  r.licenses = m.licenses;
  if (!m.messages.empty()) r.messages = m.messages;
  r.parameters = m.parameters;
  r.requires_version = m.requires_version;
  return r;
}

Result<StoredModel> create_model(const ModelStore& store, const ModelName& name, const CreateRequest& req,
                                 const CreateOptions& options, const CreateProgress& progress) {
  // An unknown type is refused before anything is written.
  if (!req.quantize.empty()) HEARTH_TRY(gguf::quantize_type_from_name(req.quantize));
  LayerBuilder build(store, progress);
  std::vector<Layer> layers;
  ModelConfig config;
  nlohmann::json params = nlohmann::json::object();
  bool from_model = false;

  if (!req.files.empty()) {
    if (!req.from.empty()) return make_error(ErrorKind::kInvalidArgument, "give `from` or `files`, not both");
    if (req.files.size() != 1) {
      return make_error(ErrorKind::kUnsupported, "`files` must name exactly one GGUF file (got " + std::to_string(req.files.size()) + ")");
    }
    HEARTH_ASSIGN(Layer l, build.existing(media_type::kModel, req.files[0].second));
    layers.push_back(std::move(l));
  } else if (req.from.empty()) {
    return make_error(ErrorKind::kInvalidArgument, "nothing to create from: give `from` (a model, a GGUF file or a blob digest) or `files`");
  } else if (is_digest_form(req.from)) {
    HEARTH_ASSIGN(Layer l, build.existing(media_type::kModel, req.from));
    layers.push_back(std::move(l));
  } else if (names_local_file(req.from)) {
    if (!options.allow_local_paths) return local_files_refused(req.from);
    HEARTH_ASSIGN(Layer l, build.file(media_type::kModel, expand_path(req.from, options)));
    layers.push_back(std::move(l));
  } else {
    HEARTH_ASSIGN(const ModelName base_name, parse_model_name(req.from));
    HEARTH_ASSIGN(const StoredModel base, store.resolve(base_name));
    from_model = true;
    for (const auto& l : base.manifest.layers) {
      HEARTH_TRY(store.adopt_blob(l.digest));
      if (l.media_type == media_type::kParams) {
        HEARTH_ASSIGN(const std::string text, store.read_blob(l.digest));
        params = nlohmann::json::parse(text, nullptr, false);
        if (!params.is_object()) return make_error(ErrorKind::kCorrupt, "the params layer of '" + base_name.display() + "' is not a JSON object");
        continue;
      }
      Layer copy = l;
      if (copy.from.empty() && l.media_type == media_type::kModel) copy.from = base_name.display();
      layers.push_back(copy);
      progress("using existing layer " + l.digest);
    }
    auto config_text = store.read_blob(base.manifest.config.digest);
    if (config_text.ok()) {
      auto c = ModelConfig::from_json(nlohmann::json::parse(*config_text, nullptr, false));
      if (c.ok()) config = *c;
    }
  }
  const auto model_it = std::find_if(layers.begin(), layers.end(), [](const Layer& l) { return l.media_type == media_type::kModel; });
  if (model_it == layers.end()) return make_error(ErrorKind::kInvalidArgument, "the base has no model layer");
  if (!req.quantize.empty()) {
    HEARTH_ASSIGN(QuantizedLayer q, quantize_model_layer(store, *model_it, req.quantize, progress));
    *model_it = q.layer;
    config.file_type = q.type;  // a model-based create keeps the rest of its base's config
  }
  if (!from_model) {
    progress("parsing GGUF");
    HEARTH_ASSIGN(config, config_from_gguf(store, *model_it));
  }

  for (const auto& [file, digest] : req.adapters) {
    HEARTH_ASSIGN(Layer l, build.existing(media_type::kAdapter, digest));
    put_layer(layers, std::move(l), false);
  }
  for (const auto& src : req.adapter_sources) {
    Layer l;
    if (is_digest_form(src)) {
      HEARTH_ASSIGN(l, build.existing(media_type::kAdapter, src));
    } else {
      if (!options.allow_local_paths) return local_files_refused(src);
      HEARTH_ASSIGN(l, build.file(media_type::kAdapter, expand_path(src, options)));
    }
    put_layer(layers, std::move(l), false);
  }
  if (req.template_text) {
    HEARTH_ASSIGN(Layer l, build.text(media_type::kTemplate, *req.template_text));
    put_layer(layers, std::move(l), true);
  }
  if (req.system) {
    HEARTH_ASSIGN(Layer l, build.text(media_type::kSystem, *req.system));
    put_layer(layers, std::move(l), true);
  }
  if (!req.parameters.is_object()) return make_error(ErrorKind::kInvalidArgument, "`parameters` must be an object");
  // New values replace the base model's, `stop` included (ollama's rule).
  for (const auto& [k, v] : req.parameters.items()) params.erase(k);
  for (const auto& [k, v] : req.parameters.items()) {
    HEARTH_ASSIGN(const nlohmann::json typed, check_parameter_value(k, v));
    add_parameter(params, k, typed);
  }
  std::erase_if(layers, [](const Layer& l) { return l.media_type == media_type::kParams; });
  if (!params.empty()) {
    HEARTH_ASSIGN(Layer l, build.text(media_type::kParams, params.dump()));
    layers.push_back(std::move(l));
  }
  if (req.messages) {
    nlohmann::json msgs = nlohmann::json::array();
    for (const auto& m : *req.messages) {
      HEARTH_TRY(check_message_role(m.role));
      msgs.push_back({{"role", m.role}, {"content", m.content}});
    }
    std::erase_if(layers, [](const Layer& l) { return l.media_type == media_type::kMessages; });
    if (!msgs.empty()) {
      HEARTH_ASSIGN(Layer l, build.text(media_type::kMessages, msgs.dump()));
      layers.push_back(std::move(l));
    }
  }
  if (!req.licenses.empty()) {
    std::erase_if(layers, [](const Layer& l) { return l.media_type == media_type::kLicense; });
    for (const auto& text : req.licenses) {
      HEARTH_ASSIGN(Layer l, build.text(media_type::kLicense, text));
      layers.push_back(std::move(l));
    }
  }
  std::stable_sort(layers.begin(), layers.end(), [](const Layer& a, const Layer& b) { return layer_rank(a.media_type) < layer_rank(b.media_type); });

  if (!req.requires_version.empty()) config.requires_version = req.requires_version;
  config.diff_ids.clear();
  for (const auto& l : layers) config.diff_ids.push_back(l.digest);
  HEARTH_ASSIGN(Layer config_layer, build.text(media_type::kConfig, config.to_json().dump()));
  Manifest manifest;
  manifest.config = config_layer;
  manifest.layers = std::move(layers);
  progress("writing manifest");
  HEARTH_TRY(store.write_manifest(name, manifest));
  return store.resolve(name);
}

}  // namespace hearth::store
