// `create --quantize`: turns the model layer of a model being created (an F16/BF16/F32 GGUF
// blob) into a new blob of the asked type with gguf_quantizer, written straight into the
// store (temporary file in blobs/, sha256 computed while writing, fsync, rename).
#pragma once

#include <functional>
#include <string>

#include "store/manifest.h"
#include "store/model_store.h"

namespace hearth::store {

struct QuantizedLayer {
  Layer layer;            // the new model layer
  std::string source_type;  // "F16"
  std::string type;         // "Q4_K_M"
};

// Status lines: "quantizing F16 model to Q4_K_M", then the share done every tenth
// ("quantizing F16 model to Q4_K_M: 40%"). Errors: an unknown type (kInvalidArgument), an
// already quantized source (kUnsupported), a blob that is not GGUF (kCorrupt), I/O.
// n_threads 0: every physical core.
Result<QuantizedLayer> quantize_model_layer(const ModelStore& store, const Layer& model, const std::string& type_name,
                                            const std::function<void(const std::string&)>& progress, int n_threads = 0);

}  // namespace hearth::store
