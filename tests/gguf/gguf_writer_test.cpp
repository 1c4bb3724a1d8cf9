// Writer tests: parse(serialize(x)) gives back every value type (nested arrays included),
// every tensor and the chosen alignment; re-serializing a shared model from its parsed
// contents reproduces the original bytes; add_tensor and write reject bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/test_paths.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "util/file_io.h"

namespace hearth::gguf {
namespace {

Value array_of(ValueType type, decltype(Array::items) items) {
  Array a;
  a.elem_type = type;
  a.items = std::move(items);
  return Value(std::move(a));
}

std::vector<std::pair<std::string, Value>> every_value_type() {
  std::vector<std::pair<std::string, Value>> kv;
  kv.emplace_back("t.u8", Value(uint8_t{200}));
  kv.emplace_back("t.i8", Value(int8_t{-100}));
  kv.emplace_back("t.u16", Value(uint16_t{60000}));
  kv.emplace_back("t.i16", Value(int16_t{-30000}));
  kv.emplace_back("t.u32", Value(uint32_t{4000000000u}));
  kv.emplace_back("t.i32", Value(int32_t{-2000000000}));
  kv.emplace_back("t.f32", Value(1.5f));
  kv.emplace_back("t.bool", Value(true));
  kv.emplace_back("t.str", Value(std::string("h\xc3\xa9llo \"w\"\n")));
  kv.emplace_back("t.empty_str", Value(std::string()));
  kv.emplace_back("t.u64", Value(uint64_t{18000000000000000000ull}));
  kv.emplace_back("t.i64", Value(int64_t{-9000000000000000000ll}));
  kv.emplace_back("t.f64", Value(-2.25e300));
  kv.emplace_back("a.u8", array_of(ValueType::kUint8, std::vector<uint8_t>{1, 2, 255}));
  kv.emplace_back("a.i8", array_of(ValueType::kInt8, std::vector<int8_t>{-1, 0, 127}));
  kv.emplace_back("a.u16", array_of(ValueType::kUint16, std::vector<uint16_t>{1, 65535}));
  kv.emplace_back("a.i16", array_of(ValueType::kInt16, std::vector<int16_t>{-32768, 7}));
  kv.emplace_back("a.u32", array_of(ValueType::kUint32, std::vector<uint32_t>{0, 1, 4294967295u}));
  kv.emplace_back("a.i32", array_of(ValueType::kInt32, std::vector<int32_t>{-5, 5}));
  kv.emplace_back("a.f32", array_of(ValueType::kFloat32, std::vector<float>{0.5f, -1e-30f}));
  kv.emplace_back("a.bool", array_of(ValueType::kBool, std::vector<bool>{true, false, true}));
  kv.emplace_back("a.str", array_of(ValueType::kString, std::vector<std::string>{"a", "", "\xe2\x96\x81the"}));
  kv.emplace_back("a.u64", array_of(ValueType::kUint64, std::vector<uint64_t>{1ull << 63}));
  kv.emplace_back("a.i64", array_of(ValueType::kInt64, std::vector<int64_t>{-(1ll << 62)}));
  kv.emplace_back("a.f64", array_of(ValueType::kFloat64, std::vector<double>{3.25}));
  kv.emplace_back("a.empty", array_of(ValueType::kInt32, std::vector<int32_t>{}));
  // Arrays of arrays, three levels deep, with mixed inner element types.
  std::vector<Value> inner = {array_of(ValueType::kUint32, std::vector<uint32_t>{1, 2}),
                              array_of(ValueType::kString, std::vector<std::string>{"x", "yz"}),
                              array_of(ValueType::kArray, std::vector<Value>{array_of(
                                                              ValueType::kFloat64, std::vector<double>{9.0})})};
  kv.emplace_back("a.nested", array_of(ValueType::kArray, std::move(inner)));
  return kv;
}

std::string pattern_bytes(size_t n, uint8_t seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + i * 31);
  return s;
}

void expect_round_trip(uint64_t alignment, bool write_alignment_key) {
  Writer w(alignment);
  auto kv = every_value_type();
  for (const auto& [k, v] : kv) w.set(k, v);
  if (write_alignment_key) w.set("general.alignment", Value(static_cast<uint32_t>(alignment)));
  struct T {
    const char* name;
    DType type;
    std::vector<int64_t> shape;
    size_t bytes;
  };
  const std::vector<T> tensors = {{"f32", DType::kF32, {5, 3}, 60},       {"f16", DType::kF16, {7}, 14},
                                  {"q4_0", DType::kQ4_0, {64, 2}, 72},    {"q8_0", DType::kQ8_0, {32, 1, 3}, 102},
                                  {"q4_k", DType::kQ4_K, {256, 2}, 288},  {"i32", DType::kI32, {1, 1, 1, 3}, 12},
                                  {"bf16", DType::kBF16, {3}, 6}};
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    ASSERT_TRUE(w.add_tensor(t.name, t.type, t.shape, pattern_bytes(t.bytes, static_cast<uint8_t>(i))).ok()) << t.name;
  }
  const std::string bytes = w.serialize();
  auto r = File::parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const File& f = *r;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), alignment);
  EXPECT_EQ(f.data_offset() % alignment, 0u);
  EXPECT_EQ(bytes.size() % alignment, 0u);
  ASSERT_EQ(f.metadata().size(), kv.size() + (write_alignment_key ? 1 : 0));
  for (size_t i = 0; i < kv.size(); ++i) {
    EXPECT_EQ(f.metadata()[i].key, kv[i].first);
    EXPECT_TRUE(f.metadata()[i].value == kv[i].second) << kv[i].first << ": " << f.metadata()[i].value.to_display_string();
  }
  ASSERT_EQ(f.tensors().size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo& t = f.tensors()[i];
    EXPECT_EQ(t.name, tensors[i].name);
    EXPECT_EQ(t.type, tensors[i].type);
    EXPECT_EQ(t.shape, tensors[i].shape);
    EXPECT_EQ(t.size_bytes, tensors[i].bytes);
    EXPECT_EQ(t.offset % alignment, 0u);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(t.data), t.size_bytes),
              pattern_bytes(tensors[i].bytes, static_cast<uint8_t>(i)));
  }
  // Serializing what was parsed gives the same bytes again.
  Writer again(alignment);
  for (const auto& m : f.metadata()) again.set(m.key, m.value);
  for (const auto& t : f.tensors()) {
    ASSERT_TRUE(again.add_tensor(t.name, t.type, t.shape,
                                 std::string_view(reinterpret_cast<const char*>(t.data), t.size_bytes))
                    .ok());
  }
  EXPECT_EQ(again.serialize(), bytes);
}

