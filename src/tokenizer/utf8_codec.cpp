// Implementation of the tolerant UTF-8 codec used by every tokenizer path.
#include "tokenizer/utf8_codec.h"

namespace hearth::utf8 {

uint32_t decode_one(std::string_view text, size_t pos, size_t* consumed) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte(pos);
  *consumed = 1;
  if (lead < 0x80) return lead;
  size_t len = 0;
  uint32_t cp = 0;
  uint32_t min = 0;
  if ((lead & 0xE0) == 0xC0) {
    len = 2, cp = lead & 0x1F, min = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    len = 3, cp = lead & 0x0F, min = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    len = 4, cp = lead & 0x07, min = 0x10000;
  } else {
    return kReplacementChar;
  }
  if (pos + len > text.size()) return kReplacementChar;
  for (size_t i = 1; i < len; ++i) {
    const uint8_t c = byte(pos + i);
    if ((c & 0xC0) != 0x80) return kReplacementChar;
    cp = (cp << 6) | (c & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return kReplacementChar;
  *consumed = len;
  return cp;
}

void append(std::string& out, uint32_t cp) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = kReplacementChar;
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::vector<uint32_t> decode_all(std::string_view text) {
  std::vector<uint32_t> cps;
  cps.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t n = 1;
    cps.push_back(decode_one(text, pos, &n));
    pos += n;
  }
  return cps;
}

std::string sanitize(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const uint8_t lead = static_cast<uint8_t>(text[pos]);
    if (lead < 0x80) {
      out.push_back(static_cast<char>(lead));
      ++pos;
      continue;
    }
    size_t n = 1;
    const uint32_t cp = decode_one(text, pos, &n);
    if (cp == kReplacementChar && n == 1) {
      append(out, kReplacementChar);
    } else {
      out.append(text.substr(pos, n));
    }
    pos += n;
  }
  return out;
}

size_t incomplete_tail_length(std::string_view text) {
  // Look back at most 3 bytes for a lead byte whose sequence runs past the end.
  const size_t n = text.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const uint8_t c = static_cast<uint8_t>(text[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    size_t need = 0;
    if ((c & 0xE0) == 0xC0) need = 2;
    else if ((c & 0xF0) == 0xE0) need = 3;
    else if ((c & 0xF8) == 0xF0) need = 4;
    return need > back ? back : 0;
  }
  return 0;
}

}  // namespace hearth::utf8
