// A value computed from a file (the router's memory estimate from a model's GGUF header), kept
// while the file's size and modification time stay the same: asking again for an unchanged file
// reads nothing; a file rewritten or replaced is read again. Errors are not kept (the next ask
// tries again). Thread-safe; the reader runs outside the lock.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "util/result.h"

namespace hearth {

template <class T>
class FileKeyedCache {
 public:
  using Reader = std::function<Result<T>(const std::string& path)>;
  explicit FileKeyedCache(Reader reader) : reader_(std::move(reader)) {}

  Result<T> get(const std::string& path) {
    std::error_code size_ec, time_ec;
    const auto size = std::filesystem::file_size(path, size_ec);
    const auto mtime = std::filesystem::last_write_time(path, time_ec);
    const bool known = !size_ec && !time_ec;
    const Identity id{size, known ? mtime.time_since_epoch().count() : 0};
    if (known) {
      std::lock_guard lock(mu_);
      if (auto it = values_.find(path); it != values_.end() && it->second.first == id) return it->second.second;
    }
    Result<T> value = reader_(path);
    if (value.ok() && known) {
      std::lock_guard lock(mu_);
      values_.insert_or_assign(path, std::make_pair(id, *value));
    }
    return value;
  }

 private:
  using Identity = std::pair<uintmax_t, long long>;  // size, mtime ticks
  Reader reader_;
  std::mutex mu_;
  std::map<std::string, std::pair<Identity, T>> values_;
};

}  // namespace hearth
