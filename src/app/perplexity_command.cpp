// `hearth perplexity -m FILE -f TEXT -c N`: the chunked perplexity of a text file.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "app/sampling_flags.h"
#include "engine/generation.h"
#include "util/file_io.h"

namespace hearth::app {

int run_perplexity(const CommandArgs& args) {
  std::vector<SettingSpec> specs = model_run_settings();
  specs.push_back({"file", 'f', SettingType::kString, "", "text file to score", ""});
  specs.push_back({"json", 0, SettingType::kBool, "false", "print JSON", ""});
  Settings s(specs);
  if (auto st = s.parse(args); !st.ok()) {
    std::fprintf(stderr, "hearth perplexity: %s\n", st.error().message.c_str());
    return 2;
  }
  if (s.help_requested()) {
    std::printf("%s", s.help_text("hearth perplexity -m FILE.gguf -f TEXT.txt -c N [options]").c_str());
    return 0;
  }
  if (s.get_string("model").empty() || s.get_string("file").empty() || s.get_int("ctx_size") <= 0) {
    std::fprintf(stderr, "hearth perplexity: give -m FILE.gguf, -f TEXT.txt and a chunk size -c N\n");
    return 2;
  }
  auto text = read_file(s.get_string("file"));
  auto opts = context_options_from(s);
  if (!text.ok() || !opts.ok()) {
    std::fprintf(stderr, "hearth perplexity: %s\n", (!text.ok() ? text.error() : opts.error()).to_string().c_str());
    return 1;
  }
  auto ctx = engine::InferenceContext::load(s.get_string("model"), *opts);
  if (!ctx.ok()) {
    std::fprintf(stderr, "hearth perplexity: %s\n", ctx.error().to_string().c_str());
    return 1;
  }
  auto tokens = (*ctx)->tokenizer().encode(*text, true, false);
  auto r = engine::perplexity(**ctx, tokens, static_cast<int32_t>(s.get_int("ctx_size")));
  if (!r.ok()) {
    std::fprintf(stderr, "hearth perplexity: %s\n", r.error().to_string().c_str());
    return 1;
  }
  if (s.get_bool("json")) {
    std::printf("%s\n", nlohmann::json{{"ppl", r->ppl}, {"n_chunks", r->n_chunks}, {"n_scored", r->n_scored},
                                       {"n_tokens", tokens.size()}, {"running_ppl", r->running_ppl}}
                            .dump()
                            .c_str());
  } else {
    std::printf("tokens: %zu, chunks: %d, scored: %d\nPPL = %.4f\n", tokens.size(), r->n_chunks, r->n_scored, r->ppl);
  }
  return 0;
}

}  // namespace hearth::app
