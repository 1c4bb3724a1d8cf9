// Checks the (de)quantizers against files written by llama-quantize (shared/models/random):
// every quantized tensor, dequantized, must be close to the same tensor of the F32 original,
// and quantizing the F32 original with Hearth's reference quantizers must give the file's
// bytes exactly. Prints the per-type error table and byte-exact counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "common/test_paths.h"
#include "gguf/gguf_file.h"
#include "tensor/quantize.h"

namespace hearth {
namespace {

struct TypeStats {
  double err2 = 0;       // sum of squared differences (dequantized - F32)
  double ref2 = 0;       // sum of squared F32 values
  int64_t elements = 0;
  double worst_relative = 0;  // worst per-tensor relative RMS error
  int tensors = 0;
  int exact_tensors = 0;
  int64_t blocks = 0;
  int64_t mismatched_blocks = 0;
};

// Relative RMS error bound per tensor (the weights are Gaussian; llama-quantize's own output
// on them sits well inside these).
double relative_bound(DType type) {
  switch (type) {
    case DType::kF16: return 3e-4;
    case DType::kBF16: return 3e-3;
    case DType::kQ8_0: return 0.006;
    case DType::kQ4_0: return 0.13;
    case DType::kQ4_1: return 0.12;
    case DType::kQ5_0: return 0.065;
    case DType::kQ5_1: return 0.06;
    case DType::kQ2_K: return 0.42;
    case DType::kQ3_K: return 0.23;
    case DType::kQ4_K: return 0.11;
    case DType::kQ5_K: return 0.055;
    case DType::kQ6_K: return 0.028;
    default: return 0;
  }
}

void compare_file(const std::string& quant_path, const gguf::File& f32, std::map<DType, TypeStats>& stats) {
  auto opened = gguf::File::open(quant_path);
  ASSERT_TRUE(opened.ok()) << opened.error().to_string();
  const gguf::File& q = *opened;
  int compared = 0;
  for (const auto& t : q.tensors()) {
    const gguf::TensorInfo* ref = f32.find_tensor(t.name);
    ASSERT_NE(ref, nullptr) << quant_path << ": " << t.name << " not in the F32 file";
    ASSERT_EQ(ref->type, DType::kF32) << t.name;
    ASSERT_EQ(ref->shape, t.shape) << t.name;
    const int64_t n = t.element_count();
    const float* x = reinterpret_cast<const float*>(ref->data);
    if (t.type == DType::kF32) {
      EXPECT_EQ(std::memcmp(t.data, ref->data, t.size_bytes), 0) << quant_path << " " << t.name;
      continue;
    }
    ASSERT_TRUE(dtype_convertible(t.type)) << quant_path << " " << t.name << " " << dtype_name(t.type);
    auto deq = dequantize_tensor(t.type, t.data, t.size_bytes, n);
    ASSERT_TRUE(deq.ok()) << deq.error().to_string();
    double err2 = 0, ref2 = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double d = static_cast<double>((*deq)[static_cast<size_t>(i)]) - x[i];
      err2 += d * d;
      ref2 += static_cast<double>(x[i]) * x[i];
    }
    const double rel = std::sqrt(err2 / ref2);
    EXPECT_LT(rel, relative_bound(t.type)) << quant_path << " " << t.name << " " << dtype_name(t.type);

    std::vector<uint8_t> mine(t.size_bytes + 4);
    uint8_t* aligned = mine.data() + (4 - reinterpret_cast<uintptr_t>(mine.data()) % 4) % 4;
    ASSERT_TRUE(quantize_row(t.type, x, aligned, n).ok());
    const auto& info = dtype_info(t.type);
    const int64_t blocks = n / info.block_elems;
    int64_t bad = 0;
    for (int64_t b = 0; b < blocks; ++b) {
      bad += std::memcmp(aligned + b * info.block_bytes, t.data + b * info.block_bytes, info.block_bytes) != 0;
    }
    // Every type, K-quants included, must reproduce llama-quantize's bytes: the reference
    // searches are reproduced operation for operation.
    EXPECT_EQ(bad, 0) << quant_path << " " << t.name << " " << dtype_name(t.type) << ": " << bad << " of "
                      << blocks << " blocks differ from llama-quantize's";
    auto& s = stats[t.type];
    s.err2 += err2;
    s.ref2 += ref2;
    s.elements += n;
    s.worst_relative = std::max(s.worst_relative, rel);
    s.tensors += 1;
    s.exact_tensors += bad == 0;
    s.blocks += blocks;
    s.mismatched_blocks += bad;
    ++compared;
  }
  EXPECT_GT(compared, 0) << quant_path;
}

void print_stats(const std::map<DType, TypeStats>& stats) {
  std::printf("  %-5s %8s %12s %12s %12s %14s %16s\n", "type", "tensors", "rel RMS", "worst rel",
              "abs RMS", "exact tensors", "blocks differing");
  for (const auto& [type, s] : stats) {
    std::printf("  %-5s %8d %12.6f %12.6f %12.3e %9d / %-3d %9lld / %lld\n",
                std::string(dtype_name(type)).c_str(), s.tensors, std::sqrt(s.err2 / s.ref2), s.worst_relative,
                std::sqrt(s.err2 / static_cast<double>(s.elements)), s.exact_tensors, s.tensors,
                static_cast<long long>(s.mismatched_blocks), static_cast<long long>(s.blocks));
  }
}

const char* const kArchs[] = {"llama", "qwen2", "qwen3", "gemma2", "phi3", "bert"};

TEST(QuantizeModels, EveryQuantizedTensorMatchesF32AndLlamaQuantizeBytes) {
  const std::string dir = test::models_dir() + "/random";
  std::map<DType, TypeStats> stats;
  for (const char* arch : kArchs) {
    const std::string f32_path = dir + "/" + arch + "-F32.gguf";
    HEARTH_REQUIRE_FILE(f32_path);
    auto f32 = gguf::File::open(f32_path);
    ASSERT_TRUE(f32.ok()) << f32.error().to_string();
    std::vector<std::string> types = {"Q8_0", "Q4_0", "Q4_K_M"};
    if (std::string(arch) == "llama") {
      types = {"F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K_M", "Q4_K_M", "Q5_K_M",
               "Q6_K"};
    }
    for (const auto& type : types) {
      const std::string path = dir + "/" + arch + "-" + type + ".gguf";
      HEARTH_REQUIRE_FILE(path);
      SCOPED_TRACE(path);
      compare_file(path, *f32, stats);
      if (HasFatalFailure()) return;
    }
  }
  print_stats(stats);
  // Every type the shared files hold was seen.
  for (DType t : {DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0,
                  DType::kQ5_1, DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    EXPECT_GT(stats[t].tensors, 0) << dtype_name(t);
  }
}

}  // namespace
}  // namespace hearth
