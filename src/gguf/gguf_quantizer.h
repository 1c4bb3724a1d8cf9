// Re-encodes an F32/F16/BF16 GGUF into a quantized file type (`create --quantize`): the source
// is read over its mapping and the result is produced one tensor at a time (rows converted on
// every core), so memory holds one output tensor, never the model. Tensor types follow
// quant_mix.h (llama-quantize's rules); everything else in the file (metadata, tensor order,
// alignment) is kept, with general.file_type and general.quantization_version set.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "gguf/quant_mix.h"

namespace hearth::gguf {

// ollama's names for the types `create --quantize` accepts, in its spelling: "F16", "Q8_0",
// "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K". Errors: another name (the message lists these).
Result<FileType> quantize_type_from_name(const std::string& name);

struct QuantizeProgress {
  size_t tensors_done = 0;
  size_t tensors_total = 0;
  uint64_t elements_done = 0;  // weights converted so far, over elements_total
  uint64_t elements_total = 0;
  std::string tensor;  // the tensor just written
};
using QuantizeProgressFn = std::function<void(const QuantizeProgress&)>;

struct QuantizeSummary {
  std::string source_type;  // "F16", "BF16", "F32" (ollama's label of the source)
  size_t tensors = 0;
  size_t quantized = 0;                // tensors re-encoded into a block type
  std::vector<std::string> fallbacks;  // "name: Q4_K -> Q5_0 (row of 1000 elements)"
};

// The source's label, or an error when it cannot be quantized: a tensor already in a block
// type (kUnsupported, ollama's rule: only F16/F32 models are quantized) or a type this build
// cannot convert.
Result<std::string> check_quantize_source(const File& source);

// Writes the quantized file's bytes to `sink` in order. n_threads 0: every physical core.
Result<QuantizeSummary> quantize_gguf(const File& source, FileType type, const Writer::ByteSink& sink,
                                      int n_threads, const QuantizeProgressFn& progress);

// The same into a file, written atomically (tests, the benchmark).
Result<QuantizeSummary> quantize_gguf_file(const std::string& source_path, const std::string& output_path,
                                           FileType type, int n_threads, const QuantizeProgressFn& progress);

}  // namespace hearth::gguf
