// Malformed GGUF files, built by hand (raw bytes and byte surgery on writer output): each must
// give its specific error (kind + a message fragment), never a crash. The same files are the
// seed corpus of the GGUF fuzzer (tests/fuzz/corpus/gguf/); a test keeps the two in step.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/test_paths.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "util/file_io.h"

namespace hearth::gguf {
namespace {

// Appends little-endian GGUF fields to a byte string.
struct Raw {
  std::string s;
  Raw& u32(uint32_t x) { return put(&x, 4); }
  Raw& u64(uint64_t x) { return put(&x, 8); }
  Raw& bytes(const std::string& b) { s += b; return *this; }
  Raw& str(const std::string& x) { u64(x.size()); return bytes(x); }
  Raw& zeros(size_t n) { s.append(n, '\0'); return *this; }
  Raw& pad(size_t a) { return zeros((a - s.size() % a) % a); }
  Raw& header(uint64_t tensors, uint64_t kvs, uint32_t version = 3) { bytes("GGUF"); u32(version); u64(tensors); return u64(kvs); }
  Raw& kv_u32(const std::string& key, uint32_t v) { str(key); u32(4); return u32(v); }
  Raw& tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
    str(name);
    u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) u64(d);
    u32(type);
    return u64(offset);
  }

 private:
  Raw& put(const void* p, size_t n) { s.append(static_cast<const char*>(p), n); return *this; }
};

constexpr uint32_t kF32 = 0, kQ4_0 = 2;

// A small valid file: three kinds of metadata and two tensors of different types.
std::string small_valid_file() {
  Writer w;
  w.set("general.architecture", Value("llama"));
  Array a;
  a.elem_type = ValueType::kString;
  a.items = std::vector<std::string>{"a", "bc"};
  w.set("x.tokens", Value(std::move(a)));
  w.set("x.count", Value(uint32_t{7}));
  (void)w.add_tensor("w", DType::kF32, {4, 2}, std::string(32, '\x11'));
  (void)w.add_tensor("q", DType::kQ8_0, {32}, std::string(34, '\x22'));
  return w.serialize();
}

// A file with the given tensor infos (no metadata) followed by `data_bytes` of tensor data.
std::string tensor_file(const std::vector<std::tuple<std::string, std::vector<uint64_t>, uint32_t, uint64_t>>& infos,
                        size_t data_bytes, const std::string& kvs = "", uint64_t kv_count = 0) {
  Raw r;
  r.header(infos.size(), kv_count).bytes(kvs);
  for (const auto& [name, dims, type, offset] : infos) r.tensor(name, dims, type, offset);
  r.pad(32).zeros(data_bytes);
  return r.s;
}

std::string nested_arrays(int depth) {
  Raw r;
  r.header(0, 1).str("deep").u32(9);
  for (int i = 0; i < depth; ++i) r.u32(9).u64(1);
  r.u32(4).u64(0);
  return r.s;
}

struct Case {
  const char* name;
  std::string bytes;
  ErrorKind kind;
  const char* fragment;
};

