// Looks shaders up by name in the embedded table (see shader_library.h).
#include "kernels/vulkan/shader_library.h"

namespace hearth::kernels::vulkan {

#if !HEARTH_VULKAN
std::span<const EmbeddedShader> embedded_shaders() { return {}; }
#endif

std::span<const uint32_t> find_shader(std::string_view name) {
  for (const EmbeddedShader& s : embedded_shaders()) {
    if (s.name == name) return s.words;
  }
  return {};
}

}  // namespace hearth::kernels::vulkan
