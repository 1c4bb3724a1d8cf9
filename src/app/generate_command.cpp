// `hearth generate -m FILE -p TEXT`: loads a model and streams a continuation of the prompt,
// ending with prompt and generation speeds; --json prints one object instead (for scripts).
// --grammar FILE, --grammar-text GBNF or --json-schema FILE constrain the output.
#include <cstdio>
#include <iostream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "app/sampling_flags.h"
#include "engine/generation.h"
#include "sampler/grammar/json_schema_grammar.h"
#include "util/file_io.h"
#include "util/log.h"
#include "util/settings.h"

namespace hearth::app {
namespace {

// The GBNF the grammar flags ask for ("" when none); at most one of them may be given.
Result<std::string> grammar_from(const Settings& s) {
  int given = 0;
  for (const char* flag : {"grammar", "grammar_text", "json_schema"}) given += s.is_set(flag) ? 1 : 0;
  if (given > 1) return make_error(ErrorKind::kInvalidArgument, "give only one of --grammar, --grammar-text and --json-schema");
  if (s.is_set("grammar_text")) return s.get_string("grammar_text");
  if (s.is_set("grammar")) return read_file(s.get_string("grammar"));
  if (!s.is_set("json_schema")) return std::string();
  HEARTH_ASSIGN(std::string text, read_file(s.get_string("json_schema")));
  auto schema = nlohmann::ordered_json::parse(text, nullptr, false);
  if (schema.is_discarded()) {
    return make_error(ErrorKind::kInvalidArgument, "--json-schema: " + s.get_string("json_schema") + " is not valid JSON");
  }
  return sampler::json_schema_to_gbnf(schema);
}

}  // namespace

int run_generate(const CommandArgs& args) {
  // The generated text is the output; the serving engine's per-request info lines would only
  // be noise here (HEARTH_LOG_LEVEL still chooses).
  if (!env_setting("HEARTH_LOG_LEVEL")) set_log_level(LogLevel::kWarn);
  std::vector<SettingSpec> specs = model_run_settings();
  for (auto& s : sampling_settings()) specs.push_back(s);
  specs.push_back({"prompt", 'p', SettingType::kString, "", "prompt text (default: standard input)", ""});
  specs.push_back({"n_predict", 'n', SettingType::kInt, "128", "tokens to generate (-1: until the context is full)", "",
                   SettingRange::between(-1, SettingRange::kInt32Max)});
  specs.push_back({"stop", 0, SettingType::kString, "", "stop string (repeatable)", "", {}, true});
  specs.push_back({"ignore_eos", 0, SettingType::kBool, "false", "keep generating after an end-of-generation token", ""});
  specs.push_back({"no_bos", 0, SettingType::kBool, "false", "do not add the model's BOS/EOS tokens to the prompt", ""});
  specs.push_back({"parse_special", 0, SettingType::kBool, "false", "match special-token text in the prompt", ""});
  specs.push_back({"json", 0, SettingType::kBool, "false", "print one JSON object instead of streaming text", ""});
  specs.push_back({"grammar", 0, SettingType::kString, "", "GBNF grammar file the output must match", ""});
  specs.push_back({"grammar_text", 0, SettingType::kString, "", "GBNF grammar text the output must match", ""});
  specs.push_back({"json_schema", 0, SettingType::kString, "", "JSON Schema file the output must be valid against", ""});
  Settings s(specs);
  if (auto st = s.parse(args); !st.ok()) {
    std::fprintf(stderr, "hearth generate: %s\n", st.error().message.c_str());
    return 2;
  }
  if (s.help_requested()) {
    std::printf("%s", s.help_text("hearth generate -m FILE.gguf -p TEXT [options]").c_str());
    return 0;
  }
  if (s.get_string("model").empty()) {
    std::fprintf(stderr, "hearth generate: no model given; use -m FILE.gguf\n");
    return 2;
  }
  auto ctx_opts = context_options_from(s);
  auto sampling = sampler_params_from(s);
  if (!ctx_opts.ok() || !sampling.ok()) {
    std::fprintf(stderr, "hearth generate: %s\n", (!ctx_opts.ok() ? ctx_opts.error() : sampling.error()).message.c_str());
    return 2;
  }
  auto grammar = grammar_from(s);
  if (!grammar.ok()) {
    std::fprintf(stderr, "hearth generate: %s\n", grammar.error().message.c_str());
    return 2;
  }
  std::string prompt = s.get_string("prompt");
  if (!s.is_set("prompt")) prompt.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());

  auto ctx = engine::InferenceContext::load(s.get_string("model"), *ctx_opts);
  if (!ctx.ok()) {
    std::fprintf(stderr, "hearth generate: %s\n", ctx.error().to_string().c_str());
    return 1;
  }
  engine::GenerateOptions o;
  o.n_predict = static_cast<int32_t>(s.get_int("n_predict"));
  o.sampling = *sampling;
  o.add_special = !s.get_bool("no_bos");
  o.parse_special = s.get_bool("parse_special");
  o.stop_at_eog = !s.get_bool("ignore_eos");
  o.stop = s.get_list("stop");
  o.grammar = std::move(grammar).value();
  const bool json = s.get_bool("json");
  if (!json) {
    std::fputs(prompt.c_str(), stdout);
    std::fflush(stdout);
  }
  auto result = engine::generate(**ctx, prompt, o, [&](std::string_view piece) {
    if (!json) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
    return true;
  });
  if (!result.ok()) {
    std::fprintf(stderr, "\nhearth generate: %s\n", result.error().to_string().c_str());
    return 1;
  }
  const auto& r = *result;
  const double pp_tps = r.prompt_ms > 0 ? r.prompt_tokens.size() * 1000.0 / r.prompt_ms : 0.0;
  const double tg_tps = r.generation_ms > 0 ? r.tokens.size() * 1000.0 / r.generation_ms : 0.0;
  if (json) {
    nlohmann::json out = {
        {"prompt_tokens", r.prompt_tokens},
        {"tokens", r.tokens},
        {"text", r.text},
        {"stop_reason", r.stop_reason},
        {"timings",
         {{"load_ms", (*ctx)->load_ms()},
          {"prompt_n", r.prompt_tokens.size()},
          {"prompt_ms", r.prompt_ms},
          {"prompt_per_second", pp_tps},
          {"predicted_n", r.tokens.size()},
          {"predicted_ms", r.generation_ms},
          {"predicted_per_second", tg_tps}}},
    };
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("\n");
    std::fprintf(stderr, "\nprompt: %zu tokens, %.1f tokens/s | generation: %zu tokens, %.1f tokens/s | load: %.0f ms\n",
                 r.prompt_tokens.size(), pp_tps, r.tokens.size(), tg_tps, (*ctx)->load_ms());
  }
  return 0;
}

}  // namespace hearth::app