std::vector<Case> malformed_cases() {
  const uint64_t huge = 1ull << 60;
  std::string magic = small_valid_file();
  std::memcpy(magic.data(), "GGML", 4);
  std::string v1 = small_valid_file();
  v1[4] = 1;
  std::string v99 = small_valid_file();
  v99[4] = 99;
  std::string big_endian = small_valid_file();
  big_endian[4] = 0;
  big_endian[7] = 3;
  const std::string good = small_valid_file();
  return {
      {"empty", "", ErrorKind::kCorrupt, "truncated file in header"},
      {"short_magic", "GG", ErrorKind::kCorrupt, "truncated file in header"},
      {"header_cut", good.substr(0, 20), ErrorKind::kCorrupt, "truncated file in header"},
      {"bad_magic", magic, ErrorKind::kCorrupt, "bad magic 'GGML'"},
      {"version_1", v1, ErrorKind::kUnsupported, "GGUF version 1 is not supported"},
      {"version_99", v99, ErrorKind::kUnsupported, "unsupported GGUF version 99"},
      {"big_endian", big_endian, ErrorKind::kUnsupported, "big-endian GGUF files are not supported"},
      {"kv_count_huge", Raw().header(0, huge).zeros(64).s, ErrorKind::kCorrupt, "kv_count 1152921504606846976 is absurd"},
      {"tensor_count_huge", Raw().header(1ull << 40, 0).zeros(64).s, ErrorKind::kCorrupt, "tensor_count 1099511627776 is absurd"},
      {"key_length_huge", Raw().header(0, 1).u64(1ull << 62).zeros(16).s, ErrorKind::kCorrupt, "string length 4611686018427387904"},
      {"string_value_length_huge", Raw().header(0, 1).str("k").u32(8).u64(huge).zeros(8).s, ErrorKind::kCorrupt,
       "string length 1152921504606846976 in metadata entry 0 ('k')"},
      {"array_length_huge", Raw().header(0, 1).str("a").u32(9).u32(4).u64(1ull << 61).zeros(16).s, ErrorKind::kCorrupt,
       "array length 2305843009213693952 of uint32 in metadata entry 0 ('a')"},
      {"string_array_length_huge", Raw().header(0, 1).str("a").u32(9).u32(8).u64(1000).str("x").s, ErrorKind::kCorrupt,
       "array length 1000 of string"},
      {"value_type_77", Raw().header(0, 1).str("a").u32(77).zeros(8).s, ErrorKind::kCorrupt,
       "unknown value type 77 in metadata entry 0 ('a')"},
      {"array_elem_type_77", Raw().header(0, 1).str("a").u32(9).u32(77).u64(1).zeros(8).s, ErrorKind::kCorrupt,
       "unknown value type 77 for array elements"},
      {"nested_depth_100", nested_arrays(100), ErrorKind::kCorrupt, "arrays nested deeper than 8 levels"},
      {"truncated_kv", Raw().header(0, 2).kv_u32("a", 1).str("b").s, ErrorKind::kCorrupt,
       "truncated file in metadata entry 1 ('b')"},
      {"duplicate_key", Raw().header(0, 2).kv_u32("a", 1).kv_u32("a", 2).s, ErrorKind::kCorrupt, "duplicate key 'a'"},
      {"alignment_0", tensor_file({{"w", {8}, kF32, 0}}, 32, Raw().kv_u32("general.alignment", 0).s, 1),
       ErrorKind::kCorrupt, "general.alignment 0 is not a nonzero power of two"},
      {"alignment_3", tensor_file({{"w", {8}, kF32, 0}}, 32, Raw().kv_u32("general.alignment", 3).s, 1),
       ErrorKind::kCorrupt, "general.alignment 3 is not a nonzero power of two"},
      {"alignment_uint64", Raw().header(0, 1).str("general.alignment").u32(10).u64(32).s, ErrorKind::kCorrupt,
       "general.alignment must be a uint32, found uint64"},
      {"truncated_tensor_info", Raw().header(1, 0).str("a_rather_long_tensor_name").u32(2).s, ErrorKind::kCorrupt,
       "truncated file in tensor info 0 ('a_rather_long_tensor_name')"},
      {"n_dims_9", tensor_file({{"w", {1, 1, 1, 1, 1, 1, 1, 1, 1}, kF32, 0}}, 32), ErrorKind::kCorrupt,
       "n_dims 9 in tensor info 0 ('w')"},
      {"n_dims_0", tensor_file({{"w", {}, kF32, 0}}, 32), ErrorKind::kCorrupt, "n_dims 0"},
      {"dim_zero", tensor_file({{"w", {8, 0}, kF32, 0}}, 32), ErrorKind::kCorrupt, "dimension 1 of tensor info 0 ('w') is 0"},
      {"dim_negative", tensor_file({{"w", {~0ull}, kF32, 0}}, 32), ErrorKind::kCorrupt, "is negative or too large"},
      {"dim_product_overflow", tensor_file({{"w", {1ull << 32, 1ull << 32}, kF32, 0}}, 32), ErrorKind::kCorrupt,
       "element count of tensor info 0 ('w') overflows"},
      {"byte_size_overflow", tensor_file({{"w", {1ull << 62, 1}, 28, 0}}, 32), ErrorKind::kCorrupt,
       "byte size of tensor info 0 ('w') overflows"},
      {"ggml_type_99", tensor_file({{"w", {8}, 99, 0}}, 32), ErrorKind::kUnsupported, "unknown tensor type 99"},
      {"ggml_type_retired_4", tensor_file({{"w", {32}, 4, 0}}, 32), ErrorKind::kUnsupported, "unknown tensor type 4"},
      {"row_not_block_multiple", tensor_file({{"w", {31, 2}, kQ4_0, 0}}, 64), ErrorKind::kCorrupt,
       "row length 31 of tensor info 0 ('w') is not a multiple of the Q4_0 block size 32"},
      {"offset_outside_file", tensor_file({{"w", {8}, kF32, 1 << 20}}, 32), ErrorKind::kCorrupt,
       "data of tensor 'w' (offset 1048576, 32 bytes) lies outside the file"},
      {"offset_wraps_around", tensor_file({{"w", {8}, kF32, ~0ull - 31}}, 32), ErrorKind::kCorrupt, "lies outside the file"},
      {"tensor_data_missing", tensor_file({{"w", {8}, kF32, 0}}, 16), ErrorKind::kCorrupt, "lies outside the file"},
      {"misaligned_offset", tensor_file({{"w", {8}, kF32, 4}}, 64), ErrorKind::kCorrupt,
       "offset 4 of tensor 'w' is not aligned to 32"},
      {"overlapping_tensors", tensor_file({{"a", {16}, kF32, 0}, {"b", {16}, kF32, 32}}, 96), ErrorKind::kCorrupt,
       "tensors 'a' and 'b' overlap"},
      {"duplicate_tensor_name", tensor_file({{"w", {8}, kF32, 0}, {"w", {8}, kF32, 32}}, 64), ErrorKind::kCorrupt,
       "duplicate tensor name 'w'"},
  };
}

