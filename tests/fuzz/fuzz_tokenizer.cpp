// libFuzzer target for the tokenizer: encodes arbitrary bytes (invalid UTF-8 included) with the
// SentencePiece, GPT-2 BPE, DeepSeek BPE and WordPiece vocabularies of shared/vocab, with
// special-token parsing off and on, then decodes the ids in one piece and through the streaming
// detokenizer. Checks that ids stay in range, that streaming equals decode, and that BPE round
// trips valid UTF-8 exactly. Shared data: $HEARTH_SHARED_DIR, else ../shared beside the checkout.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "tokenizer/streaming_detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8_codec.h"

namespace {

std::string shared_dir() {
  if (const char* env = std::getenv("HEARTH_SHARED_DIR"); env != nullptr && *env != '\0') return env;
  std::string here = __FILE__;  // .../tests/fuzz/fuzz_tokenizer.cpp
  for (int i = 0; i < 3; ++i) here.erase(here.rfind('/'));
  return here + "/../shared";
}

std::vector<std::unique_ptr<hearth::Tokenizer>>& tokenizers() {
  static std::vector<std::unique_ptr<hearth::Tokenizer>> all;
  return all;
}

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_tokenizer: invariant broken: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  for (const char* name : {"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf", "ggml-vocab-deepseek-llm.gguf",
                           "ggml-vocab-bert-bge.gguf"}) {
    const std::string path = shared_dir() + "/vocab/" + name;
    auto file = hearth::gguf::File::open(path);
    if (!file.ok()) {
      std::fprintf(stderr, "fuzz_tokenizer: %s\n", file.error().to_string().c_str());
      std::exit(1);
    }
    auto tok = hearth::Tokenizer::from_gguf(file.value());
    if (!tok.ok()) {
      std::fprintf(stderr, "fuzz_tokenizer: %s: %s\n", path.c_str(), tok.error().to_string().c_str());
      std::exit(1);
    }
    tokenizers().push_back(std::make_unique<hearth::Tokenizer>(std::move(tok).value()));
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const bool valid_utf8 = hearth::utf8::sanitize(text) == text;
  for (const auto& tok : tokenizers()) {
    for (bool special : {false, true}) {
      const auto ids = tok->encode(text, special, special);
      for (int32_t id : ids) check(id >= 0 && id < tok->n_vocab(), "id out of range");
      const std::string decoded = tok->decode(ids, special);
      hearth::StreamingDetokenizer stream(*tok, special);
      std::string streamed;
      for (int32_t id : ids) streamed += stream.push(id);
      streamed += stream.flush();
      check(streamed == decoded, "streaming detokenizer differs from decode");
      if (tok->kind() == hearth::TokenizerKind::kBpe && valid_utf8 && !special) {
        check(decoded == text, "BPE round trip of valid UTF-8");
      }
    }
  }
  return 0;
}
