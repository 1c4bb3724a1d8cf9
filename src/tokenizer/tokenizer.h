// hearth::Tokenizer: text ↔ token ids for a GGUF vocabulary (SentencePiece `llama`, byte-level
// BPE `gpt2`, WordPiece `bert`). Immutable after construction and safe to share across threads.
// Never aborts on input: any bytes may be encoded and any id decoded.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/vocabulary.h"
#include "util/result.h"

namespace hearth {

namespace gguf {
class File;
}
namespace detail {
class BpeModel;
class SpmModel;
}

class Tokenizer {
 public:
  // An empty tokenizer (no tokens: encodes to nothing) until a loaded one is assigned.
  Tokenizer();

  // Reads tokenizer.ggml.* from the file. Errors name the missing/bad key.
  static Result<Tokenizer> from_gguf(const gguf::File& file);
  // From a hand-made vocabulary (tests, tools); finalize() is called here.
  static Result<Tokenizer> from_vocabulary(Vocabulary vocab);

  // Text → ids. add_special: the model's own BOS/EOS (SPM, BPE) or [CLS] … [SEP] (WordPiece).
  // parse_special: text of control tokens (e.g. "<|assistant|>") becomes that token; user-
  // defined tokens are always matched, as in the reference implementation.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

  // The bytes one token stands for. special: render control tokens' text (else "").
  // Out-of-range ids give "".
  std::string token_to_piece(int32_t id, bool special) const;

  // Concatenated pieces; for SentencePiece with a space prefix (and WordPiece) the one leading
  // space the encoder adds is removed, so decode(encode(x)) == x where the vocabulary covers x.
  std::string decode(const std::vector<int32_t>& ids, bool special = false) const;

  // True when decode drops a leading space from the first text piece.
  bool strips_leading_space() const;

  TokenizerKind kind() const { return vocab_->kind; }
  const std::string& pre() const { return vocab_->pre; }
  int32_t n_vocab() const { return static_cast<int32_t>(vocab_->tokens.size()); }
  int32_t bos_id() const { return vocab_->bos_id; }
  int32_t eos_id() const { return vocab_->eos_id; }
  int32_t eot_id() const { return vocab_->eot_id; }
  int32_t unk_id() const { return vocab_->unk_id; }
  int32_t pad_id() const { return vocab_->pad_id; }
  int32_t sep_id() const { return vocab_->sep_id; }
  bool add_bos() const { return vocab_->add_bos; }
  bool add_eos() const { return vocab_->add_eos; }
  bool add_space_prefix() const { return vocab_->add_space_prefix; }
  // End of generation: EOS, EOT and the usual end-of-turn control tokens.
  bool is_eog(int32_t id) const;
  bool is_control(int32_t id) const;
  // The stored text of a token ("" when out of range).
  const std::string& token_text(int32_t id) const;
  const Vocabulary& vocabulary() const { return *vocab_; }

 private:
  struct Fragment {
    bool is_token;
    int32_t id;
    size_t start;
    size_t len;
  };
  std::vector<Fragment> partition_special(std::string_view text, bool parse_special) const;

  std::shared_ptr<const Vocabulary> vocab_;
  std::shared_ptr<const detail::BpeModel> bpe_;
  std::shared_ptr<const detail::SpmModel> spm_;
  std::vector<int32_t> special_tokens_;  // control/user-defined/unknown ids, longest text first
  std::vector<int32_t> eog_ids_;
};

}  // namespace hearth
