// Tests for mmap, atomic writes and sha256 over files.
#include <gtest/gtest.h>

#include "common/test_paths.h"
#include "util/file_io.h"
#include "util/mapped_file.h"
#include "util/sha256.h"

namespace hearth {
namespace {

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(FileIo, AtomicWriteThenMapAndHash) {
  std::string dir = test::make_temp_dir();
  std::string path = dir + "/x.bin";
  ASSERT_TRUE(write_file_atomic(path, "abc").ok());
  ASSERT_TRUE(write_file_atomic(path, "abc").ok());  // replacing works too
  auto m = MappedFile::open(path);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  ASSERT_EQ(m->size(), 3u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m->data()), 3), "abc");
  auto h = sha256_file_hex(path);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(*h, sha256_hex("abc"));
  auto text = read_file(path);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "abc");
}

TEST(FileIo, MissingFilesAreNotFoundErrors) {
  auto m = MappedFile::open("/nonexistent/hearth/file");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().kind, ErrorKind::kNotFound);
  EXPECT_NE(m.error().message.find("/nonexistent/hearth/file"), std::string::npos);
  EXPECT_FALSE(sha256_file_hex("/nonexistent/x").ok());
  EXPECT_FALSE(write_file_atomic("/nonexistent/dir/x", "a").ok());
  auto dir = MappedFile::open("/tmp");
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.error().kind, ErrorKind::kInvalidArgument);
}

TEST(Sha256, SharedModelMatchesReadme) {
  std::string path = test::models_dir() + "/stories260K-llama-f32.gguf";
  HEARTH_REQUIRE_FILE(path);
  auto h = sha256_file_hex(path);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(*h, "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d");
}

}  // namespace
}  // namespace hearth
