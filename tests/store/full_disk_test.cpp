// A full disk (a 512 KiB tmpfs): every write fails with an error that says the disk is full,
// and the store stays consistent (no half blob, no half manifest, no temporary file, the
// models already there still resolve). Mounting needs root (CAP_SYS_ADMIN): without it the test
// is skipped with the reason, except under CI=true, where it fails.
#include <gtest/gtest.h>
#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "store/model_create.h"
#include "store/store_fixture.h"

namespace hearth::store {
namespace {

namespace fs = std::filesystem;

class FullDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = hearth::test::make_temp_dir();
    mount_ = dir_ + "/tmpfs";
    fs::create_directories(mount_);
    if (::mount("tmpfs", mount_.c_str(), "tmpfs", 0, "size=512k") != 0) {
      const std::string why = std::string("cannot mount a tmpfs (") + std::strerror(errno) + "); the test needs root";
      if (hearth::test::running_in_ci()) FAIL() << why;
      GTEST_SKIP() << why;
    }
    mounted_ = true;
  }
  void TearDown() override {
    if (mounted_) ::umount2(mount_.c_str(), MNT_DETACH);
  }
  std::string dir_, mount_;
  bool mounted_ = false;
};

TEST_F(FullDisk, WritesFailCleanlyAndTheStoreStaysConsistent) {
  ModelStore store(mount_ + "/store");
  StoredModel before = test::put_model(store, "small", std::string(1000, 'w'), "{\"temperature\":0.5}");

  {  // An upload larger than the disk.
    auto w = store.begin_blob();
    ASSERT_TRUE(w.ok());
    Status st = ok_status();
    const std::string chunk(64 * 1024, 'x');
    for (int i = 0; i < 16 && st.ok(); ++i) st = w->append(chunk);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("disk holding the model store is full"), std::string::npos) << st.error().message;
  }
  EXPECT_STORE_CONSISTENT(store);

  // A GGUF from another file system is copied: that copy fails, and nothing is left.
  const std::string big = dir_ + "/big.gguf";
  std::ofstream(big) << std::string(1 << 20, 'g');
  auto imported = store.import_file(big);
  ASSERT_FALSE(imported.ok());
  EXPECT_NE(imported.error().message.find("full"), std::string::npos) << imported.error().message;
  CreateRequest r;
  r.from = big;
  auto created = create_model(store, *parse_model_name("big"), r, CreateOptions{true, "/"}, [](const std::string&) {});
  ASSERT_FALSE(created.ok());
  EXPECT_FALSE(store.resolve(*parse_model_name("big")).ok());
  EXPECT_STORE_CONSISTENT(store);

  // Fill the disk to the last byte: a manifest write fails and leaves no half manifest.
  {
    std::ofstream filler(mount_ + "/filler", std::ios::binary);
    const std::string chunk(4096, 'f');
    while (filler.write(chunk.data(), chunk.size())) {
    }
  }
  auto copy = store.copy(*parse_model_name("small"), *parse_model_name("small-copy"));
  EXPECT_FALSE(copy.ok());
  EXPECT_FALSE(store.resolve(*parse_model_name("small-copy")).ok());
  EXPECT_STORE_CONSISTENT(store);
  auto still = store.resolve(*parse_model_name("small"));
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(still->manifest_digest, before.manifest_digest);
}

}  // namespace
}  // namespace hearth::store
