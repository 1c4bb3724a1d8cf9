// Progress of pull, push and create, drawn from the server's NDJSON progress events
// ({"status", "digest", "total", "completed"}) the way ollama's CLI draws them: one line per
// status ("pulling manifest", "verifying sha256 digest", "success") and one bar per layer,
//   pulling 6a0746a1ec1a:  45% ▕███████         ▏ 2.1 GB/4.7 GB   35 MB/s  1m14s
// On a terminal the block is redrawn in place (at most ten times a second); into a pipe or
// file each status line is written once and each bar once, when its layer completes.
// Pure text in, text out: the caller writes what update() returns, so tests need no terminal.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hearth::cli {

struct ProgressEvent {
  std::string status;
  std::string digest;  // set for a layer's bar
  uint64_t total = 0;
  uint64_t completed = 0;
};
ProgressEvent progress_event_from_json(const nlohmann::json& chunk);

// One bar line at `width` columns: label, percent, bar, sizes; while unfinished also the
// speed and time left (left out while the speed is not known, bytes_per_second <= 0).
std::string format_progress_bar(const std::string& label, uint64_t completed, uint64_t total, double bytes_per_second, int width);

class ProgressView {
 public:
  ProgressView(bool terminal, int width) : terminal_(terminal), width_(width) {}

  // Takes one event received at `now` (seconds, any fixed origin); returns what to write.
  std::string update(const ProgressEvent& event, double now);
  // The last frame (a terminal) or the bars not yet written (a pipe).
  std::string finish(double now);

 private:
  struct Line {
    std::string key;     // digest for a bar, status text otherwise
    std::string status;  // the text (a bar's label)
    bool bar = false;
    uint64_t total = 0;
    uint64_t completed = 0;
    double first_time = 0;  // when this session first saw the layer, and how far it was then
    uint64_t first_completed = 0;
    double last_time = 0;
    bool written = false;  // pipe mode: already written in its final form
  };
  std::string line_text(const Line& line) const;
  std::string redraw(double now);

  bool terminal_;
  int width_;
  std::vector<Line> lines_;
  int drawn_ = 0;          // terminal lines drawn by the last frame
  double last_draw_ = -1;
};

}  // namespace hearth::cli
