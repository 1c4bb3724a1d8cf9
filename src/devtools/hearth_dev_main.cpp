// `hearth-dev`: developer tools that are not part of the runtime. So far one command:
// `hearth-dev make-model --arch llama --shape 1b --type q4_0 -o FILE.gguf` writes a model with
// random weights in a real model's shape (see model_maker.h), for benchmarks.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "devtools/model_maker.h"
#include "devtools/model_shapes.h"
#include "util/settings.h"

namespace {

using hearth::SettingSpec;
using hearth::SettingType;

int run_make_model(const std::vector<std::string>& args) {
  hearth::Settings s({
      {"arch", 0, SettingType::kString, "llama", "architecture: llama, qwen2, qwen3moe or gpt-oss", ""},
      {"shape", 0, SettingType::kString, "1b", "size (" + hearth::devtools::model_shape_names() + ")", ""},
      {"layers", 0, SettingType::kInt, "0", "layers (0: the shape's own count)", "", hearth::SettingRange::at_least(0)},
      {"type", 0, SettingType::kString, "q4_0", "file type: f16, q8_0, q4_0, q4_k_m or q6_k", ""},
      {"output", 'o', SettingType::kString, "", "the .gguf file to write", ""},
      {"seed", 0, SettingType::kInt, "20250605", "seed of the random weights", "", hearth::SettingRange::at_least(0)},
      {"threads", 't', SettingType::kInt, "0", "threads (0: physical cores)", "", hearth::thread_count_range()},
      {"quiet", 'q', SettingType::kBool, "false", "no progress output", ""},
  });
  if (auto st = s.parse(args); !st.ok()) {
    std::fprintf(stderr, "hearth-dev make-model: %s\n", st.error().message.c_str());
    return 2;
  }
  if (s.help_requested()) {
    std::printf("%s", s.help_text("hearth-dev make-model --arch A --shape S --type T -o FILE.gguf").c_str());
    return 0;
  }
  hearth::devtools::MakeModelOptions o;
  o.arch = s.get_string("arch");
  o.shape = s.get_string("shape");
  o.n_layers = static_cast<int32_t>(s.get_int("layers"));
  o.type = s.get_string("type");
  o.output = s.get_string("output");
  o.seed = static_cast<uint64_t>(s.get_int("seed"));
  o.n_threads = static_cast<int32_t>(s.get_int("threads"));
  if (!s.get_bool("quiet")) {
    o.progress = [](size_t done, size_t all, const std::string& name) {
      std::fprintf(stderr, "\r[%zu/%zu] %-40s", done, all, name.c_str());
      if (done == all) std::fprintf(stderr, "\n");
    };
  }
  const auto start = std::chrono::steady_clock::now();
  if (auto st = hearth::devtools::make_model(o); !st.ok()) {
    std::fprintf(stderr, "hearth-dev make-model: %s\n", st.error().to_string().c_str());
    return 1;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!s.get_bool("quiet")) std::fprintf(stderr, "wrote %s in %.1f s\n", o.output.c_str(), secs);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string usage =
      "usage: hearth-dev COMMAND [options]\n\ncommands:\n"
      "  make-model   write a model with random weights in a real model's shape (--help for options)\n";
  if (argc < 2) {
    std::fputs(usage.c_str(), stderr);
    return 2;
  }
  const std::string command = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "make-model") return run_make_model(args);
  if (command == "--help" || command == "-h" || command == "help") {
    std::fputs(usage.c_str(), stdout);
    return 0;
  }
  std::fprintf(stderr, "hearth-dev: unknown command '%s'\n%s", command.c_str(), usage.c_str());
  return 2;
}
