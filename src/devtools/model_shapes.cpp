// The shape table (see model_shapes.h). Sizes are the published configurations of the models
// named in each label.
#include "devtools/model_shapes.h"

namespace hearth::devtools {
namespace {

ModelShape llama_base() {
  ModelShape s;
  s.arch = "llama";
  s.rope_freq_base = 500000.0f;
  s.norm_eps = 1e-5f;
  s.llama3_rope = true;
  s.tokenizer_pre = "llama-bpe";
  s.add_bos = true;
  s.specials = {"<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>", "<|reserved_special_token_1|>",
                "<|finetune_right_pad_id|>", "<|reserved_special_token_2|>", "<|start_header_id|>",
                "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>", "<|python_tag|>"};
  s.bos = "<|begin_of_text|>";
  s.eos = "<|eot_id|>";
  s.n_special = 256;
  return s;
}

ModelShape qwen2_base() {
  ModelShape s;
  s.arch = "qwen2";
  s.rope_freq_base = 1000000.0f;
  s.norm_eps = 1e-6f;
  s.qkv_bias = true;
  s.tokenizer_pre = "qwen2";
  s.add_bos = false;
  s.specials = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  s.bos = "<|endoftext|>";
  s.eos = "<|im_end|>";
  s.pad = "<|endoftext|>";
  return s;
}

ModelShape qwen3moe_base() {
  ModelShape s = qwen2_base();
  s.arch = "qwen3moe";
  s.qkv_bias = false;
  s.qk_norm = true;
  s.tied_output = false;
  return s;
}

ModelShape gpt_oss_base() {
  ModelShape s;
  s.arch = "gpt-oss";
  s.gpt_oss = true;
  s.tied_output = false;
  s.experts_mxfp4 = true;
  s.rope_freq_base = 150000.0f;
  s.yarn_factor = 32.0f, s.yarn_original_ctx = 4096;
  s.norm_eps = 1e-5f;
  s.tokenizer_pre = "gpt-4o";
  s.specials = {"<|startoftext|>", "<|endoftext|>", "<|return|>", "<|constrain|>", "<|channel|>",
                "<|start|>", "<|end|>", "<|message|>", "<|call|>"};
  s.bos = "<|startoftext|>";
  s.eos = "<|return|>";
  s.pad = "<|endoftext|>";
  return s;
}

std::vector<ModelShape> all_shapes() {
  std::vector<ModelShape> v;
  {
    ModelShape s = llama_base();
    s.name = "1b";
    s.label = "Llama-3.2-1B";
    s.n_embd = 2048, s.n_layer = 16, s.n_ff = 8192, s.n_head = 32, s.n_head_kv = 8, s.head_dim = 64;
    s.n_vocab = 128256, s.n_ctx_train = 131072;
    v.push_back(s);
  }
  {
    ModelShape s = llama_base();
    s.name = "3b";
    s.label = "Llama-3.2-3B";
    s.n_embd = 3072, s.n_layer = 28, s.n_ff = 8192, s.n_head = 24, s.n_head_kv = 8, s.head_dim = 128;
    s.n_vocab = 128256, s.n_ctx_train = 131072;
    v.push_back(s);
  }
  {
    ModelShape s = llama_base();
    s.name = "tiny";
    s.label = "a 2-layer test model";
    s.n_embd = 256, s.n_layer = 2, s.n_ff = 512, s.n_head = 4, s.n_head_kv = 2, s.head_dim = 64;
    s.n_vocab = 1024, s.n_ctx_train = 4096, s.n_special = 16;
    v.push_back(s);
  }
  {
    ModelShape s = qwen2_base();
    s.name = "0.5b";
    s.label = "Qwen2.5-0.5B";
    s.n_embd = 896, s.n_layer = 24, s.n_ff = 4864, s.n_head = 14, s.n_head_kv = 2, s.head_dim = 64;
    s.n_vocab = 151936, s.n_ctx_train = 32768, s.n_special = 151936 - 151643;
    v.push_back(s);
  }
  {
    ModelShape s = qwen2_base();
    s.name = "tiny";
    s.label = "a 2-layer test model";
    // 320 columns: not a multiple of 256, so the K-quant fallbacks of the real 0.5B (896) show.
    s.n_embd = 320, s.n_layer = 2, s.n_ff = 512, s.n_head = 5, s.n_head_kv = 1, s.head_dim = 64;
    s.n_vocab = 1024, s.n_ctx_train = 4096, s.n_special = 16;
    v.push_back(s);
  }
  {
    ModelShape s = qwen3moe_base();
    s.name = "30b-a3b";
    s.label = "Qwen3-30B-A3B";
    s.n_embd = 2048, s.n_layer = 48, s.n_ff = 6144, s.n_head = 32, s.n_head_kv = 4, s.head_dim = 128;
    s.n_expert = 128, s.n_expert_used = 8, s.n_ff_expert = 768;
    s.n_vocab = 151936, s.n_ctx_train = 40960, s.n_special = 151936 - 151643;
    v.push_back(s);
  }
  {
    ModelShape s = qwen3moe_base();
    s.name = "tiny";
    s.label = "a 2-layer test model";
    s.n_embd = 256, s.n_layer = 2, s.n_ff = 512, s.n_head = 4, s.n_head_kv = 2, s.head_dim = 64;
    s.n_expert = 8, s.n_expert_used = 2, s.n_ff_expert = 256;
    s.n_vocab = 1024, s.n_ctx_train = 4096, s.n_special = 16;
    v.push_back(s);
  }
  {
    ModelShape s = gpt_oss_base();
    s.name = "20b";
    s.label = "gpt-oss-20b";
    s.n_embd = 2880, s.n_layer = 24, s.n_ff = 2880, s.n_head = 64, s.n_head_kv = 8, s.head_dim = 64;
    s.n_expert = 32, s.n_expert_used = 4, s.n_ff_expert = 2880;
    s.sliding_window = 128;
    s.n_vocab = 201088, s.n_ctx_train = 131072, s.n_special = 201088 - 199998;
    v.push_back(s);
  }
  {
    ModelShape s = gpt_oss_base();
    s.name = "tiny";
    s.label = "a 2-layer test model";
    s.n_embd = 256, s.n_layer = 2, s.n_ff = 256, s.n_head = 4, s.n_head_kv = 2, s.head_dim = 64;
    s.n_expert = 4, s.n_expert_used = 2, s.n_ff_expert = 256;
    s.sliding_window = 16;
    s.n_vocab = 1024, s.n_ctx_train = 4096, s.n_special = 16;
    v.push_back(s);
  }
  return v;
}

}  // namespace

Result<ModelShape> find_model_shape(const std::string& arch, const std::string& shape) {
  for (const auto& s : all_shapes()) {
    if ((s.arch == arch && s.name == shape) || s.arch + "-" + s.name == shape) return s;
  }
  return make_error(ErrorKind::kInvalidArgument,
                    "no shape '" + shape + "' for architecture '" + arch + "' (known: " + model_shape_names() + ")");
}

std::string model_shape_names() {
  std::string out;
  for (const auto& s : all_shapes()) out += (out.empty() ? "" : ", ") + s.arch + "/" + s.name;
  return out;
}

}  // namespace hearth::devtools
