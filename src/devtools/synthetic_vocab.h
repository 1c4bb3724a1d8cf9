// A synthetic byte-level BPE vocabulary of any size, for models with random weights: the 256
// byte tokens in GPT-2's byte-to-unicode alphabet, then every two-byte token and as many
// three-byte tokens as needed, each with the merge that builds it (so tokenizers load it and
// really merge), then a tail of control tokens. Real vocabulary sizes matter for speed (the
// embedding and output matrices), the strings do not.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "devtools/model_shapes.h"
#include "util/result.h"

namespace hearth::devtools {

struct SyntheticVocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> token_types;  // 1 normal, 3 control (GGUF tokenizer.ggml.token_type)
  std::vector<std::string> merges;   // "left right", highest priority first
  int32_t bos = -1, eos = -1, pad = -1;
};

// n_vocab - n_special normal tokens (at least 256) followed by the shape's special tokens and
// reserved control tokens up to n_vocab.
Result<SyntheticVocab> make_synthetic_vocab(const ModelShape& shape);

}  // namespace hearth::devtools
