// The CLI's text shapes: sizes, durations, relative times, the --verbose block, progress bars
// and the progress view in terminal and pipe mode, and the list/ps/show tables.
#include <gtest/gtest.h>

#include "cli/human_format.h"
#include "cli/progress_view.h"
#include "cli/show_format.h"
#include "cli/word_wrap.h"

namespace hearth::cli {
namespace {

using Json = nlohmann::json;

TEST(HumanFormat, BytesInDecimalUnits) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(999), "999 B");
  EXPECT_EQ(format_bytes(1500), "1.5 KB");
  EXPECT_EQ(format_bytes(12000000), "12 MB");
  EXPECT_EQ(format_bytes(4700000000ULL), "4.7 GB");
  EXPECT_EQ(format_bytes(4790000000ULL), "4.7 GB");  // truncated, never rounded up past the real size
  EXPECT_EQ(format_bytes(123456789012ULL), "123 GB");
}

TEST(HumanFormat, GoDurations) {
  EXPECT_EQ(format_go_duration(0), "0s");
  EXPECT_EQ(format_go_duration(850), "850ns");
  EXPECT_EQ(format_go_duration(1500), "1.5µs");
  EXPECT_EQ(format_go_duration(12345000), "12.345ms");
  EXPECT_EQ(format_go_duration(1234567891), "1.234567891s");
  EXPECT_EQ(format_go_duration(62500000000LL), "1m2.5s");
  EXPECT_EQ(format_go_duration(7200000000000LL), "2h0m0s");
  EXPECT_EQ(format_go_duration(-1500000), "-1.5ms");
  EXPECT_EQ(format_eta(74.4), "1m14s");
  EXPECT_EQ(format_eta(4), "4s");
}

TEST(HumanFormat, RelativeTimes) {
  EXPECT_EQ(format_time_ago(0.5), "Less than a second ago");
  EXPECT_EQ(format_time_ago(3), "3 seconds ago");
  EXPECT_EQ(format_time_ago(65), "About a minute ago");
  EXPECT_EQ(format_time_ago(5 * 60), "5 minutes ago");
  EXPECT_EQ(format_time_ago(3 * 3600), "3 hours ago");
  EXPECT_EQ(format_time_ago(3 * 86400), "3 days ago");
  EXPECT_EQ(format_time_ago(21 * 86400), "3 weeks ago");
  EXPECT_EQ(format_time_ago(800 * 86400), "2 years ago");
  EXPECT_EQ(format_time_from_now(4 * 60), "4 minutes from now");
  EXPECT_EQ(format_time_from_now(1e10), "Forever");
  EXPECT_DOUBLE_EQ(parse_rfc3339("1970-01-01T00:01:00Z"), 60);
  EXPECT_DOUBLE_EQ(parse_rfc3339("1970-01-01T02:00:30.5+02:00"), 30.5);
  EXPECT_EQ(parse_rfc3339("yesterday"), -1);
}

TEST(HumanFormat, VerboseBlockAsOllamaPrintsIt) {
  ChatStats s;
  s.total_duration_ns = 1500000000;
  s.load_duration_ns = 2000000;
  s.prompt_eval_count = 26;
  s.prompt_eval_duration_ns = 130000000;
  s.eval_count = 300;
  s.eval_duration_ns = 1200000000;
  EXPECT_EQ(format_metrics(s),
            "total duration:       1.5s\n"
            "load duration:        2ms\n"
            "prompt eval count:    26 token(s)\n"
            "prompt eval duration: 130ms\n"
            "prompt eval rate:     200.00 tokens/s\n"
            "eval count:           300 token(s)\n"
            "eval duration:        1.2s\n"
            "eval rate:            250.00 tokens/s\n");
  EXPECT_EQ(format_metrics(ChatStats{}), "");
}

TEST(ProgressBar, UnfinishedShowsSizesSpeedAndTimeLeft) {
  const std::string line = format_progress_bar("pulling 6a0746a1ec1a", 2100000000ULL, 4700000000ULL, 35000000, 100);
  EXPECT_EQ(line.rfind("pulling 6a0746a1ec1a:  44% ▕", 0), 0u) << line;
  EXPECT_NE(line.find("▏ 2.1 GB/4.7 GB  35 MB/s  1m14s"), std::string::npos) << line;
  EXPECT_EQ(display_width(line), 100);  // the bar takes the room that is left
  const std::string narrow = format_progress_bar("pulling 6a0746a1ec1a", 1, 1000, 0, 20);
  EXPECT_NE(narrow.find("▕          ▏"), std::string::npos) << narrow;  // never under 10 cells; no speed yet
  EXPECT_EQ(narrow.find("/s"), std::string::npos);
}

