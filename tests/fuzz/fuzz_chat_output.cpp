// libFuzzer target: model output through ChatOutputParser. The first byte picks the family and
// flags (every family of chat_output_parser.h), the second a cut position; the rest is the text. Parsing it whole and in two chunks
// must give the same answer, reasoning and calls, and every call's arguments must be a JSON
// object. Any crash, sanitizer report or mismatch is a bug in the parser.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "chat_output/chat_output_parser.h"

namespace {

struct Collected {
  std::string content, reasoning, calls;
};

void add(Collected& c, const hearth::ChatOutputDelta& d) {
  c.content += d.content;
  c.reasoning += d.reasoning;
  for (const auto& call : d.tool_calls) {
    auto args = nlohmann::json::parse(call.arguments, nullptr, false);
    if (!args.is_object()) std::abort();
    c.calls += call.id + "\x1f" + call.name + "\x1f" + call.arguments + "\x1e";
  }
}

Collected run(const hearth::ChatOutputFormat& format, std::string_view a, std::string_view b) {
  hearth::ChatOutputParser parser(format);
  Collected c;
  add(c, parser.feed(a));
  add(c, parser.feed(b));
  add(c, parser.finish());
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2 || size > 8192) return 0;
  hearth::ChatOutputFormat format;
  // Bits 0-2 and 6 pick the family, 3-5 the flags, 7 a prefill.
  const int pick = (data[0] & 0x07) | ((data[0] & 0x40) >> 3);
  format.family = static_cast<hearth::ChatOutputFamily>(pick % hearth::kChatOutputFamilyCount);
  format.parse_tool_calls = (data[0] & 0x08) != 0;
  format.parse_reasoning = (data[0] & 0x10) != 0;
  format.reasoning_open = (data[0] & 0x20) != 0;
  std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
  size_t cut = text.empty() ? 0 : data[1] % (text.size() + 1);
  if ((data[0] & 0x80) != 0) {
    // Bit 7: the text before the cut is an assistant prefill; the rest is generated, cut in half.
    format.prefilled = std::string(text.substr(0, cut));
    text.remove_prefix(cut);
    cut = text.size() / 2;
  }
  Collected whole = run(format, text, {});
  Collected split = run(format, text.substr(0, cut), text.substr(cut));
  if (whole.content != split.content || whole.reasoning != split.reasoning || whole.calls != split.calls) std::abort();
  return 0;
}
