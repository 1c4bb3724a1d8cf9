// make-model: writes a GGUF model of a realistic shape with random weights through Hearth's own
// GGUF writer and quantizers, so that benchmarks can run Hearth and other engines on the same
// multi-gigabyte files without downloading anything. Weights are drawn from a seeded generator
// row by row (the file is the same for any thread count) and streamed to disk tensor by tensor.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "util/result.h"

namespace hearth::devtools {

struct MakeModelOptions {
  std::string arch = "llama";   // llama | qwen2 | qwen3moe | gpt-oss
  std::string shape = "1b";     // see model_shapes.h
  int32_t n_layers = 0;         // 0: the shape's; else fewer (or more) layers of the same size
  std::string type = "q4_0";    // f16 | q8_0 | q4_0 | q4_k_m | q6_k
  std::string output;           // path of the .gguf to write
  uint64_t seed = 20250605;
  int32_t n_threads = 0;        // 0: physical cores
  // Called after each tensor with (tensors written, tensors in all, tensor name); may be empty.
  std::function<void(size_t, size_t, const std::string&)> progress;
};

Status make_model(const MakeModelOptions& options);

}  // namespace hearth::devtools
