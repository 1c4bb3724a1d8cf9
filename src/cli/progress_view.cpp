// Progress bars for NDJSON progress streams (see progress_view.h).
#include "cli/progress_view.h"

#include <algorithm>

#include "cli/human_format.h"
#include "cli/word_wrap.h"

namespace hearth::cli {
namespace {

constexpr double kRedrawSeconds = 0.1;

uint64_t number_field(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return 0;
  if (it->is_number_float()) return it->get<double>() > 0 ? static_cast<uint64_t>(it->get<double>()) : 0;
  return it->is_number_unsigned() ? it->get<uint64_t>() : static_cast<uint64_t>(std::max<int64_t>(0, it->get<int64_t>()));
}

}  // namespace

ProgressEvent progress_event_from_json(const nlohmann::json& j) {
  ProgressEvent e;
  if (j.contains("status") && j["status"].is_string()) e.status = j["status"].get<std::string>();
  if (j.contains("digest") && j["digest"].is_string()) e.digest = j["digest"].get<std::string>();
  e.total = number_field(j, "total");
  e.completed = number_field(j, "completed");
  return e;
}

std::string format_progress_bar(const std::string& label, uint64_t completed, uint64_t total, double bytes_per_second, int width) {
  completed = std::min(completed, total);
  const int percent = total == 0 ? 100 : static_cast<int>(completed * 100 / total);
  std::string left = label + ": ";
  std::string pct = std::to_string(percent) + "%";
  left += std::string(pct.size() < 4 ? 4 - pct.size() : 0, ' ') + pct + " ";
  std::string right;
  if (completed < total) {
    right = " " + format_bytes(completed) + "/" + format_bytes(total);
    if (bytes_per_second > 0) {
      right += "  " + format_bytes(static_cast<uint64_t>(bytes_per_second)) + "/s";
      right += "  " + format_eta(static_cast<double>(total - completed) / bytes_per_second);
    }
  } else {
    right = " " + format_bytes(total);
  }
  const int room = width - display_width(left) - display_width(right) - 2;
  const int bar_cols = std::clamp(room, 10, 50);
  const int filled = total == 0 ? bar_cols : static_cast<int>(static_cast<double>(completed) / static_cast<double>(total) * bar_cols);
  std::string bar = "▕";
  for (int i = 0; i < bar_cols; ++i) bar += i < filled ? "█" : " ";
  bar += "▏";
  return left + bar + right;
}

std::string ProgressView::line_text(const Line& l) const {
  if (!l.bar) return l.status;
  double rate = 0;
  const double elapsed = l.last_time - l.first_time;
  if (elapsed > 0.2 && l.completed > l.first_completed) rate = static_cast<double>(l.completed - l.first_completed) / elapsed;
  return format_progress_bar(l.status, l.completed, l.total, rate, width_);
}

std::string ProgressView::redraw(double now) {
  std::string out;
  if (drawn_ > 0) out += "\x1b[" + std::to_string(drawn_) + "A";
  for (const auto& l : lines_) out += "\r" + line_text(l) + "\x1b[K\n";
  drawn_ = static_cast<int>(lines_.size());
  last_draw_ = now;
  return out;
}

std::string ProgressView::update(const ProgressEvent& e, double now) {
  const bool bar = !e.digest.empty() && e.total > 0;
  const std::string key = bar ? e.digest : e.status;
  if (key.empty()) return "";
  auto it = std::find_if(lines_.begin(), lines_.end(), [&](const Line& l) { return l.key == key && l.bar == bar; });
  bool added = false;
  if (it == lines_.end()) {
    Line l;
    l.key = key;
    l.status = e.status;
    l.bar = bar;
    l.first_time = now;
    l.first_completed = e.completed;
    lines_.push_back(l);
    it = lines_.end() - 1;
    added = true;
  }
  it->total = e.total;
  it->completed = std::max(it->completed, e.completed);
  it->last_time = now;
  if (terminal_) {
    if (added || now - last_draw_ >= kRedrawSeconds || (bar && it->completed >= it->total)) return redraw(now);
    return "";
  }
  if (it->written) return "";
  if (!bar || it->completed >= it->total) {
    it->written = true;
    return line_text(*it) + "\n";
  }
  return "";
}

std::string ProgressView::finish(double now) {
  if (terminal_) return lines_.empty() ? "" : redraw(now);
  std::string out;
  for (auto& l : lines_) {
    if (!l.written) out += line_text(l) + "\n";
    l.written = true;
  }
  return out;
}

}  // namespace hearth::cli