TEST(GgufWriter, RoundTripDefaultAlignment) { expect_round_trip(32, false); }
TEST(GgufWriter, RoundTripCustomAlignment) { expect_round_trip(64, true); }
TEST(GgufWriter, RoundTripSmallAlignment) { expect_round_trip(8, true); }

TEST(GgufWriter, TypedAccessConversions) {
  Writer w;
  for (const auto& [k, v] : every_value_type()) w.set(k, v);
  const std::string bytes = w.serialize();
  auto r = File::parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  ASSERT_TRUE(r.ok());
  const File& f = *r;
  EXPECT_EQ(f.get<uint8_t>("t.u8").value(), 200);
  EXPECT_EQ(f.get<int64_t>("t.u32").value(), 4000000000ll);
  EXPECT_EQ(f.get<int16_t>("t.i8").value(), -100);
  EXPECT_EQ(f.get<uint64_t>("t.u64").value(), 18000000000000000000ull);
  EXPECT_EQ(f.get<double>("t.f32").value(), 1.5);
  EXPECT_EQ(f.get<float>("t.f64").ok(), true);  // narrowing a float64 is allowed
  EXPECT_EQ(f.get<bool>("t.bool").value(), true);
  EXPECT_EQ(f.get<std::string>("t.str").value(), "h\xc3\xa9llo \"w\"\n");
  // Integers that do not fit, and values of another kind, are errors naming the key.
  for (auto err : {f.get<uint32_t>("t.i8").error(), f.get<int8_t>("t.u8").error(), f.get<int32_t>("t.u32").error(),
                   f.get<int64_t>("t.u64").error()}) {
    EXPECT_EQ(err.kind, ErrorKind::kOutOfRange);
  }
  auto mismatch = f.get<std::string>("t.u32");
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.error().kind, ErrorKind::kTypeMismatch);
  EXPECT_NE(mismatch.error().message.find("t.u32"), std::string::npos);
  EXPECT_EQ(f.get<float>("t.u32").error().kind, ErrorKind::kTypeMismatch);
  EXPECT_EQ(f.get<int32_t>("t.f32").error().kind, ErrorKind::kTypeMismatch);
  EXPECT_EQ(f.get<bool>("t.u8").error().kind, ErrorKind::kTypeMismatch);
  EXPECT_EQ(f.get<uint32_t>("a.u32").error().kind, ErrorKind::kTypeMismatch);
  auto missing = f.get<uint32_t>("no.such.key");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::kNotFound);
  EXPECT_NE(missing.error().message.find("no.such.key"), std::string::npos);
  EXPECT_EQ(f.get_or<uint32_t>("no.such.key", 7u), 7u);
  EXPECT_EQ(f.get_or<std::string>("t.str", "x"), "h\xc3\xa9llo \"w\"\n");

  EXPECT_EQ(f.get_array<int64_t>("a.u32").value(), (std::vector<int64_t>{0, 1, 4294967295ll}));
  EXPECT_EQ(f.get_array<uint8_t>("a.u8").value(), (std::vector<uint8_t>{1, 2, 255}));
  EXPECT_EQ(f.get_array<double>("a.f32").value()[0], 0.5);
  EXPECT_EQ(f.get_array<bool>("a.bool").value(), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(f.get_array<std::string>("a.str").value(), (std::vector<std::string>{"a", "", "\xe2\x96\x81the"}));
  EXPECT_TRUE(f.get_array<int32_t>("a.empty").value().empty());
  EXPECT_EQ(f.get_array<uint32_t>("a.i8").error().kind, ErrorKind::kOutOfRange);
  EXPECT_EQ(f.get_array<std::string>("a.u32").error().kind, ErrorKind::kTypeMismatch);
  EXPECT_EQ(f.get_array<uint32_t>("a.nested").error().kind, ErrorKind::kTypeMismatch);
  EXPECT_EQ(f.get_array<uint32_t>("t.u32").error().kind, ErrorKind::kTypeMismatch);
  EXPECT_EQ(f.get_array<uint32_t>("nope").error().kind, ErrorKind::kNotFound);

  EXPECT_EQ(f.find("t.str")->to_display_string(), "\"h\xc3\xa9llo \\\"w\\\"\\n\"");
  EXPECT_EQ(f.find("a.u32")->to_display_string(), "[0, 1, 4294967295]");
  EXPECT_EQ(f.find("a.u32")->to_display_string(2), "[0, 1, ... (3 items)]");
  EXPECT_EQ(f.find("a.nested")->to_display_string(), "[[1, 2], [\"x\", \"yz\"], [[9]]]");
  EXPECT_EQ(f.find("t.bool")->to_display_string(), "true");
  EXPECT_EQ(f.find("t.i64")->to_display_string(), "-9000000000000000000");
  EXPECT_EQ(f.find("t.f32")->to_display_string(), "1.5");
}

