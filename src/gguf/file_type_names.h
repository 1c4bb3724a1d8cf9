// Names of a GGUF file's type (general.file_type, or a guess from its tensors) and its size in
// ollama's words, shared by `hearth inspect`, the model description `hearth serve` reports
// (/api/tags, /api/show: file type, size, metadata summary) and the model store's config blobs.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "gguf/gguf_file.h"

namespace hearth::gguf {

// llama.cpp's numbering of general.file_type: "MOSTLY_Q4_0", "ALL_F32", or "unknown (N)".
std::string file_type_name(uint32_t id);
// The tensor type holding most weight elements, as a file-type-like name ("MOSTLY_Q4_K").
std::string guess_file_type(const File& f);
// The file type without llama.cpp's prefix, as ollama shows it: "Q4_K_M", "F32".
std::string quantization_label(const File& f);
// Weight elements over every tensor.
uint64_t parameter_count(const File& f);
// "292.80K", "2.18M", "7.2B": ollama's parameter_size style.
std::string parameter_size_text(uint64_t n);
// The metadata /api/show reports as model_info: every scalar and every array of at most 64
// items (vocabularies and merges are left out), without the chat template, plus
// general.parameter_count.
nlohmann::ordered_json metadata_summary(const File& f);

}  // namespace hearth::gguf
