// Numbers as people read them in the CLI's tables and progress lines, in ollama's shapes:
// sizes in decimal units ("4.7 GB"), Go-style durations ("1.234567s", "12.5ms"), relative
// times ("2 weeks ago", "4 minutes from now"), and the --verbose timing summary.
#pragma once

#include <cstdint>
#include <string>

#include "cli/ollama_client.h"

namespace hearth::cli {

// 999 → "999 B", 1500 → "1.5 KB", 4700000000 → "4.7 GB", 12000000 → "12 MB" (powers of 1000).
std::string format_bytes(uint64_t bytes);
// Go's time.Duration.String(): "0s", "850ns", "1.5µs", "12.345ms", "1.234567891s", "1m2.5s", "2h0m0s".
std::string format_go_duration(int64_t ns);
// Whole seconds for an ETA: "4s", "1m14s", "2h3m4s".
std::string format_eta(double seconds);
// "Less than a second ago", "3 seconds ago", "About a minute ago", "5 minutes ago",
// "About an hour ago", "3 hours ago", "2 days ago", "3 weeks ago", "4 months ago", "2 years ago".
std::string format_time_ago(double seconds);
// The same words for a time ahead: "4 minutes from now"; "Forever" for more than 100 years.
std::string format_time_from_now(double seconds);
// ollama's --verbose block: total duration, load duration, prompt eval count/duration/rate,
// eval count/duration/rate, one per line; zero values are left out as ollama does.
std::string format_metrics(const ChatStats& stats);
// Seconds since the Unix epoch of an RFC 3339 time ("2024-05-01T10:20:30.123+02:00"); -1 when
// it cannot be read.
double parse_rfc3339(const std::string& text);

}  // namespace hearth::cli
