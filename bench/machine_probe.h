// Facts about the machine a benchmark runs on, measured in the same run: memcpy and streaming-
// read bandwidth with a given thread count (the ceiling for memory-bound decoding), a smaller read
// probe that can be taken beside each measurement (the host's bandwidth switches between regimes
// within seconds), the CPU's name, and the process's current and peak resident memory
// (resettable, so each model's peak can be measured in one process).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace hearth::bench {

struct Bandwidth {
  double memcpy_gbs = 0;  // bytes copied per second (each byte read once and written once)
  double read_gbs = 0;    // bytes read per second by `threads` threads streaming a large buffer
};

namespace detail {
inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
// Sums a buffer with 8 independent accumulators (vectorized by the compiler), so the loop is
// limited by memory, not by a dependency chain. Built for the widest vectors the CPU has (the
// baseline SSE2 build tops out near 19-20 GB/s on a machine whose AVX-512 loads reach 23-31, so
// a decoder could show more than 100% of the "ceiling").
__attribute__((target_clones("avx512f", "avx2", "default"))) inline uint64_t stream_sum(const uint64_t* p, size_t n) {
  uint64_t s[8] = {};
  for (size_t i = 0; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) s[k] += p[i + static_cast<size_t>(k)];
  }
  return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

// The shortest of `reps` runs of body(thread, begin, end) over `words` words split into one slice
// per thread, each thread a fresh std::thread, in seconds.
template <typename Body>
double best_split_seconds(int threads, size_t words, int reps, Body&& body) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      const size_t begin = words * static_cast<size_t>(t) / static_cast<size_t>(threads);
      const size_t end = words * static_cast<size_t>(t + 1) / static_cast<size_t>(threads);
      pool.emplace_back([&, t, begin, end] { body(static_cast<size_t>(t), begin, end); });
    }
    for (auto& th : pool) th.join();
    best = std::min(best, seconds_since(start));
  }
  return best;
}

// Streaming-read GB/s of `threads` threads over src (best of reps passes).
inline double read_gbs(const std::vector<uint64_t>& src, int threads, int reps) {
  std::vector<uint64_t> sink(static_cast<size_t>(threads));
  const double s = best_split_seconds(threads, src.size(), reps, [&](size_t t, size_t begin, size_t end) {
    sink[t] = stream_sum(src.data() + begin, end - begin);
  });
  volatile uint64_t keep = sink[0];
  (void)keep;
  return static_cast<double>(src.size() * sizeof(uint64_t)) / s / 1e9;
}

inline std::vector<uint64_t> filled_words(size_t bytes) {
  std::vector<uint64_t> v(bytes / sizeof(uint64_t));
  for (size_t i = 0; i < v.size(); ++i) v[i] = i * 0x9E3779B97F4A7C15ull;
  return v;
}
}  // namespace detail

// Best of `reps` passes over `bytes` (much larger than the caches), with `threads` threads
// each copying / reading its own slice.
inline Bandwidth measure_bandwidth(int threads, size_t bytes = size_t{1} << 30, int reps = 10) {
  threads = std::max(threads, 1);
  const std::vector<uint64_t> src = detail::filled_words(bytes);
  std::vector<uint64_t> dst(src.size());
  std::memset(dst.data(), 1, dst.size() * sizeof(uint64_t));
  Bandwidth b;
  b.memcpy_gbs = static_cast<double>(bytes) /
                 detail::best_split_seconds(threads, src.size(), reps, [&](size_t, size_t begin, size_t end) {
                   std::memcpy(dst.data() + begin, src.data() + begin, (end - begin) * sizeof(uint64_t));
                 }) / 1e9;
  b.read_gbs = detail::read_gbs(src, threads, reps);
  return b;
}

// A streaming-read probe to take beside each measurement, so that a run's share of the bandwidth
// compares it with the memory of its own moment: `bytes` (8x the largest L3 here at the default)
// filled once and held, then read by `threads` threads, best of `reps` passes (~40 ms in all at
// the default on a 2-core host). Create it before measuring a process's baseline memory, which
// then includes it.
class ReadProbe {
 public:
  explicit ReadProbe(int threads, size_t bytes = size_t{256} << 20)
      : threads_(std::max(threads, 1)), words_(detail::filled_words(bytes)) {}
  double read_gbs(int reps = 6) const { return detail::read_gbs(words_, threads_, reps); }

 private:
  int threads_;
  std::vector<uint64_t> words_;
};

inline std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown CPU";
}

// VmRSS / VmHWM of this process in bytes (0 when /proc is unavailable).
inline uint64_t proc_status_bytes(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const size_t n = std::strlen(key);
  while (std::getline(in, line)) {
    if (line.compare(0, n, key) == 0 && line.size() > n && line[n] == ':') {
      return std::stoull(line.substr(n + 1)) * 1024;  // "VmHWM:   12345 kB"
    }
  }
  return 0;
}
inline uint64_t current_rss_bytes() { return proc_status_bytes("VmRSS"); }
inline uint64_t peak_rss_bytes() { return proc_status_bytes("VmHWM"); }
// Resets the peak (VmHWM) to the current RSS; false where the kernel does not allow it.
inline bool reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace hearth::bench
