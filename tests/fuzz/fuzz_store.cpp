// libFuzzer target: the model store's parsers on arbitrary text: Modelfiles, model names,
// digests and manifests. None may crash; a Modelfile that parses must print (format_modelfile)
// to text that parses back to the same parameters, template, system prompt and messages.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "store/manifest.h"
#include "store/model_name.h"
#include "store/modelfile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16384) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)hearth::store::parse_model_name(text);
  (void)hearth::store::parse_digest(text);
  (void)hearth::store::Manifest::parse(text);
  auto m = hearth::store::parse_modelfile(text);
  if (m.ok()) {
    auto again = hearth::store::parse_modelfile(hearth::store::format_modelfile(*m, "x:latest"));
    if (!again.ok() || again->parameters != m->parameters || again->template_text != m->template_text ||
        again->system != m->system || again->messages.size() != m->messages.size() || again->licenses != m->licenses ||
        again->from != m->from || again->adapters != m->adapters || again->requires_version != m->requires_version) {
      std::abort();
    }
  }
  return 0;
}
