// Tokenizer construction, special-token partitioning, the per-kind encode driver and decoding.
#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "tokenizer/encoders.h"

namespace hearth {

namespace {

const std::string kEmpty;
constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // ▁

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (true) {
    const size_t hit = text.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(text.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
  out.append(text.substr(pos));
  return out;
}

bool is_ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

int32_t parse_byte_token(std::string_view text) {
  // "<0xNN>" → NN
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  int value = 0;
  for (size_t i = 3; i < 5; ++i) {
    const char c = text[i];
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    if (d < 0) return -1;
    value = value * 16 + d;
  }
  return value;
}

}  // namespace

Tokenizer::Tokenizer() {
  static const auto empty_vocab = std::make_shared<const Vocabulary>();
  static const auto empty_spm = std::make_shared<const detail::SpmModel>(detail::SpmModel::build(*empty_vocab));
  vocab_ = empty_vocab;
  spm_ = empty_spm;
}

Result<Tokenizer> Tokenizer::from_gguf(const gguf::File& file) {
  auto vocab = load_vocabulary(file);
  if (!vocab.ok()) return vocab.error().with_context("loading tokenizer");
  return from_vocabulary(std::move(vocab).value());
}

Result<Tokenizer> Tokenizer::from_vocabulary(Vocabulary vocab) {
  if (vocab.token_ids.empty()) {
    HEARTH_TRY(vocab.finalize());
  }
  Tokenizer t;
  if (vocab.kind == TokenizerKind::kBpe) {
    auto bpe = detail::BpeModel::build(vocab);
    if (!bpe.ok()) return bpe.error().with_context("loading tokenizer");
    t.bpe_ = std::make_shared<const detail::BpeModel>(std::move(bpe).value());
  } else if (vocab.kind == TokenizerKind::kSpm) {
    t.spm_ = std::make_shared<const detail::SpmModel>(detail::SpmModel::build(vocab));
  }
  for (int32_t id = 0; id < static_cast<int32_t>(vocab.tokens.size()); ++id) {
    const TokenType type = vocab.type_of(id);
    if ((type == TokenType::kControl || type == TokenType::kUserDefined || type == TokenType::kUnknown) &&
        !vocab.tokens[static_cast<size_t>(id)].empty()) {
      t.special_tokens_.push_back(id);
    }
  }
  std::stable_sort(t.special_tokens_.begin(), t.special_tokens_.end(), [&](int32_t a, int32_t b) {
    return vocab.tokens[static_cast<size_t>(a)].size() > vocab.tokens[static_cast<size_t>(b)].size();
  });
  static const char* const kEndOfTurnTexts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
                                                "<|endoftext|>", "<EOT>", "<|end_of_text|>", "<|return|>",
                                                "<|call|>"};
  for (int32_t id : {vocab.eos_id, vocab.eot_id}) {
    if (id != kNoToken) t.eog_ids_.push_back(id);
  }
  // The harmony format (gpt-oss) ends a message with <|end|> and the model's turn with
  // <|return|> or <|call|>: there <|end|> is not the end of generation.
  const auto is_control = [&vocab](const char* text) {
    const int32_t id = vocab.find(text);
    return id != kNoToken && vocab.type_of(id) == TokenType::kControl;
  };
  const bool harmony = is_control("<|return|>") && is_control("<|call|>");
  for (const char* text : kEndOfTurnTexts) {
    if (is_control(text)) t.eog_ids_.push_back(vocab.find(text));
  }
  if (harmony) std::erase(t.eog_ids_, vocab.find("<|end|>"));
  t.vocab_ = std::make_shared<const Vocabulary>(std::move(vocab));
  return t;
}

std::vector<Tokenizer::Fragment> Tokenizer::partition_special(std::string_view text, bool parse_special) const {
  const Vocabulary& v = *vocab_;
  std::vector<Fragment> frags{{false, kNoToken, 0, text.size()}};
  std::vector<Fragment> next;
  for (int32_t id : special_tokens_) {
    const TokenType type = v.type_of(id);
    if (!parse_special && (type == TokenType::kControl || type == TokenType::kUnknown)) continue;
    const std::string& needle = v.tokens[static_cast<size_t>(id)];
    bool any = false;
    next.clear();
    for (const Fragment& f : frags) {
      if (f.is_token || f.len < needle.size()) {
        next.push_back(f);
        continue;
      }
      const std::string_view hay = text.substr(f.start, f.len);
      const uint8_t strip = v.strip_flags.empty() ? 0 : v.strip_flags[static_cast<size_t>(id)];
      size_t pos = 0;
      while (true) {
        const size_t hit = hay.find(needle, pos);
        if (hit == std::string_view::npos) break;
        any = true;
        size_t left_end = hit;
        if (strip & Vocabulary::kStripLeft) {
          while (left_end > pos && is_ascii_space(hay[left_end - 1])) --left_end;
        }
        if (left_end > pos) next.push_back({false, kNoToken, f.start + pos, left_end - pos});
        next.push_back({true, id, f.start + hit, needle.size()});
        pos = hit + needle.size();
        if (strip & Vocabulary::kStripRight) {
          while (pos < hay.size() && is_ascii_space(hay[pos])) ++pos;
        }
      }
      if (pos < f.len) next.push_back({false, kNoToken, f.start + pos, f.len - pos});
    }
    if (any) frags.swap(next);
  }
  return frags;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  const Vocabulary& v = *vocab_;
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  const std::vector<Fragment> frags =
      text.empty() ? std::vector<Fragment>{} : partition_special(text, parse_special);

  switch (v.kind) {
    case TokenizerKind::kSpm: {
      if (add_special && v.add_bos && v.bos_id != kNoToken) out.push_back(v.bos_id);
      bool prev_special = true;  // a space prefix goes before the first text and after specials
      for (const Fragment& f : frags) {
        if (f.is_token) {
          out.push_back(f.id);
          prev_special = true;
          continue;
        }
        std::string raw;
        if (v.add_space_prefix && prev_special) raw.push_back(' ');
        raw.append(text.substr(f.start, f.len));
        spm_->encode(v, replace_all(raw, " ", kSpaceMarker), out);
        prev_special = false;
      }
      if (add_special && v.add_eos && v.eos_id != kNoToken) out.push_back(v.eos_id);
      break;
    }
    case TokenizerKind::kBpe: {
      if (add_special && v.add_bos && v.bos_id != kNoToken) out.push_back(v.bos_id);
      for (const Fragment& f : frags) {
        if (f.is_token) out.push_back(f.id);
        else bpe_->encode(v, text.substr(f.start, f.len), out);
      }
      if (add_special && v.add_eos && v.eos_id != kNoToken) out.push_back(v.eos_id);
      break;
    }
    case TokenizerKind::kWpm: {
      if (add_special && v.add_bos && v.bos_id != kNoToken) out.push_back(v.bos_id);
      for (const Fragment& f : frags) {
        if (f.is_token) out.push_back(f.id);
        else detail::wpm_encode(v, text.substr(f.start, f.len), out);
      }
      if (add_special && v.sep_id != kNoToken) out.push_back(v.sep_id);
      break;
    }
  }
  return out;
}

const std::string& Tokenizer::token_text(int32_t id) const {
  if (id < 0 || id >= n_vocab()) return kEmpty;
  return vocab_->tokens[static_cast<size_t>(id)];
}

bool Tokenizer::is_control(int32_t id) const {
  return id >= 0 && id < n_vocab() && vocab_->type_of(id) == TokenType::kControl;
}

bool Tokenizer::is_eog(int32_t id) const {
  return id != kNoToken && std::find(eog_ids_.begin(), eog_ids_.end(), id) != eog_ids_.end();
}

std::string Tokenizer::token_to_piece(int32_t id, bool special) const {
  if (id < 0 || id >= n_vocab()) return {};
  const std::string& text = vocab_->tokens[static_cast<size_t>(id)];
  switch (vocab_->type_of(id)) {
    case TokenType::kNormal:
      if (vocab_->kind == TokenizerKind::kBpe) return bpe_->decode_text(text);
      return replace_all(text, kSpaceMarker, " ");
    case TokenType::kUnknown:
      if (vocab_->kind == TokenizerKind::kSpm) return "\xE2\x96\x85";  // ▅, as the reference shows <unk>
      return special ? text : std::string();
    case TokenType::kControl:
      return special ? text : std::string();
    case TokenType::kUserDefined:
      return text;
    case TokenType::kByte: {
      const int32_t byte = parse_byte_token(text);
      if (byte >= 0) return std::string(1, static_cast<char>(byte));
      return text;
    }
    case TokenType::kUndefined:
    case TokenType::kUnused:
      break;
  }
  return {};
}

bool Tokenizer::strips_leading_space() const {
  return (vocab_->kind == TokenizerKind::kSpm && vocab_->add_space_prefix) || vocab_->kind == TokenizerKind::kWpm;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool special) const {
  std::string out;
  bool at_start = strips_leading_space();
  for (int32_t id : ids) {
    std::string piece = token_to_piece(id, special);
    if (piece.empty()) continue;
    if (at_start && piece[0] == ' ') piece.erase(0, 1);
    at_start = false;
    out += piece;
  }
  return out;
}

}  // namespace hearth
