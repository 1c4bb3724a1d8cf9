// GGUF re-quantization (see gguf_quantizer.h).
#include "gguf/gguf_quantizer.h"

#include <algorithm>
#include <map>

#include "gguf/file_type_names.h"
#include "tensor/quantize.h"
#include "util/file_io.h"
#include "util/log.h"
#include "util/thread_pool.h"

namespace hearth::gguf {
namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// llama-quantize re-encodes only weight matrices; norms, biases, router gates and position
// tables keep their type.
bool is_quantizable(const TensorInfo& t) {
  if (t.shape.size() < 2 || !ends_with(t.name, "weight")) return false;
  for (const char* keep : {"_norm.weight", "ffn_gate_inp.weight", "position_embd", "token_types", "ssm_conv1d",
                           "ssm_x.weight", "ssm_dt.weight", "rel_pos", "pos_embd"}) {
    if (t.name.find(keep) != std::string::npos) return false;
  }
  return true;
}

// The suffixes whose _M-mix choice depends on the tensor's position among its kind (llama.cpp
// counts attn_v and ffn_down tensors in file order).
constexpr const char* kCountedKinds[] = {"attn_v.weight", "ffn_down.weight", "attn_qkv.weight"};

struct Plan {
  const TensorInfo* src = nullptr;
  DType type = DType::kF32;
  bool convert = false;  // false: bytes copied as they are
};

std::vector<Plan> plan(const File& source, FileType ftype, QuantizeSummary& summary) {
  std::map<std::string, int32_t> kind_total;
  for (const auto& t : source.tensors()) {
    for (const char* k : kCountedKinds) {
      if (ends_with(t.name, k)) ++kind_total[k];
    }
  }
  const bool has_output = source.find_tensor("output.weight") != nullptr;
  // Query heads per KV head, as llama.cpp reads them (0 where the counts are missing).
  const std::string arch = source.get_or<std::string>("general.architecture", "");
  const uint32_t n_head = source.get_or<uint32_t>(arch + ".attention.head_count", 0);
  const uint32_t n_head_kv = source.get_or<uint32_t>(arch + ".attention.head_count_kv", n_head);
  const int32_t n_gqa = n_head_kv > 0 ? static_cast<int32_t>(n_head / n_head_kv) : 0;
  std::map<std::string, int32_t> kind_seen;
  std::vector<Plan> plans;
  for (const auto& t : source.tensors()) {
    Plan p;
    p.src = &t;
    p.type = t.type;
    if (is_quantizable(t)) {
      TensorRole role;
      role.name = t.name;
      role.cols = t.shape[0];
      role.rows = t.rows();
      role.is_matrix = true;
      role.is_output = t.name == "output.weight" || (!has_output && t.name == "token_embd.weight");
      role.n_gqa = n_gqa;
      for (const char* k : kCountedKinds) {
        if (ends_with(t.name, k)) {
          role.layer = kind_seen[k]++;
          role.n_layer = kind_total[k];
        }
      }
      p.type = tensor_type_for(ftype, role);
      p.convert = p.type != t.type;
      const DType wanted = preferred_tensor_type(ftype, role);
      if (p.type != wanted) {
        std::string note = t.name + ": " + std::string(dtype_name(wanted)) + " -> " + std::string(dtype_name(p.type)) +
                           " (rows of " + std::to_string(role.cols) + " elements)";
        log_warn("quantize: row length is not a multiple of the block size; using a compatible type",
                 {{"tensor", t.name}, {"wanted", dtype_name(wanted)}, {"using", dtype_name(p.type)},
                  {"row_elements", static_cast<long long>(role.cols)}});
        summary.fallbacks.push_back(std::move(note));
      }
      if (dtype_info(p.type).block_elems > 1) ++summary.quantized;
    }
    plans.push_back(p);
  }
  return plans;
}

// Converts one tensor row by row on every thread of the pool.
Status convert_tensor(const Plan& p, ThreadPool& pool, std::string& bytes) {
  const TensorInfo& t = *p.src;
  const int64_t cols = t.shape[0];
  const int64_t rows = t.rows();
  HEARTH_ASSIGN(const uint64_t src_row, dtype_row_bytes(t.type, static_cast<uint64_t>(cols)));
  HEARTH_ASSIGN(const uint64_t dst_row, dtype_row_bytes(p.type, static_cast<uint64_t>(cols)));
  bytes.resize(dst_row * static_cast<uint64_t>(rows));
  std::vector<Status> failures(static_cast<size_t>(pool.size()), ok_status());
  std::vector<std::vector<float>> scratch(static_cast<size_t>(pool.size()));
  const size_t grain = std::max<size_t>(1, static_cast<size_t>((1 << 16) / std::max<int64_t>(cols, 1)));
  pool.parallel_for_dynamic(static_cast<size_t>(rows), grain, [&](size_t begin, size_t end, int thread) {
    std::vector<float>& row = scratch[static_cast<size_t>(thread)];
    row.resize(static_cast<size_t>(cols));
    Status& failure = failures[static_cast<size_t>(thread)];
    for (size_t r = begin; r < end && failure.ok(); ++r) {
      failure = dequantize_row(t.type, t.data + r * src_row, row.data(), cols);
      if (failure.ok()) failure = quantize_row(p.type, row.data(), bytes.data() + r * dst_row, cols);
    }
  });
  for (const auto& st : failures) {
    if (!st.ok()) return st.error().with_context("tensor '" + t.name + "'");
  }
  return ok_status();
}

}  // namespace

