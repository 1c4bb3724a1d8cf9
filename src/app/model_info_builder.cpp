// Model description from GGUF metadata (see model_info_builder.h).
#include "app/model_info_builder.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "gguf/file_type_names.h"

namespace hearth::app {
namespace {

using Json = nlohmann::ordered_json;

std::string file_stem(const std::string& path) {
  size_t slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::string ext = ".gguf";
  if (name.size() > ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0) {
    name.erase(name.size() - ext.size());
  }
  return name;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

int32_t find_fim_token(const gguf::File& f, const Tokenizer& tok, const char* key, const char* old_key,
                       std::initializer_list<const char*> texts) {
  for (const char* k : {key, old_key}) {
    auto id = f.get<int64_t>(k);
    if (id.ok() && *id >= 0 && *id < tok.n_vocab()) return static_cast<int32_t>(*id);
  }
  for (const char* t : texts) {
    int32_t id = tok.vocabulary().find(t);
    if (id >= 0) return id;
  }
  return -1;
}

}  // namespace

protocol::ModelInfo build_model_info(const engine::InferenceContext& ctx, const std::string& path, const std::string& alias,
                                const std::string& chat_template) {
  const gguf::File& f = ctx.model().file();
  const Tokenizer& tok = ctx.tokenizer();
  protocol::ModelInfo c;
  const std::string stem = file_stem(path);
  c.name = alias.empty() ? stem : alias;
  c.aliases = {lower(stem)};
  std::string general_name = f.get_or<std::string>("general.name", "");
  if (!general_name.empty()) c.aliases.push_back(lower(general_name));
  c.path = path;
  c.architecture = f.architecture();
  c.parameter_count = gguf::parameter_count(f);
  c.parameter_size = gguf::parameter_size_text(c.parameter_count);
  c.quantization = gguf::quantization_label(f);
  c.size_bytes = f.file_size();
  c.size_vram = ctx.device_bytes();
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) c.modified_unix = static_cast<int64_t>(st.st_mtime);
  c.chat_template = chat_template.empty() ? f.get_or<std::string>("tokenizer.chat_template", "") : chat_template;
  // None: the engine chats through its plain fallback and reports "" (engine/local_backend.cpp).
  c.chat_template_builtin = c.chat_template.empty();
  c.context_length = ctx.model().hparams().n_ctx_train;
  c.embedding_only = ctx.model().is_encoder();
  c.bos_token = tok.bos_id() >= 0 ? tok.token_text(tok.bos_id()) : "";
  c.eos_token = tok.eos_id() >= 0 ? tok.token_text(tok.eos_id()) : "";
  c.fim_prefix = find_fim_token(f, tok, "tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.prefix_token_id",
                                {"<|fim_prefix|>", "<fim_prefix>", "<fim-prefix>", "<PRE>", "<|fim_begin|>"});
  c.fim_suffix = find_fim_token(f, tok, "tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.suffix_token_id",
                                {"<|fim_suffix|>", "<fim_suffix>", "<fim-suffix>", "<SUF>", "<|fim_hole|>"});
  c.fim_middle = find_fim_token(f, tok, "tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.middle_token_id",
                                {"<|fim_middle|>", "<fim_middle>", "<fim-middle>", "<MID>", "<|fim_end|>"});
  c.model_info = gguf::metadata_summary(f);
  return c;
}

}  // namespace hearth::app
