// `hearth embed -m FILE TEXT...`: prints one pooled, L2-normalised embedding per text
// (--json: {"embeddings": [[...], ...]}).
#include <cstdio>

#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "app/sampling_flags.h"

namespace hearth::app {

int run_embed(const CommandArgs& args) {
  std::vector<SettingSpec> specs = model_run_settings();
  specs.push_back({"json", 0, SettingType::kBool, "false", "print JSON", ""});
  specs.push_back({"no_normalize", 0, SettingType::kBool, "false", "print the raw pooled vector", ""});
  Settings s(specs);
  if (auto st = s.parse(args); !st.ok()) {
    std::fprintf(stderr, "hearth embed: %s\n", st.error().message.c_str());
    return 2;
  }
  if (s.help_requested()) {
    std::printf("%s", s.help_text("hearth embed -m FILE.gguf TEXT... [options]").c_str());
    return 0;
  }
  if (s.get_string("model").empty() || s.positionals().empty()) {
    std::fprintf(stderr, "hearth embed: give a model with -m FILE.gguf and at least one TEXT\n");
    return 2;
  }
  auto opts = context_options_from(s);
  if (!opts.ok()) {
    std::fprintf(stderr, "hearth embed: %s\n", opts.error().message.c_str());
    return 2;
  }
  auto ctx = engine::InferenceContext::load(s.get_string("model"), *opts);
  if (!ctx.ok()) {
    std::fprintf(stderr, "hearth embed: %s\n", ctx.error().to_string().c_str());
    return 1;
  }
  nlohmann::json all = nlohmann::json::array();
  for (const auto& text : s.positionals()) {
    auto tokens = (*ctx)->tokenizer().encode(text, true, false);
    auto e = (*ctx)->embed(tokens, !s.get_bool("no_normalize"));
    if (!e.ok()) {
      std::fprintf(stderr, "hearth embed: %s\n", e.error().to_string().c_str());
      return 1;
    }
    if (s.get_bool("json")) {
      all.push_back(*e);
    } else {
      for (size_t i = 0; i < e->size(); ++i) std::printf("%s%.9g", i ? " " : "", (*e)[i]);
      std::printf("\n");
    }
  }
  if (s.get_bool("json")) std::printf("%s\n", nlohmann::json{{"embeddings", all}}.dump().c_str());
  return 0;
}

}  // namespace hearth::app