Result<FileType> quantize_type_from_name(const std::string& name) {
  auto t = file_type_from_name(name);
  if (!t.ok()) {
    return make_error(ErrorKind::kInvalidArgument, "unsupported quantization type '" + name.substr(0, 64) +
                                                       "'; supported types are F16, Q8_0, Q4_0, Q4_K_M, Q5_K_M, Q6_K, IQ4_NL, IQ4_XS");
  }
  return *t;
}

Result<std::string> check_quantize_source(const File& source) {
  for (const auto& t : source.tensors()) {
    if (t.type == DType::kF32 || t.type == DType::kF16 || t.type == DType::kBF16) continue;
    return make_error(ErrorKind::kUnsupported,
                      "the model is already quantized (" + quantization_label(source) + ", tensor '" + t.name + "' is " +
                          std::string(dtype_name(t.type)) +
                          "); quantization is only supported for F16, BF16 and F32 models: create from an unquantized GGUF");
  }
  return quantization_label(source);
}

Result<QuantizeSummary> quantize_gguf(const File& source, FileType type, const Writer::ByteSink& sink, int n_threads,
                                      const QuantizeProgressFn& progress) {
  QuantizeSummary summary;
  HEARTH_ASSIGN(summary.source_type, check_quantize_source(source));
  const std::vector<Plan> plans = plan(source, type, summary);
  summary.tensors = plans.size();

  Writer w(source.alignment());
  for (const auto& kv : source.metadata()) w.set(kv.key, kv.value);
  w.set("general.file_type", Value(file_type_gguf_id(type)));
  if (file_type_quantized(type)) w.set("general.quantization_version", Value(uint32_t{2}));
  uint64_t total_elements = 0;
  for (const auto& p : plans) {
    HEARTH_TRY(w.add_tensor_deferred(p.src->name, p.type, p.src->shape));
    total_elements += static_cast<uint64_t>(p.src->element_count());
  }

  ThreadPool pool(n_threads);
  QuantizeProgress status;
  status.tensors_total = plans.size();
  status.elements_total = total_elements;
  HEARTH_TRY(w.write_to(sink, [&](size_t i, std::string& bytes) -> Status {
    const Plan& p = plans[i];
    if (p.convert) {
      HEARTH_TRY(convert_tensor(p, pool, bytes));
    } else {
      bytes.resize(p.src->size_bytes);
      HEARTH_TRY(source.read_bytes(p.src->data, p.src->size_bytes, bytes.data()));
    }
    source.release_bytes(p.src->data, p.src->size_bytes);
    status.tensors_done = i + 1;
    status.elements_done += static_cast<uint64_t>(p.src->element_count());
    status.tensor = p.src->name;
    if (progress) progress(status);
    return ok_status();
  }));
  return summary;
}

Result<QuantizeSummary> quantize_gguf_file(const std::string& source_path, const std::string& output_path,
                                           FileType type, int n_threads, const QuantizeProgressFn& progress) {
  HEARTH_ASSIGN(const File source, File::open(source_path));
  HEARTH_ASSIGN(AtomicFileWriter out, AtomicFileWriter::create(output_path));
  HEARTH_ASSIGN(QuantizeSummary summary,
                quantize_gguf(source, type, [&](std::string_view b) { return out.append(b); }, n_threads, progress));
  HEARTH_TRY(out.commit());
  return summary;
}

}  // namespace hearth::gguf