TEST(ProgressBar, FinishedShowsTheSizeOnly) {
  const std::string line = format_progress_bar("pulling abc", 4700000000ULL, 4700000000ULL, 1e6, 60);
  EXPECT_EQ(line.rfind("pulling abc: 100% ▕██", 0), 0u) << line;
  EXPECT_EQ(line.substr(line.size() - std::string("▏ 4.7 GB").size()), "▏ 4.7 GB");
}

TEST(ProgressView, PipeModeWritesEachLineOnce) {
  ProgressView v(false, 80);
  std::string out;
  out += v.update(progress_event_from_json(Json{{"status", "pulling manifest"}}), 0);
  out += v.update(progress_event_from_json(Json{{"status", "pulling manifest"}}), 0.1);
  out += v.update(progress_event_from_json(Json{{"status", "pulling aaa"}, {"digest", "sha256:aaa"}, {"total", 1000}, {"completed", 10}}), 0.2);
  EXPECT_EQ(out, "pulling manifest\n");  // a bar waits for its layer to finish
  out += v.update(progress_event_from_json(Json{{"status", "pulling aaa"}, {"digest", "sha256:aaa"}, {"total", 1000}, {"completed", 1000}}), 1.0);
  out += v.update(progress_event_from_json(Json{{"status", "success"}}), 1.1);
  out += v.finish(1.2);
  EXPECT_NE(out.find("pulling aaa: 100% "), std::string::npos) << out;
  EXPECT_EQ(out.substr(out.size() - 8), "success\n");
  EXPECT_EQ(out.find("pulling aaa"), out.rfind("pulling aaa"));
}

TEST(ProgressView, TerminalModeRedrawsInPlace) {
  ProgressView v(true, 80);
  std::string first = v.update(ProgressEvent{"pulling manifest", "", 0, 0}, 0);
  EXPECT_EQ(first, "\rpulling manifest\x1b[K\n");
  std::string second = v.update(ProgressEvent{"pulling bbb", "sha256:bbb", 2000000, 0}, 0.01);
  EXPECT_EQ(second.rfind("\x1b[1A", 0), 0u);  // back up over the one line drawn
  EXPECT_EQ(v.update(ProgressEvent{"pulling bbb", "sha256:bbb", 2000000, 5}, 0.02), "");  // throttled
  std::string later = v.update(ProgressEvent{"pulling bbb", "sha256:bbb", 2000000, 1000000}, 1.01);
  EXPECT_EQ(later.rfind("\x1b[2A", 0), 0u);
  EXPECT_NE(later.find(" 50% "), std::string::npos) << later;
  EXPECT_NE(later.find("1.0 MB/s"), std::string::npos) << later;  // 1 MB over the second since first seen
}

TEST(ShowFormat, SummaryListsModelCapabilitiesAndParameters) {
  Json show = {{"details", {{"family", "llama"}, {"parameter_size", "8.0B"}, {"quantization_level", "Q4_K_M"}}},
               {"model_info", {{"general.architecture", "llama"}, {"llama.context_length", 131072}, {"llama.embedding_length", 4096}}},
               {"capabilities", {"completion", "tools"}},
               {"parameters", "stop                           \"<|eot_id|>\"\ntemperature 0.6"},
               {"license", "LICENSE LINE 1\nline 2\nline 3"}};
  const std::string text = format_show_summary(show);
  EXPECT_EQ(text,
            "  Model\n"
            "    architecture        llama\n"
            "    parameters          8.0B\n"
            "    context length      131072\n"
            "    embedding length    4096\n"
            "    quantization        Q4_K_M\n\n"
            "  Capabilities\n    completion\n    tools\n\n"
            "  Parameters\n    stop           \"<|eot_id|>\"\n    temperature    0.6\n\n"
            "  License\n    LICENSE LINE 1\n    line 2\n    ...\n\n");
}

TEST(ShowFormat, ListAndPsTables) {
  Json tags = {{"models", {{{"name", "qwen3:latest"}, {"digest", "sha256:0123456789abcdef"}, {"size", 5200000000ULL},
                            {"modified_at", "1970-01-01T00:00:00Z"}}}}};
  EXPECT_EQ(format_model_list(tags, 3 * 86400),
            "NAME            ID              SIZE      MODIFIED\n"
            "qwen3:latest    0123456789ab    5.2 GB    3 days ago\n");
  Json ps = {{"models", {{{"name", "a:latest"}, {"digest", "ffffffffffffffff"}, {"size", 2000}, {"size_vram", 500},
                          {"context_length", 4096}, {"expires_at", "1970-01-01T00:05:00Z"}}}}};
  EXPECT_EQ(format_running_list(ps, 0),
            "NAME        ID              SIZE      PROCESSOR          CONTEXT    UNTIL\n"
            "a:latest    ffffffffffff    2.0 KB    75%/25% CPU/GPU    4096       5 minutes from now\n");
}

}  // namespace
}  // namespace hearth::cli
