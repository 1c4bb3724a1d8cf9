// The per-file value cache (the router's memory estimates): an unchanged file is read once; a
// new size or a new modification time reads it again; a failed read is not kept.
#include "util/file_keyed_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <string>

namespace hearth {
namespace {

class FileKeyedCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::path(::testing::TempDir()) / ("file_keyed_cache_" + std::to_string(::getpid()))).string();
    write("abc");
  }
  void TearDown() override { std::remove(path_.c_str()); }
  void write(const std::string& text) {
    std::ofstream(path_, std::ios::binary | std::ios::trunc) << text;
  }
  // The value is the file's size: a stale value shows as a wrong number.
  FileKeyedCache<uint64_t> cache_{[this](const std::string& p) -> Result<uint64_t> {
    ++reads_;
    std::error_code ec;
    const auto size = std::filesystem::file_size(p, ec);
    if (ec) return make_error(ErrorKind::kNotFound, "no file");
    return static_cast<uint64_t>(size);
  }};
  std::string path_;
  std::atomic<int> reads_{0};
};

TEST_F(FileKeyedCacheTest, AnUnchangedFileIsReadOnce) {
  EXPECT_EQ(*cache_.get(path_), 3u);
  EXPECT_EQ(*cache_.get(path_), 3u);
  EXPECT_EQ(*cache_.get(path_), 3u);
  EXPECT_EQ(reads_.load(), 1);
}

TEST_F(FileKeyedCacheTest, ANewSizeOrModificationTimeReadsAgain) {
  EXPECT_EQ(*cache_.get(path_), 3u);
  write("abcdef");
  EXPECT_EQ(*cache_.get(path_), 6u);
  EXPECT_EQ(reads_.load(), 2);
  // Same size, another modification time (a file replaced by one of the same length).
  const auto t = std::filesystem::last_write_time(path_);
  std::filesystem::last_write_time(path_, t - std::chrono::seconds(10));
  EXPECT_EQ(*cache_.get(path_), 6u);
  EXPECT_EQ(reads_.load(), 3);
  EXPECT_EQ(*cache_.get(path_), 6u);
  EXPECT_EQ(reads_.load(), 3);
}

TEST_F(FileKeyedCacheTest, FailuresAreNotKept) {
  const std::string missing = path_ + ".missing";
  EXPECT_FALSE(cache_.get(missing).ok());
  EXPECT_FALSE(cache_.get(missing).ok());
  EXPECT_EQ(reads_.load(), 2);
  std::ofstream(missing) << "x";
  EXPECT_EQ(*cache_.get(missing), 1u);
  std::remove(missing.c_str());
}

}  // namespace
}  // namespace hearth
