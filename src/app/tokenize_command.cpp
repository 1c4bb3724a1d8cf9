// `hearth tokenize -m FILE.gguf [--no-bos] [--parse-special] [--json] [TEXT]`: prints the token
// ids of TEXT (or of all of stdin when no TEXT is given) with the model's vocabulary, as a JSON
// array with --json, else space-separated, followed by a newline. Used by users and by outside
// checks of the tokenizer, so the output format is fixed.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>

#include "app/commands.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"
#include "util/settings.h"

namespace hearth::app {

namespace {

std::vector<SettingSpec> tokenize_settings() {
  return {
      {"model", 'm', SettingType::kString, "", "GGUF file whose vocabulary is used", "HEARTH_MODEL"},
      {"no_bos", 0, SettingType::kBool, "false",
       "do not add the model's special tokens (BOS/EOS, or [CLS]/[SEP] for BERT)", ""},
      {"parse_special", 0, SettingType::kBool, "false",
       "turn the text of control tokens (e.g. <|assistant|>) into those tokens", ""},
      {"json", 0, SettingType::kBool, "false", "print a JSON array instead of space-separated ids", ""},
  };
}

std::string read_all_stdin() {
  std::string data;
  char buf[65536];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), stdin)) > 0) data.append(buf, n);
  return data;
}

}  // namespace

int run_tokenize(const CommandArgs& args) {
  Settings settings(tokenize_settings());
  const char* usage = "hearth tokenize -m FILE.gguf [--no-bos] [--parse-special] [--json] [TEXT]";
  const Status parsed = settings.parse(args);
  if (!parsed.ok()) {
    std::fprintf(stderr, "hearth tokenize: %s\n", parsed.error().message.c_str());
    return 2;
  }
  if (settings.help_requested()) {
    std::printf("%s", settings.help_text(usage).c_str());
    std::printf("\nTEXT is tokenized as given; without TEXT all of stdin is read.\n");
    return 0;
  }
  const std::string model = settings.get_string("model");
  if (model.empty()) {
    std::fprintf(stderr, "hearth tokenize: no model given (use -m FILE.gguf)\n");
    return 2;
  }
  std::string text;
  const auto& words = settings.positionals();
  if (words.empty()) {
    text = read_all_stdin();
  } else {
    for (size_t i = 0; i < words.size(); ++i) text += (i ? " " : "") + words[i];
  }

  auto file = gguf::File::open(model);
  if (!file.ok()) {
    std::fprintf(stderr, "hearth tokenize: %s\n", file.error().to_string().c_str());
    return 1;
  }
  auto tokenizer = Tokenizer::from_gguf(file.value());
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "hearth tokenize: %s: %s\n", model.c_str(), tokenizer.error().to_string().c_str());
    return 1;
  }
  const auto ids = tokenizer->encode(text, !settings.get_bool("no_bos"), settings.get_bool("parse_special"));
  std::string out;
  const bool json = settings.get_bool("json");
  if (json) out += "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += json ? "," : " ";
    out += std::to_string(ids[i]);
  }
  if (json) out += "]";
  out += "\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace hearth::app
