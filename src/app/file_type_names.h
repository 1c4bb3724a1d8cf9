// Names of a GGUF file's type (general.file_type, or a guess from its tensors), shared by
// `hearth inspect` and the model description `hearth serve` reports (/api/tags, /api/show).
#pragma once

#include <cstdint>
#include <string>

#include "gguf/gguf_file.h"

namespace hearth::app {

// llama.cpp's numbering of general.file_type: "MOSTLY_Q4_0", "ALL_F32", or "unknown (N)".
std::string file_type_name(uint32_t id);
// The tensor type holding most weight elements, as a file-type-like name ("MOSTLY_Q4_K").
std::string guess_file_type(const gguf::File& f);

}  // namespace hearth::app