TEST(GgufWriter, SetReplacesInPlace) {
  Writer w;
  w.set("a", Value(uint32_t{1}));
  w.set("b", Value(uint32_t{2}));
  w.set("a", Value(std::string("one")));
  const std::string bytes = w.serialize();
  auto r = File::parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->metadata().size(), 2u);
  EXPECT_EQ(r->metadata()[0].key, "a");
  EXPECT_EQ(r->get<std::string>("a").value(), "one");
}

TEST(GgufWriter, AddTensorRejectsBadInput) {
  Writer w;
  EXPECT_TRUE(w.add_tensor("x", DType::kF32, {2}, std::string(8, '\0')).ok());
  auto dup = w.add_tensor("x", DType::kF32, {2}, std::string(8, '\0'));
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().message.find("duplicate"), std::string::npos);
  EXPECT_FALSE(w.add_tensor("short", DType::kF32, {2}, std::string(7, '\0')).ok());
  EXPECT_FALSE(w.add_tensor("block", DType::kQ4_0, {31}, std::string(18, '\0')).ok());
  EXPECT_FALSE(w.add_tensor("zero", DType::kF32, {0}, "").ok());
  EXPECT_FALSE(w.add_tensor("dims", DType::kF32, {1, 1, 1, 1, 1}, std::string(4, '\0')).ok());
  EXPECT_FALSE(w.add_tensor("nodims", DType::kF32, {}, "").ok());
}

TEST(GgufWriter, WriteIsAtomicAndChecksAlignmentKey) {
  const std::string dir = test::make_temp_dir();
  Writer w(64);
  w.set("general.architecture", Value("llama"));
  ASSERT_TRUE(w.add_tensor("t", DType::kF32, {3}, std::string(12, '\x01')).ok());
  ASSERT_TRUE(w.write(dir + "/a.gguf").ok());
  auto back = read_file(dir + "/a.gguf");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, w.serialize());
  auto f = File::open(dir + "/a.gguf");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->alignment(), 32u);  // no general.alignment key: readers assume 32...
  // ...so the data offset the writer chose (64-aligned) is also 32-aligned and still valid.
  w.set("general.alignment", Value(uint32_t{128}));
  auto bad = w.write(dir + "/b.gguf");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("general.alignment"), std::string::npos);
  w.set("general.alignment", Value(uint32_t{64}));
  ASSERT_TRUE(w.write(dir + "/b.gguf").ok());
  auto g = File::open(dir + "/b.gguf");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->alignment(), 64u);
}

