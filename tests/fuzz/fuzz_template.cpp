// libFuzzer target: parses and renders arbitrary template text against a small fixed chat
// context. Any crash, sanitizer report or hang (the step/output/recursion limits must stop
// every template quickly) is a bug in the interpreter.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "template/jinja_template.h"

namespace {

const nlohmann::ordered_json& fuzz_context() {
  static const nlohmann::ordered_json ctx = nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "sys"},
      {"role": "user", "content": "hi"},
      {"role": "assistant", "content": null, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"x": [1, 2.5, "s"]}}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "ok"}],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"})");
  return ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16384) return 0;
  std::string_view source(reinterpret_cast<const char*>(data), size);
  auto parsed = hearth::jinja::Template::parse(source, "fuzz");
  if (!parsed.ok()) return 0;
  hearth::jinja::RenderOptions options;
  options.max_steps = 20000;
  options.max_output_bytes = 1 << 16;
  options.max_call_depth = 16;
  std::tm date{};
  date.tm_year = 126;
  date.tm_mday = 1;
  options.now = date;
  auto rendered = parsed->render(fuzz_context(), options);
  (void)rendered;
  return 0;
}
