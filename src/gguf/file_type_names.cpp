// GGUF file type names (see file_type_names.h).
#include "gguf/file_type_names.h"

#include <cstdio>
#include <memory>
#include <type_traits>
#include <variant>

#include <iterator>
#include <map>

namespace hearth::gguf {
namespace {

// A metadata value as JSON; arrays longer than 64 items (vocabularies, merges) are left out.
bool value_json(const Value& v, nlohmann::ordered_json& out) {
  if (const Array* a = v.array()) {
    if (a->size() > 64) return false;
    out = nlohmann::ordered_json::array();
    bool ok = true;
    std::visit(
        [&](const auto& items) {
          for (const auto& item : items) {
            using T = std::decay_t<decltype(item)>;
            if constexpr (std::is_same_v<T, Value>) {
              ok = false;  // nested arrays are not reported
            } else if constexpr (std::is_same_v<T, bool>) {
              out.push_back(static_cast<bool>(item));
            } else {
              out.push_back(item);
            }
          }
        },
        a->items);
    return ok;
  }
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (!std::is_same_v<T, std::shared_ptr<Array>>) out = x;
      },
      v.storage());
  return true;
}

}  // namespace


// llama.cpp's numbering of general.file_type (llama_ftype); ids that were retired map to "".
std::string file_type_name(uint32_t id) {
  static const char* const kNames[] = {
      "ALL_F32",        "MOSTLY_F16",     "MOSTLY_Q4_0",    "MOSTLY_Q4_1",    "MOSTLY_Q4_1_SOME_F16",
      "",               "",               "MOSTLY_Q8_0",    "MOSTLY_Q5_0",    "MOSTLY_Q5_1",
      "MOSTLY_Q2_K",    "MOSTLY_Q3_K_S",  "MOSTLY_Q3_K_M",  "MOSTLY_Q3_K_L",  "MOSTLY_Q4_K_S",
      "MOSTLY_Q4_K_M",  "MOSTLY_Q5_K_S",  "MOSTLY_Q5_K_M",  "MOSTLY_Q6_K",    "MOSTLY_IQ2_XXS",
      "MOSTLY_IQ2_XS",  "MOSTLY_Q2_K_S",  "MOSTLY_IQ3_XS",  "MOSTLY_IQ3_XXS", "MOSTLY_IQ1_S",
      "MOSTLY_IQ4_NL",  "MOSTLY_IQ3_S",   "MOSTLY_IQ3_M",   "MOSTLY_IQ2_S",   "MOSTLY_IQ2_M",
      "MOSTLY_IQ4_XS",  "MOSTLY_IQ1_M",   "MOSTLY_BF16",    "",               "",
      "",               "MOSTLY_TQ1_0",   "MOSTLY_TQ2_0",   "MOSTLY_MXFP4_MOE",
  };
  if (id < std::size(kNames) && kNames[id][0] != '\0') return kNames[id];
  return "unknown (" + std::to_string(id) + ")";
}

// The tensor type holding most weight elements (matrices first; vectors such as norms are
// usually F32 whatever the file type), as a file-type-like name: "ALL_F32", "MOSTLY_Q4_K".
std::string guess_file_type(const File& f) {
  std::map<DType, int64_t> matrix_elems, all_elems;
  for (const auto& t : f.tensors()) {
    all_elems[t.type] += t.element_count();
    if (t.shape.size() >= 2) matrix_elems[t.type] += t.element_count();
  }
  const auto& counts = matrix_elems.empty() ? all_elems : matrix_elems;
  if (counts.empty()) return "";
  auto best = counts.begin();
  for (auto it = counts.begin(); it != counts.end(); ++it) {
    if (it->second > best->second) best = it;
  }
  if (best->first == DType::kF32) return "ALL_F32";
  return "MOSTLY_" + std::string(dtype_name(best->first));
}

std::string quantization_label(const File& f) {
  auto ft = f.get<uint32_t>("general.file_type");
  std::string type_name = ft.ok() ? file_type_name(*ft) : guess_file_type(f);
  for (const char* prefix : {"MOSTLY_", "ALL_"}) {
    if (type_name.rfind(prefix, 0) == 0) type_name = type_name.substr(std::string(prefix).size());
  }
  return type_name;
}

uint64_t parameter_count(const File& f) {
  uint64_t n = 0;
  for (const auto& t : f.tensors()) n += static_cast<uint64_t>(t.element_count());
  return n;
}

std::string parameter_size_text(uint64_t n) {
  char buf[32];
  const double d = static_cast<double>(n);
  if (n >= 1000000000ull) {
    std::snprintf(buf, sizeof(buf), "%.1fB", d / 1e9);
  } else if (n >= 1000000ull) {
    std::snprintf(buf, sizeof(buf), "%.2fM", d / 1e6);
  } else if (n >= 1000ull) {
    std::snprintf(buf, sizeof(buf), "%.2fK", d / 1e3);
  } else {
    std::snprintf(buf, sizeof(buf), "%llu", static_cast<unsigned long long>(n));
  }
  return buf;
}

nlohmann::ordered_json metadata_summary(const File& f) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& kv : f.metadata()) {
    if (kv.key == "tokenizer.chat_template") continue;
    nlohmann::ordered_json v;
    if (value_json(kv.value, v)) out[kv.key] = std::move(v);
  }
  out["general.parameter_count"] = parameter_count(f);
  return out;
}

}  // namespace hearth::gguf
