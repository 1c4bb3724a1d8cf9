// The SPIR-V shaders compiled from shaders/*.comp at build time and embedded in the binary
// (cmake/EmbedSpirv.cmake writes the table); empty when the Vulkan backend is not built.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace hearth::kernels::vulkan {

struct EmbeddedShader {
  std::string_view name;  // the .spv file's base name: "matmul_q4_k", "matmul_q4_k_sg", ...
  std::span<const uint32_t> words;
};

std::span<const EmbeddedShader> embedded_shaders();
// The shader called `name`; an empty span if there is none.
std::span<const uint32_t> find_shader(std::string_view name);

}  // namespace hearth::kernels::vulkan
