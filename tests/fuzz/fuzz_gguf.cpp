// libFuzzer target for the GGUF reader: parses arbitrary bytes, then reads every key through
// the typed accessors and every tensor's bytes, so a bad length or offset that slipped past
// validation shows up as a sanitizer report instead of a crash in a user's loader.
#include <cstddef>
#include <cstdint>
#include <string>

#include "gguf/gguf_file.h"

namespace {

template <typename T>
void touch_scalar(const hearth::gguf::File& f, const std::string& key) {
  auto r = f.get<T>(key);
  if (r.ok()) (void)*r;
  auto a = f.get_array<T>(key);
  if (a.ok()) (void)a->size();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto r = hearth::gguf::File::parse(data, size);
  if (!r.ok()) {
    (void)r.error().to_string();
    return 0;
  }
  const hearth::gguf::File& f = *r;
  for (const auto& kv : f.metadata()) {
    (void)kv.value.to_display_string();
    (void)kv.value.to_display_string(2);
    (void)hearth::gguf::value_type_name(kv.value.type());
    touch_scalar<uint8_t>(f, kv.key);
    touch_scalar<int16_t>(f, kv.key);
    touch_scalar<uint32_t>(f, kv.key);
    touch_scalar<int32_t>(f, kv.key);
    touch_scalar<int64_t>(f, kv.key);
    touch_scalar<uint64_t>(f, kv.key);
    touch_scalar<float>(f, kv.key);
    touch_scalar<double>(f, kv.key);
    touch_scalar<bool>(f, kv.key);
    touch_scalar<std::string>(f, kv.key);
    if (f.find(kv.key) != &kv.value) __builtin_trap();
  }
  (void)f.architecture();
  volatile uint8_t sink = 0;
  for (const auto& t : f.tensors()) {
    if (f.find_tensor(t.name) != &t) __builtin_trap();
    (void)t.element_count();
    (void)t.rows();
    if (t.size_bytes > 0) sink = sink ^ t.data[0] ^ t.data[t.size_bytes - 1];
  }
  (void)sink;
  return 0;
}
