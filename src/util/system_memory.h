// How much memory this machine can still give a new model: MemAvailable from /proc/meminfo
// (free memory plus the page cache and reclaimable slabs the kernel can drop), the figure the
// start-up memory check compares its estimate with. The parser is separate so tests feed text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/result.h"

namespace hearth {

// MemAvailable in bytes from the text of /proc/meminfo ("MemAvailable:  123456 kB"); nullopt
// when the line is missing or malformed.
std::optional<uint64_t> parse_meminfo_available(const std::string& meminfo_text);
// The same from this machine's /proc/meminfo; nullopt where there is none (not Linux).
std::optional<uint64_t> memory_available_bytes();
// "45.0 GiB", "512.0 MiB", "12 KiB": one decimal for MiB and above.
std::string format_bytes(uint64_t bytes);

}  // namespace hearth
