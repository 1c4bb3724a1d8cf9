// Parses human memory sizes; see byte_size.h.
#include "util/byte_size.h"

#include <cctype>
#include <cmath>
#include <string>

namespace hearth {
namespace {

Error size_error(std::string_view text) {
  std::string message = "'";
  message += text;
  message += "' is not a size: write a number and an optional unit, such as 4096, 512MiB, 2G or 1.5GiB";
  return make_error(ErrorKind::kInvalidArgument, std::move(message));
}

// log2 of the unit's multiplier, or -1 when `unit` (lower-cased) is not a unit.
int unit_shift(const std::string& unit) {
  if (unit.empty() || unit == "b") return 0;
  static const char kPrefixes[] = "kmgt";
  for (int i = 0; i < 4; ++i) {
    const char p = kPrefixes[i];
    if (unit == std::string(1, p) || unit == std::string(1, p) + "b" || unit == std::string(1, p) + "ib") return 10 * (i + 1);
  }
  return -1;
}

}  // namespace

Result<uint64_t> parse_byte_size(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  const size_t number_start = i;
  uint64_t whole = 0;
  bool overflow = false, any_digit = false;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    const uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (whole > (UINT64_MAX - digit) / 10) overflow = true;
    if (!overflow) whole = whole * 10 + digit;
    any_digit = true;
    ++i;
  }
  double fraction = 0.0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    double scale = 0.1;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      fraction += scale * (text[i] - '0');
      scale /= 10;
      any_digit = true;
      ++i;
    }
  }
  if (!any_digit || number_start == i) return size_error(text);
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  std::string unit;
  while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) {
    unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
    ++i;
  }
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  const int shift = unit_shift(unit);
  if (shift < 0 || i != text.size()) return size_error(text);
  std::string too_big_message = "size '";
  too_big_message += text;
  too_big_message += "' is larger than 2^64 bytes";
  const Error too_big = make_error(ErrorKind::kOutOfRange, too_big_message);
  if (overflow || (shift > 0 && whole > (UINT64_MAX >> shift))) return too_big;
  const uint64_t scaled = whole << shift;
  const double extra = std::floor(fraction * std::ldexp(1.0, shift));
  if (extra > 0 && extra >= static_cast<double>(UINT64_MAX - scaled)) return too_big;
  return scaled + static_cast<uint64_t>(extra);
}

}  // namespace hearth
