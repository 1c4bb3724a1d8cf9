// Stop strings and UTF-8 hold-back for streamed generation (see text_streamer.h).
#include "engine/text_streamer.h"

#include <algorithm>

namespace hearth::engine {

size_t utf8_complete_prefix(std::string_view text) {
  // Walk back over at most 3 continuation bytes to the last lead byte.
  size_t n = text.size();
  for (size_t back = 1; back <= 4 && back <= n; ++back) {
    unsigned char c = static_cast<unsigned char>(text[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte
    size_t need = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    return back >= need ? n : n - back;
  }
  return n;
}

TextStreamer::TextStreamer(std::vector<std::string> stops) {
  for (auto& s : stops) {
    if (!s.empty()) stops_.push_back(std::move(s));
  }
}

// Bytes at the end of the pending text that could still grow into one of the stop strings.
size_t TextStreamer::held_for_stop() const {
  const std::string_view text = pending_;
  size_t held = 0;
  for (const auto& s : stops_) {
    for (size_t len = std::min(s.size() - 1, text.size()); len > held; --len) {
      if (text.substr(text.size() - len) == std::string_view(s).substr(0, len)) {
        held = len;
        break;
      }
    }
  }
  return held;
}

std::string TextStreamer::push(std::string_view piece) {
  if (stopped_) return {};
  pending_ += piece;
  // Bytes that could begin a stop string are never emitted (held_for_stop), so every match
  // lies inside `pending_`: search there only, not the whole text.
  size_t cut = std::string::npos;
  for (const auto& s : stops_) {
    const size_t at = pending_.find(s);
    if (at < cut) {
      cut = at;
      stop_word_ = s;
    }
  }
  if (cut != std::string::npos) {
    std::string emit = pending_.substr(0, cut);
    pending_.clear();
    stopped_ = true;
    return emit;
  }
  const size_t safe = std::min(utf8_complete_prefix(pending_), pending_.size() - held_for_stop());
  std::string emit = pending_.substr(0, safe);
  pending_.erase(0, safe);
  return emit;
}

std::string TextStreamer::flush() {
  std::string rest;
  if (!stopped_) rest.swap(pending_);
  pending_.clear();
  return rest;
}

}  // namespace hearth::engine