// write_streamed gives the same bytes as write() with every tensor held in memory, asks the
// producer only for deferred tensors (in order), and leaves no file when a producer fails or
// returns the wrong size.
TEST(GgufWriter, WriteStreamedEqualsInMemoryWrite) {
  const std::string dir = test::make_temp_dir();
  const std::string a(12, '\x01'), b(18 * 2, '\x07'), c(40, '\x05');
  Writer held(32), streamed(32);
  for (Writer* w : {&held, &streamed}) w->set("general.architecture", Value("llama"));
  ASSERT_TRUE(held.add_tensor("a", DType::kF32, {3}, a).ok());
  ASSERT_TRUE(held.add_tensor("b", DType::kQ4_0, {32, 2}, b).ok());
  ASSERT_TRUE(held.add_tensor("c", DType::kF32, {10}, c).ok());
  ASSERT_TRUE(streamed.add_tensor_deferred("a", DType::kF32, {3}).ok());
  ASSERT_TRUE(streamed.add_tensor("b", DType::kQ4_0, {32, 2}, b).ok());
  ASSERT_TRUE(streamed.add_tensor_deferred("c", DType::kF32, {10}).ok());
  EXPECT_FALSE(streamed.add_tensor_deferred("c", DType::kF32, {10}).ok());
  EXPECT_FALSE(streamed.add_tensor_deferred("odd", DType::kQ4_0, {31}).ok());
  std::vector<size_t> asked;
  auto st = streamed.write_streamed(dir + "/s.gguf", [&](size_t i, std::string& out) {
    asked.push_back(i);
    out = i == 0 ? a : c;
    return ok_status();
  });
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(asked, (std::vector<size_t>{0, 2}));
  auto back = read_file(dir + "/s.gguf");
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(*back == held.serialize());
  ASSERT_TRUE(File::open(dir + "/s.gguf").ok());

  auto short_data = streamed.write_streamed(dir + "/t.gguf", [&](size_t, std::string& out) {
    out = "xy";
    return ok_status();
  });
  ASSERT_FALSE(short_data.ok());
  EXPECT_NE(short_data.error().message.find("expected"), std::string::npos);
  auto failing = streamed.write_streamed(dir + "/t.gguf", [&](size_t, std::string&) {
    return Status(make_error(ErrorKind::kIo, "producer failed"));
  });
  ASSERT_FALSE(failing.ok());
  EXPECT_FALSE(test::file_exists(dir + "/t.gguf"));
  auto leftovers = read_file(dir + "/t.gguf");
  EXPECT_FALSE(leftovers.ok());
}

// Re-serializing a shared model from its parsed contents gives the original file byte for
// byte: stories260K (converted by an older gguf-py), the llama.cpp-quantized random models and
// the zero-tensor vocab files all use the same layout as this writer.
void expect_reserialize_identical(const std::string& path) {
  SCOPED_TRACE(path);
  auto f = File::open(path);
  ASSERT_TRUE(f.ok());
  Writer w(f->alignment());
  for (const auto& m : f->metadata()) w.set(m.key, m.value);
  for (const auto& t : f->tensors()) {
    ASSERT_TRUE(w.add_tensor(t.name, t.type, t.shape, std::string_view(reinterpret_cast<const char*>(t.data), t.size_bytes)).ok());
  }
  auto original = read_file(path);
  ASSERT_TRUE(original.ok());
  const std::string again = w.serialize();
  ASSERT_EQ(again.size(), original->size());
  EXPECT_TRUE(again == *original);
}

TEST(GgufWriter, ReserializeStories260KIsByteIdentical) {
  const std::string path = test::models_dir() + "/stories260K-llama-f32.gguf";
  HEARTH_REQUIRE_FILE(path);
  expect_reserialize_identical(path);
}

TEST(GgufWriter, ReserializeOtherSharedModelsIsByteIdentical) {
  for (const std::string name : {"llama2-tiny-random-f16.gguf", "random/llama-Q4_K_M.gguf", "random/qwen2-Q8_0.gguf",
                                 "random/bert-Q4_0.gguf", "random/phi3-F32.gguf"}) {
    const std::string path = test::models_dir() + "/" + name;
    HEARTH_REQUIRE_FILE(path);
    expect_reserialize_identical(path);
  }
  const std::string vocab = test::vocab_dir() + "/ggml-vocab-llama-spm.gguf";
  HEARTH_REQUIRE_FILE(vocab);
  expect_reserialize_identical(vocab);
}

}  // namespace
}  // namespace hearth::gguf
