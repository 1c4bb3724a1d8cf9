// Quantizing a model layer into a new blob (see model_quantize.h).
#include "store/model_quantize.h"

#include "gguf/gguf_quantizer.h"
#include "util/log.h"

namespace hearth::store {

Result<QuantizedLayer> quantize_model_layer(const ModelStore& store, const Layer& model, const std::string& type_name,
                                            const std::function<void(const std::string&)>& progress, int n_threads) {
  HEARTH_ASSIGN(const gguf::FileType type, gguf::quantize_type_from_name(type_name));
  auto path = store.find_blob(model.digest);
  if (!path) return make_error(ErrorKind::kNotFound, "blob " + model.digest + " is not in the store");
  auto source = gguf::File::open(*path);
  if (!source.ok()) return make_error(ErrorKind::kCorrupt, "the model file is not a usable GGUF: " + source.error().message);
  QuantizedLayer out;
  HEARTH_ASSIGN(out.source_type, gguf::check_quantize_source(*source));
  out.type = gguf::file_type_name(type);
  const std::string status = "quantizing " + out.source_type + " model to " + out.type;
  progress(status);

  HEARTH_ASSIGN(BlobWriter blob, store.begin_blob());
  int reported_tenths = 0;
  auto summary = gguf::quantize_gguf(
      *source, type, [&](std::string_view bytes) { return blob.append(bytes); }, n_threads,
      [&](const gguf::QuantizeProgress& p) {
        const int tenths = p.elements_total == 0 ? 10 : static_cast<int>(p.elements_done * 10 / p.elements_total);
        if (tenths > reported_tenths && tenths < 10) progress(status + ": " + std::to_string(tenths * 10) + "%");
        reported_tenths = std::max(reported_tenths, tenths);
      });
  if (!summary.ok()) return summary.error().with_context("quantizing to " + out.type);
  HEARTH_ASSIGN(const std::string digest, blob.commit());
  log_info("quantized a model", {{"from", out.source_type}, {"to", out.type}, {"digest", digest},
                                 {"tensors", static_cast<long long>(summary->tensors)},
                                 {"quantized", static_cast<long long>(summary->quantized)},
                                 {"fallbacks", static_cast<long long>(summary->fallbacks.size())}});
  out.layer = Layer{media_type::kModel, digest, blob.size(), ""};
  progress("creating new layer " + digest);
  return out;
}

}  // namespace hearth::store
