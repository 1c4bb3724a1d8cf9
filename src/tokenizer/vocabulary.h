// The vocabulary a tokenizer works from, as GGUF stores it under tokenizer.ggml.*: token texts,
// scores, types, BPE merges, special ids and the add_bos/add_eos/add_space_prefix flags. It is
// filled from a gguf::File or by hand (tests), then validated once; encoders only read it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "util/result.h"

namespace hearth::gguf {
class File;
}

namespace hearth {

enum class TokenizerKind { kSpm, kBpe, kWpm };

// GGUF tokenizer.ggml.token_type values.
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

inline constexpr int32_t kNoToken = -1;

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct Vocabulary {
  TokenizerKind kind = TokenizerKind::kSpm;
  std::string model_name;  // tokenizer.ggml.model
  std::string pre;         // tokenizer.ggml.pre ("" when absent)
  std::vector<std::string> tokens;
  std::vector<float> scores;        // empty, or one per token
  std::vector<TokenType> types;     // empty (all normal), or one per token
  std::vector<std::string> merges;  // BPE: "left right", in rank order
  // Per token: whitespace before (kStripLeft) / after (kStripRight) a matched special token is
  // dropped. Empty means no token strips. Set for Phi-3 models as the reference does.
  std::vector<uint8_t> strip_flags;
  static constexpr uint8_t kStripLeft = 1;
  static constexpr uint8_t kStripRight = 2;

  int32_t bos_id = kNoToken;
  int32_t eos_id = kNoToken;
  int32_t eot_id = kNoToken;
  int32_t unk_id = kNoToken;
  int32_t pad_id = kNoToken;
  int32_t sep_id = kNoToken;
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;

  // Built by finalize().
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> token_ids;
  size_t max_token_bytes = 0;

  int32_t find(std::string_view text) const {
    auto it = token_ids.find(text);
    return it == token_ids.end() ? kNoToken : it->second;
  }
  TokenType type_of(int32_t id) const {
    return types.empty() ? TokenType::kNormal : types[static_cast<size_t>(id)];
  }
  float score_of(int32_t id) const { return scores.empty() ? 0.0f : scores[static_cast<size_t>(id)]; }
  size_t size() const { return tokens.size(); }

  // Checks array lengths and special ids, builds the text→id index. Ids that point outside
  // the vocabulary are an error (kCorrupt), not a later crash.
  Status finalize();
};

// Reads tokenizer.ggml.* (and the defaults the reference applies per model kind).
Result<Vocabulary> load_vocabulary(const gguf::File& file);

}  // namespace hearth