TEST(GgufMalformed, EachCaseGivesItsError) {
  auto cases = malformed_cases();
  EXPECT_GE(cases.size(), 15u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto r = File::parse(reinterpret_cast<const uint8_t*>(c.bytes.data()), c.bytes.size());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, c.kind) << r.error().to_string();
    EXPECT_NE(r.error().message.find(c.fragment), std::string::npos) << r.error().message;
  }
}

TEST(GgufMalformed, Version2Parses) {
  std::string v2 = small_valid_file();
  v2[4] = 2;
  auto r = File::parse(reinterpret_cast<const uint8_t*>(v2.data()), v2.size());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->version(), 2u);
  EXPECT_EQ(r->tensors().size(), 2u);
  EXPECT_EQ(r->get<uint32_t>("x.count").value(), 7u);
}

TEST(GgufMalformed, NullBufferIsTruncated) {
  auto r = File::parse(nullptr, 100);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kCorrupt);
}

// Cut the small valid file at every length: each cut before the end of the last tensor's data
// is an error that says where it stopped; cuts in the final padding still parse.
TEST(GgufMalformed, EveryTruncationIsAnError) {
  const std::string good = small_valid_file();
  auto full = File::parse(reinterpret_cast<const uint8_t*>(good.data()), good.size());
  ASSERT_TRUE(full.ok()) << full.error().to_string();
  const TensorInfo* q = full->find_tensor("q");
  ASSERT_NE(q, nullptr);
  const size_t data_end = full->data_offset() + q->offset + q->size_bytes;
  for (size_t len = 0; len < good.size(); ++len) {
    SCOPED_TRACE(len);
    std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(len));
    auto r = File::parse(cut.data(), cut.size());
    if (len >= data_end) {
      EXPECT_TRUE(r.ok());
      continue;
    }
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, ErrorKind::kCorrupt);
    const std::string& m = r.error().message;
    const bool named = m.find("truncated file in") != std::string::npos || m.find("is absurd") != std::string::npos ||
                       m.find("runs past the end") != std::string::npos || m.find("exceeds the") != std::string::npos ||
                       m.find("outside the file") != std::string::npos;
    EXPECT_TRUE(named) << m;
    if (len < 24) {
      EXPECT_NE(m.find("header"), std::string::npos) << m;
    }
  }
}

TEST(GgufMalformed, OpenNamesThePath) {
  const std::string path = test::make_temp_dir() + "/bad.gguf";
  ASSERT_TRUE(write_file_atomic(path, std::string("GGUF\x01\0\0\0", 8)).ok());
  auto r = File::open(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find(path), std::string::npos);
  EXPECT_NE(r.error().message.find("version 1"), std::string::npos);
}

// The fuzzer's seed corpus holds exactly these files (plus the small valid one). Set
// HEARTH_REGENERATE_FUZZ_SEEDS=1 to rewrite tests/fuzz/corpus/gguf/ after changing the cases.
TEST(GgufMalformed, FuzzSeedCorpusMatchesCases) {
  const std::string dir = test::source_dir() + "/tests/fuzz/corpus/gguf";
  auto cases = malformed_cases();
  cases.push_back({"valid_small", small_valid_file(), ErrorKind::kInternal, ""});
  const char* regen = std::getenv("HEARTH_REGENERATE_FUZZ_SEEDS");
  for (const auto& c : cases) {
    const std::string path = dir + "/" + c.name + ".gguf";
    if (regen != nullptr && std::string(regen) == "1") {
      ASSERT_TRUE(write_file_atomic(path, c.bytes).ok()) << path;
      continue;
    }
    auto on_disk = read_file(path);
    ASSERT_TRUE(on_disk.ok()) << path << " missing: run with HEARTH_REGENERATE_FUZZ_SEEDS=1";
    EXPECT_TRUE(*on_disk == c.bytes) << path << " is stale: run with HEARTH_REGENERATE_FUZZ_SEEDS=1";
  }
}

}  // namespace
}  // namespace hearth::gguf
