// Loading and validating the tokenizer vocabulary from GGUF metadata.
#include "tokenizer/vocabulary.h"

#include <algorithm>
#include <cctype>

#include "gguf/gguf_file.h"

namespace hearth {

namespace {

Status check_id(const char* what, int32_t id, size_t n) {
  if (id == kNoToken || (id >= 0 && static_cast<size_t>(id) < n)) return ok_status();
  return make_error(ErrorKind::kCorrupt, std::string("tokenizer ") + what + " id " + std::to_string(id) +
                                             " is outside the vocabulary of " + std::to_string(n) + " tokens");
}

// Special ids are stored as uint32; 0xFFFFFFFF (and any negative) means "none".
Result<int32_t> read_id(const gguf::File& file, const char* key, int32_t fallback) {
  const gguf::Value* v = file.find(key);
  if (v == nullptr) return fallback;
  auto as_i64 = file.get<int64_t>(key);
  if (!as_i64.ok()) return as_i64.error();
  const int64_t id = as_i64.value();
  if (id < 0 || id == 0xFFFFFFFFll) return kNoToken;
  if (id > INT32_MAX) return make_error(ErrorKind::kCorrupt, std::string(key) + " is out of range");
  return static_cast<int32_t>(id);
}

Result<bool> read_flag(const gguf::File& file, const char* key, bool fallback) {
  if (!file.has(key)) return fallback;
  return file.get<bool>(key);
}

// Phi-3's added tokens swallow the whitespace that follows them (its tokenizer.json marks them
// rstrip); GGUF has no field for this, so the model name decides, as in the reference.
void apply_model_strip_rules(Vocabulary& v, std::string name) {
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (name.find("phi-3") == std::string::npos && name.find("phi3") == std::string::npos) return;
  v.strip_flags.assign(v.tokens.size(), 0);
  for (size_t id = 0; id < v.tokens.size(); ++id) {
    const TokenType t = v.type_of(static_cast<int32_t>(id));
    if (t == TokenType::kControl || t == TokenType::kUserDefined || t == TokenType::kUnknown) {
      v.strip_flags[id] = Vocabulary::kStripRight;
    }
  }
  for (const char* keep : {"<unk>", "<s>", "<|endoftext|>"}) {
    const int32_t id = v.find(keep);
    if (id != kNoToken) v.strip_flags[static_cast<size_t>(id)] = 0;
  }
}

}  // namespace

Status Vocabulary::finalize() {
  const size_t n = tokens.size();
  if (n == 0) return make_error(ErrorKind::kCorrupt, "tokenizer vocabulary is empty");
  if (n > static_cast<size_t>(INT32_MAX)) return make_error(ErrorKind::kCorrupt, "tokenizer vocabulary too large");
  if (!scores.empty() && scores.size() != n)
    return make_error(ErrorKind::kCorrupt, "tokenizer.ggml.scores has " + std::to_string(scores.size()) +
                                               " entries for " + std::to_string(n) + " tokens");
  if (!types.empty() && types.size() != n)
    return make_error(ErrorKind::kCorrupt, "tokenizer.ggml.token_type has " + std::to_string(types.size()) +
                                               " entries for " + std::to_string(n) + " tokens");
  if (!strip_flags.empty() && strip_flags.size() != n)
    return make_error(ErrorKind::kCorrupt, "tokenizer strip flags do not match the vocabulary size");
  HEARTH_TRY(check_id("bos", bos_id, n));
  HEARTH_TRY(check_id("eos", eos_id, n));
  HEARTH_TRY(check_id("eot", eot_id, n));
  HEARTH_TRY(check_id("unk", unk_id, n));
  HEARTH_TRY(check_id("pad", pad_id, n));
  HEARTH_TRY(check_id("sep", sep_id, n));
  token_ids.clear();
  token_ids.reserve(n);
  max_token_bytes = 0;
  for (size_t i = 0; i < n; ++i) {
    // On duplicates the later id wins, as in the reference's text→id map.
    token_ids[tokens[i]] = static_cast<int32_t>(i);
    max_token_bytes = std::max(max_token_bytes, tokens[i].size());
  }
  return ok_status();
}

Result<Vocabulary> load_vocabulary(const gguf::File& file) {
  Vocabulary v;
  HEARTH_ASSIGN(v.model_name, file.get<std::string>("tokenizer.ggml.model"));
  v.pre = file.get_or<std::string>("tokenizer.ggml.pre", "");
  HEARTH_ASSIGN(v.tokens, file.get_array<std::string>("tokenizer.ggml.tokens"));
  if (file.has("tokenizer.ggml.scores")) {
    HEARTH_ASSIGN(v.scores, file.get_array<float>("tokenizer.ggml.scores"));
  }
  if (file.has("tokenizer.ggml.token_type")) {
    HEARTH_ASSIGN(auto raw_types, file.get_array<int32_t>("tokenizer.ggml.token_type"));
    v.types.reserve(raw_types.size());
    for (int32_t t : raw_types) {
      v.types.push_back(t >= 0 && t <= 6 ? static_cast<TokenType>(t) : TokenType::kUndefined);
    }
  }

  // Per-kind defaults (those of the reference implementation), overridden by the file.
  int32_t bos = kNoToken, eos = kNoToken, unk = kNoToken, sep = kNoToken, pad = kNoToken;
  if (v.model_name == "llama") {
    v.kind = TokenizerKind::kSpm;
    bos = 1, eos = 2, unk = 0;
    v.add_bos = true, v.add_eos = false, v.add_space_prefix = true;
  } else if (v.model_name == "gpt2") {
    v.kind = TokenizerKind::kBpe;
    bos = 11, eos = 11;
    v.add_bos = false, v.add_eos = false, v.add_space_prefix = false;
    HEARTH_ASSIGN(v.merges, file.get_array<std::string>("tokenizer.ggml.merges"));
  } else if (v.model_name == "bert") {
    v.kind = TokenizerKind::kWpm;
    bos = 101, unk = 100, sep = 102, pad = 0;
    v.add_bos = true, v.add_eos = false, v.add_space_prefix = false;
  } else {
    return make_error(ErrorKind::kUnsupported, "tokenizer model '" + v.model_name +
                                                   "' is not supported (expected llama, gpt2 or bert)");
  }
  const size_t n = v.tokens.size();
  auto clamp_default = [n](int32_t id) { return id >= 0 && static_cast<size_t>(id) < n ? id : kNoToken; };
  HEARTH_ASSIGN(v.bos_id, read_id(file, "tokenizer.ggml.bos_token_id", clamp_default(bos)));
  HEARTH_ASSIGN(v.eos_id, read_id(file, "tokenizer.ggml.eos_token_id", clamp_default(eos)));
  HEARTH_ASSIGN(v.eot_id, read_id(file, "tokenizer.ggml.eot_token_id", kNoToken));
  HEARTH_ASSIGN(v.unk_id, read_id(file, "tokenizer.ggml.unknown_token_id", clamp_default(unk)));
  HEARTH_ASSIGN(v.pad_id, read_id(file, "tokenizer.ggml.padding_token_id", clamp_default(pad)));
  HEARTH_ASSIGN(v.sep_id, read_id(file, "tokenizer.ggml.seperator_token_id", clamp_default(sep)));
  HEARTH_ASSIGN(v.sep_id, read_id(file, "tokenizer.ggml.separator_token_id", v.sep_id));
  if (v.kind == TokenizerKind::kWpm && !file.has("tokenizer.ggml.bos_token_id")) {
    HEARTH_ASSIGN(v.bos_id, read_id(file, "tokenizer.ggml.cls_token_id", v.bos_id));
  }
  HEARTH_ASSIGN(v.add_bos, read_flag(file, "tokenizer.ggml.add_bos_token", v.add_bos));
  HEARTH_ASSIGN(v.add_eos, read_flag(file, "tokenizer.ggml.add_eos_token", v.add_eos));
  HEARTH_ASSIGN(v.add_space_prefix, read_flag(file, "tokenizer.ggml.add_space_prefix", v.add_space_prefix));
  HEARTH_TRY(v.finalize());
  apply_model_strip_rules(v, file.get_or<std::string>("general.name", ""));
  return v;
}

}  // namespace hearth
