// Sizes written by people ("512MiB", "2G", "1.5 GiB", "0", "4096"): one parser for every flag,
// variable and command that takes a memory size, so they all accept the same spellings and
// give the same error.
#pragma once

#include <cstdint>
#include <string_view>

#include "util/result.h"

namespace hearth {

// Bytes in `text`: a non-negative number (integer or decimal) and an optional unit, with or
// without a space between. Units are powers of 1024 whatever the spelling (B; K, KB, KiB; M,
// MB, MiB; G, GB, GiB; T, TB, TiB; case-insensitive), since memory is counted in pages. A
// fraction is rounded down to a whole byte. kInvalidArgument names the text and the accepted
// forms; a size beyond 2^64-1 bytes is kOutOfRange.
Result<uint64_t> parse_byte_size(std::string_view text);

}  // namespace hearth
