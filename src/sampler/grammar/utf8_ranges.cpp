// Code point ranges → UTF-8 byte patterns (see utf8_ranges.h). A range whose code points all
// have the same encoded length and differ only in whole trailing 6-bit groups is one pattern;
// any other range is split at encoded-length boundaries and at 6-bit group boundaries until it
// is.
#include "sampler/grammar/utf8_ranges.h"

#include <algorithm>

namespace hearth::sampler {
namespace {

constexpr char32_t kSurrogateLo = 0xD800;
constexpr char32_t kSurrogateHi = 0xDFFF;

int encoded_length(char32_t cp) {
  if (cp < 0x80) return 1;
  if (cp < 0x800) return 2;
  if (cp < 0x10000) return 3;
  return 4;
}

void encode(char32_t cp, int n, uint8_t* out) {
  switch (n) {
    case 1: out[0] = static_cast<uint8_t>(cp); break;
    case 2:
      out[0] = static_cast<uint8_t>(0xC0 | (cp >> 6));
      out[1] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
      break;
    case 3:
      out[0] = static_cast<uint8_t>(0xE0 | (cp >> 12));
      out[1] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
      out[2] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
      break;
    default:
      out[0] = static_cast<uint8_t>(0xF0 | (cp >> 18));
      out[1] = static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3F));
      out[2] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
      out[3] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
      break;
  }
}

// [lo, hi] with lo <= hi, both of the same encoded length.
void split_same_length(char32_t lo, char32_t hi, int n, std::vector<Utf8Pattern>& out) {
  for (int i = 1; i < n; ++i) {
    const char32_t m = (char32_t{1} << (6 * i)) - 1;  // the low i continuation groups
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split_same_length(lo, lo | m, n, out);
        split_same_length((lo | m) + 1, hi, n, out);
        return;
      }
      if ((hi & m) != m) {
        split_same_length(lo, (hi & ~m) - 1, n, out);
        split_same_length(hi & ~m, hi, n, out);
        return;
      }
    }
  }
  Utf8Pattern p;
  p.length = static_cast<uint8_t>(n);
  encode(lo, n, p.lo.data());
  encode(hi, n, p.hi.data());
  out.push_back(p);
}

void split_range(char32_t lo, char32_t hi, std::vector<Utf8Pattern>& out) {
  static constexpr char32_t kLengthEnds[] = {0x7F, 0x7FF, 0xFFFF, kMaxCodePoint};
  for (char32_t end : kLengthEnds) {
    if (lo > hi) return;
    if (lo <= end) {
      const char32_t top = std::min(hi, end);
      split_same_length(lo, top, encoded_length(lo), out);
      lo = top + 1;
    }
  }
}

}  // namespace

std::vector<CodePointRange> normalize_ranges(std::vector<CodePointRange> ranges) {
  std::vector<CodePointRange> pieces;
  for (CodePointRange r : ranges) {
    if (r.lo > r.hi || r.lo > kMaxCodePoint) continue;
    r.hi = std::min(r.hi, kMaxCodePoint);
    if (r.hi < kSurrogateLo || r.lo > kSurrogateHi) {
      pieces.push_back(r);
      continue;
    }
    if (r.lo < kSurrogateLo) pieces.push_back({r.lo, kSurrogateLo - 1});
    if (r.hi > kSurrogateHi) pieces.push_back({kSurrogateHi + 1, r.hi});
  }
  std::sort(pieces.begin(), pieces.end(), [](const CodePointRange& a, const CodePointRange& b) { return a.lo < b.lo; });
  std::vector<CodePointRange> merged;
  for (const CodePointRange& r : pieces) {
    if (!merged.empty() && r.lo <= merged.back().hi + 1) {
      merged.back().hi = std::max(merged.back().hi, r.hi);
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

std::vector<CodePointRange> complement_ranges(const std::vector<CodePointRange>& ranges) {
  std::vector<CodePointRange> out;
  char32_t next = 0;
  for (const CodePointRange& r : ranges) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
  return normalize_ranges(std::move(out));
}

std::vector<Utf8Pattern> utf8_patterns(const std::vector<CodePointRange>& ranges) {
  std::vector<Utf8Pattern> out;
  for (const CodePointRange& r : ranges) split_range(r.lo, r.hi, out);
  return out;
}

void append_utf8(char32_t cp, std::vector<uint8_t>& out) {
  uint8_t buf[4];
  const int n = encoded_length(cp);
  encode(cp, n, buf);
  out.insert(out.end(), buf, buf + n);
}

}  // namespace hearth::sampler
