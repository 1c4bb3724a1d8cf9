// Whole-file reads and atomic writes (write to a temporary file in the same directory, fsync,
// rename), so that a crash never leaves a half-written file where a complete one was expected.
#pragma once

#include <string>
#include <string_view>

#include "util/result.h"

namespace hearth {

Result<std::string> read_file(const std::string& path);
Status write_file_atomic(const std::string& path, std::string_view contents);

}  // namespace hearth
