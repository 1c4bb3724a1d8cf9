// libFuzzer target: request bodies from the network. The first byte picks a dialect route, the
// rest is the body: parse_json_object, the route's translator, the protocol round trip of the
// request it made, and (for chat requests) the ChatML rendering the engine side would do; the Go-template renderer gets the raw bytes too. Any
// crash, sanitizer report, exception escaping, or hang is a bug: every bad body must become an
// error value.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "api/anthropic.h"
#include "template/go_template.h"
#include "api/ollama.h"
#include "api/openai.h"
#include "engine/default_chat_template.h"
#include "protocol/codec.h"
#include "template/chat_render.h"

namespace {

const hearth::ChatTemplate& chatml() {
  static const hearth::ChatTemplate t =
      std::move(hearth::ChatTemplate::create(hearth::engine::kChatMlTemplate, "<s>", "</s>", "chatml")).value();
  return t;
}

void render_chat(const hearth::Result<hearth::api::CompletionJob>& job) {
  if (!job.ok()) return;
  for (const auto& p : job->request.prompts) {
    if (p.kind == hearth::api::PromptSource::Kind::kChat) (void)chatml().render(p.chat);
  }
  // What crosses to the engine survives the protocol's serialisation unchanged.
  const std::string bytes = hearth::protocol::encode(job->request);
  auto back = hearth::protocol::decode_completion_request(bytes);
  if (!back.ok()) {
    // The one refusal allowed: nesting deeper than any real request (tools are passed as given).
    if (back.error().message.find("nests deeper") == std::string::npos) __builtin_trap();
  } else if (hearth::protocol::encode(*back) != bytes) {
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 65536) return 0;
  const uint8_t route = data[0];
  std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  (void)hearth::render_go_template(body, {{"System", "s"}, {"Prompt", "p"}});
  auto json = hearth::api::parse_json_object(body);
  if (!json.ok()) return 0;
  switch (route % 9) {
    case 0: render_chat(hearth::api::parse_openai_chat(*json)); break;
    case 1: render_chat(hearth::api::parse_openai_completion(*json)); break;
    case 2: render_chat(hearth::api::parse_openai_responses(*json)); break;
    case 3: (void)hearth::api::parse_openai_embeddings(*json); break;
    case 4: render_chat(hearth::api::parse_ollama_generate(*json)); break;
    case 5: render_chat(hearth::api::parse_ollama_chat(*json)); break;
    case 6: (void)hearth::api::parse_ollama_embed(*json, route & 16); break;
    case 7: render_chat(hearth::api::parse_anthropic_messages(*json, route & 16)); break;
    case 8: (void)hearth::api::ollama_model_field(*json); break;
  }
  return 0;
}
