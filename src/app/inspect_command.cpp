// `hearth inspect FILE.gguf [--json] [--metadata]`: a summary of a GGUF file (architecture,
// parameter count, file type, tokenizer, context length, format details) and its tensor
// table, as text or as one JSON object. It is how a user checks what a model file is before
// loading it, and how a bad file's problem gets named without a stack trace.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "app/commands.h"
#include "gguf/file_type_names.h"
#include "gguf/gguf_file.h"
#include "util/settings.h"

namespace hearth::app {
namespace {

const char* const kUsage = "hearth inspect FILE.gguf [--json] [--metadata]";

std::vector<SettingSpec> inspect_settings() {
  return {
      {"json", 0, SettingType::kBool, "false", "print one JSON object instead of text", ""},
      {"metadata", 0, SettingType::kBool, "false", "also list every metadata key and value (text output)", ""},
  };
}

std::string with_thousands(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Everything the summary shows, gathered once for both output forms.
struct Summary {
  std::string architecture;
  std::optional<std::string> name;
  int64_t parameter_count = 0;
  std::optional<uint32_t> file_type_id;
  std::string file_type;        // "MOSTLY_Q4_0" or "unknown (absent)"
  std::string file_type_guess;  // only when general.file_type is absent
  std::optional<std::string> tokenizer_model;
  std::optional<std::string> tokenizer_pre;
  std::optional<size_t> vocab_size;
  std::optional<int64_t> context_length;
  bool has_chat_template = false;
};

Summary summarize(const gguf::File& f) {
  Summary s;
  s.architecture = f.architecture();
  if (auto n = f.get<std::string>("general.name"); n.ok()) s.name = *n;
  for (const auto& t : f.tensors()) s.parameter_count += t.element_count();
  if (auto ft = f.get<uint32_t>("general.file_type"); ft.ok()) {
    s.file_type_id = *ft;
    s.file_type = gguf::file_type_name(*ft);
  } else if (f.has("general.file_type")) {
    s.file_type = "unknown (" + f.find("general.file_type")->to_display_string() + ")";
  } else {
    s.file_type = "unknown (absent)";
    s.file_type_guess = gguf::guess_file_type(f);
  }
  if (auto m = f.get<std::string>("tokenizer.ggml.model"); m.ok()) s.tokenizer_model = *m;
  if (auto p = f.get<std::string>("tokenizer.ggml.pre"); p.ok()) s.tokenizer_pre = *p;
  if (const gguf::Value* v = f.find("tokenizer.ggml.tokens"); v != nullptr && v->array() != nullptr) {
    s.vocab_size = v->array()->size();
  }
  if (auto c = f.get<int64_t>(s.architecture + ".context_length"); c.ok()) s.context_length = *c;
  s.has_chat_template = f.has("tokenizer.chat_template");
  return s;
}

template <typename T>
nlohmann::json or_null(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

void print_json(const gguf::File& f, const Summary& s) {
  nlohmann::json j;
  j["path"] = f.path();
  j["architecture"] = s.architecture;
  j["name"] = or_null(s.name);
  j["parameter_count"] = s.parameter_count;
  j["file_type"] = s.file_type;
  j["file_type_id"] = or_null(s.file_type_id);
  if (!s.file_type_guess.empty()) j["file_type_guess"] = s.file_type_guess;
  j["tokenizer"] = {{"model", or_null(s.tokenizer_model)},
                    {"pre", or_null(s.tokenizer_pre)},
                    {"vocab_size", or_null(s.vocab_size)}};
  j["context_length"] = or_null(s.context_length);
  j["has_chat_template"] = s.has_chat_template;
  j["version"] = f.version();
  j["alignment"] = f.alignment();
  j["metadata_count"] = f.metadata().size();
  j["file_size"] = f.file_size();
  j["data_offset"] = f.data_offset();
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& t : f.tensors()) {
    tensors.push_back({{"name", t.name},
                       {"type", std::string(dtype_name(t.type))},
                       {"shape", t.shape},
                       {"bytes", t.size_bytes},
                       {"offset", t.offset}});
  }
  j["tensors"] = std::move(tensors);
  // Names in a hostile file may not be UTF-8: replace bad bytes instead of throwing.
  std::string out = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  std::printf("%s\n", out.c_str());
}

void print_text(const gguf::File& f, const Summary& s, bool with_metadata) {
  auto line = [](const char* label, const std::string& value) { std::printf("%-18s %s\n", label, value.c_str()); };
  const std::string absent = "(absent)";
  line("file:", f.path());
  line("architecture:", s.architecture.empty() ? absent : s.architecture);
  line("name:", s.name.value_or(absent));
  line("parameters:", with_thousands(s.parameter_count));
  std::string ft = s.file_type;
  if (!s.file_type_guess.empty()) ft += ", tensors suggest " + s.file_type_guess;
  line("file type:", ft);
  line("tokenizer:", s.tokenizer_model.value_or(absent) + " (pre: " + s.tokenizer_pre.value_or(absent) + ")");
  line("vocab size:", s.vocab_size ? with_thousands(static_cast<int64_t>(*s.vocab_size)) : absent);
  line("context length:", s.context_length ? std::to_string(*s.context_length) : absent);
  line("chat template:", s.has_chat_template ? "yes" : "no");
  line("GGUF version:", std::to_string(f.version()));
  line("alignment:", std::to_string(f.alignment()));
  line("metadata entries:", std::to_string(f.metadata().size()));
  line("file size:", with_thousands(static_cast<int64_t>(f.file_size())) + " bytes");
  if (with_metadata) {
    std::printf("\nmetadata:\n");
    for (const auto& kv : f.metadata()) {
      std::printf("  %-45s %-8s %s\n", kv.key.c_str(), gguf::value_type_name(kv.value.type()),
                  kv.value.to_display_string().c_str());
    }
  }
  size_t name_width = 4;
  for (const auto& t : f.tensors()) name_width = std::max(name_width, t.name.size());
  std::printf("\ntensors (%zu):\n", f.tensors().size());
  if (f.tensors().empty()) return;
  std::printf("  %-*s  %-5s  %-24s  %12s\n", static_cast<int>(name_width), "name", "type", "shape", "bytes");
  for (const auto& t : f.tensors()) {
    std::printf("  %-*s  %-5s  %-24s  %12s\n", static_cast<int>(name_width), t.name.c_str(),
                std::string(dtype_name(t.type)).c_str(), shape_string(t.shape).c_str(),
                with_thousands(static_cast<int64_t>(t.size_bytes)).c_str());
  }
}

}  // namespace

int run_inspect(const CommandArgs& args) {
  Settings settings(inspect_settings());
  Status parsed = settings.parse(args);
  if (!parsed.ok()) {
    std::fprintf(stderr, "hearth inspect: %s\n\n%s", parsed.error().message.c_str(),
                 settings.help_text(kUsage).c_str());
    return 2;
  }
  if (settings.help_requested()) {
    std::printf("%s", settings.help_text(kUsage).c_str());
    return 0;
  }
  if (settings.positionals().size() != 1) {
    std::fprintf(stderr, "hearth inspect: expected exactly one FILE.gguf\n\n%s", settings.help_text(kUsage).c_str());
    return 2;
  }
  const std::string& path = settings.positionals()[0];
  auto file = gguf::File::open(path);
  if (!file.ok()) {
    // Parse errors already start with "<path>: "; show the path once.
    std::string message = file.error().message;
    if (message.rfind(path + ": ", 0) == 0) message = message.substr(path.size() + 2);
    std::fprintf(stderr, "hearth inspect: %s: %s\n", path.c_str(), message.c_str());
    return 1;
  }
  const Summary summary = summarize(*file);
  if (settings.get_bool("json")) {
    print_json(*file, summary);
  } else {
    print_text(*file, summary, settings.get_bool("metadata"));
  }
  return 0;
}

}  // namespace hearth::app
