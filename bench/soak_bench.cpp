// Soak benchmark (not run in CI): N streaming clients (default 64) for D seconds (default 600)
// against `hearth serve` on loopback, each sending one /v1/completions stream after another.
// Reports requests served, errors (a 503 from a full queue is counted apart and allowed; any
// other status, a broken stream or a transport failure is an error), the server's RSS at start,
// peak and end (it should stay flat), and time to first token p50/p99; writes JSON, and with
// --write-doc replaces the soak section of docs/performance.md. Exit status 1 when any error.
//
// Usage: bench_soak_bench --model FILE.gguf [--clients 64] [--seconds 600] [--n-predict 64]
//        [--parallel 4] [--threads 0] [--hearth PATH] [--json soak_bench.json]
//        [--write-doc docs/performance.md]
//
// C++ with plain threads rather than the node driver of bench/server_bench: one blocking client
// per thread is the simplest faithful model of N independent clients, and the RSS sampler reads
// /proc/PID/status of the child it started.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "child_server.h"
#include "doc_sections.h"

namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

struct Options {
  std::string model;
  int clients = 64;
  int seconds = 600;
  int n_predict = 64;
  int parallel = 4;
  int threads = 0;
  std::string hearth = HEARTH_EXE;
  std::string json = "soak_bench.json";
  std::string write_doc;
};

bool parse_options(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--model" || a == "-m") o.model = value();
    else if (a == "--clients") o.clients = std::stoi(value());
    else if (a == "--seconds") o.seconds = std::stoi(value());
    else if (a == "--n-predict") o.n_predict = std::stoi(value());
    else if (a == "--parallel") o.parallel = std::stoi(value());
    else if (a == "--threads") o.threads = std::stoi(value());
    else if (a == "--hearth") o.hearth = value();
    else if (a == "--json") o.json = value();
    else if (a == "--write-doc") o.write_doc = value();
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return false;
    }
  }
  if (o.model.empty() || o.clients < 1 || o.seconds < 1) {
    std::fprintf(stderr, "usage: bench_soak_bench --model FILE.gguf [--clients N] [--seconds D] ...\n");
    return false;
  }
  return true;
}

// `hearth serve` as a child process on a free loopback port.
bool start_server(hearth::bench::ChildServer& server, const Options& o) {
  const int port = hearth::bench::free_loopback_port();
  return server.start({o.hearth, "serve", "-m", o.model, "--host", "127.0.0.1", "--port", std::to_string(port),
                       "--parallel", std::to_string(o.parallel), "-t", std::to_string(o.threads),
                       // every client on loopback is one address: room for all of them
                       "--max-connections-per-client", std::to_string(o.clients + 16),
                       "--max-connections", std::to_string(std::max(512, o.clients + 16))},
                      port, "/tmp/soak_bench_server.log", 600);
}

struct Tally {
  std::mutex mu;
  uint64_t served = 0;
  uint64_t rejected_503 = 0;
  uint64_t errors = 0;
  uint64_t tokens = 0;  // SSE events carrying a "text" field (about one per token)
  std::vector<double> ttft_ms;
  std::vector<std::string> error_samples;
};

// One client: streams completions back to back until `deadline`.
void run_client(int id, int port, const Options& o, Clock::time_point deadline, Tally& tally) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(300, 0);
  int n = 0;
  while (Clock::now() < deadline) {
    const Json body = {{"prompt", "Client " + std::to_string(id) + " story " + std::to_string(n++) + ": Once upon a time"},
                       {"max_tokens", o.n_predict}, {"temperature", 0.8}, {"stream", true}};
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = body.dump();
    req.set_header("Content-Type", "application/json");
    int status = 0;
    std::string text;
    const auto start = Clock::now();
    double ttft = -1;
    req.response_handler = [&](const httplib::Response& res) {
      status = res.status;
      return true;
    };
    req.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
      if (ttft < 0 && status == 200) ttft = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      text.append(data, size);
      return true;
    };
    auto res = cli.send(req);
    std::lock_guard lock(tally.mu);
    if (res && status == 503) {
      ++tally.rejected_503;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    } else if (res && status == 200 && text.find("data: [DONE]") != std::string::npos &&
               text.find("\"error\"") == std::string::npos) {
      ++tally.served;
      if (ttft >= 0) tally.ttft_ms.push_back(ttft);
      size_t pos = 0;
      while ((pos = text.find("\"text\":", pos)) != std::string::npos) {
        ++tally.tokens;
        pos += 7;
      }
    } else {
      ++tally.errors;
      if (tally.error_samples.size() < 5) {
        tally.error_samples.push_back(res ? "HTTP " + std::to_string(status) + ": " + text.substr(0, 200)
                                          : "transport: " + httplib::to_string(res.error()));
      }
    }
  }
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    if (!parse_options(argc, argv, o)) return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  // One log line per request would bury the report; warnings and errors still show.
  ::setenv("HEARTH_LOG_LEVEL", "warn", 0);
  double load_at_start = 0;
  getloadavg(&load_at_start, 1);
  hearth::bench::ChildServer server;
  if (!start_server(server, o)) {
    std::fprintf(stderr, "hearth serve did not start (%s; log: /tmp/soak_bench_server.log)\n", o.hearth.c_str());
    return 2;
  }
  const long rss_start = server.rss_kib();
  std::atomic<long> rss_peak{rss_start};
  std::atomic<bool> sampling{true};
  // The highest RSS of each minute: flat means the last minutes sit where the first one did
  // (a leak climbs minute after minute; a cache levels off).
  std::vector<long> rss_by_minute;
  const auto began = Clock::now();
  std::thread sampler([&] {
    while (sampling) {
      const long now_kib = server.rss_kib();
      rss_peak = std::max(rss_peak.load(), now_kib);
      const auto minute = static_cast<size_t>(std::chrono::duration_cast<std::chrono::minutes>(Clock::now() - began).count());
      if (rss_by_minute.size() <= minute) rss_by_minute.resize(minute + 1, 0);
      rss_by_minute[minute] = std::max(rss_by_minute[minute], now_kib);
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  });
  Tally tally;
  const auto deadline = began + std::chrono::seconds(o.seconds);
  std::vector<std::thread> clients;
  for (int i = 0; i < o.clients; ++i) clients.emplace_back(run_client, i, server.port(), std::cref(o), deadline, std::ref(tally));
  for (auto& t : clients) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - began).count();
  std::this_thread::sleep_for(std::chrono::seconds(2));  // let the server settle after the last stream
  sampling = false;
  sampler.join();
  const long rss_end = server.rss_kib();

  const double p50 = percentile(tally.ttft_ms, 0.50), p99 = percentile(tally.ttft_ms, 0.99);
  std::printf("soak: %d clients, %.0f s, n_predict %d, --parallel %d\n", o.clients, elapsed, o.n_predict, o.parallel);
  std::printf("  requests served %llu, 503 (queue full) %llu, errors %llu, text events %llu (%.1f per s)\n",
              static_cast<unsigned long long>(tally.served), static_cast<unsigned long long>(tally.rejected_503),
              static_cast<unsigned long long>(tally.errors), static_cast<unsigned long long>(tally.tokens),
              static_cast<double>(tally.tokens) / elapsed);
  std::printf("  server RSS start %.1f MiB, peak %.1f MiB, end %.1f MiB\n", rss_start / 1024.0, rss_peak.load() / 1024.0,
              rss_end / 1024.0);
  std::string by_minute;
  for (long kib : rss_by_minute) by_minute += (by_minute.empty() ? "" : ", ") + std::to_string(kib / 1024);
  std::printf("  server RSS by minute (highest, MiB): %s\n", by_minute.c_str());
  std::printf("  time to first token p50 %.1f ms, p99 %.1f ms\n", p50, p99);
  for (const auto& e : tally.error_samples) std::printf("  error: %s\n", e.c_str());

  Json j = {{"bench", "soak"},
            {"model", o.model},
            {"clients", o.clients},
            {"seconds", elapsed},
            {"n_predict", o.n_predict},
            {"parallel", o.parallel},
            {"requests_served", tally.served},
            {"rejected_503", tally.rejected_503},
            {"errors", tally.errors},
            {"error_samples", tally.error_samples},
            {"text_events", tally.tokens},
            {"rss_kib", {{"start", rss_start}, {"peak", rss_peak.load()}, {"end", rss_end}, {"by_minute", rss_by_minute}}},
            {"ttft_ms", {{"p50", p50}, {"p99", p99}}}};
  std::ofstream(o.json) << j.dump(2) << "\n";
  if (!o.write_doc.empty()) {
    std::ostringstream s;
    s << "## Soak (`bench_soak_bench`)\n\n"
      << o.clients << " streaming clients for " << static_cast<int>(elapsed) << " s against `hearth serve --parallel "
      << o.parallel << "` with " << o.model << " on loopback, " << o.n_predict << " tokens per request, "
      << hearth::bench::utc_date() << "; load average when it started " << load_at_start
      << " (2 cores: above ~1 other work shared the machine). The TTFT is queueing: the clients share the slots.\n\n"
      << "| served | 503 (queue full) | errors | RSS start | RSS peak | RSS end | TTFT p50 | TTFT p99 |\n"
      << "|---|---|---|---|---|---|---|---|\n";
    char row[256];
    std::snprintf(row, sizeof(row), "| %llu | %llu | %llu | %.1f MiB | %.1f MiB | %.1f MiB | %.1f ms | %.1f ms |\n",
                  static_cast<unsigned long long>(tally.served), static_cast<unsigned long long>(tally.rejected_503),
                  static_cast<unsigned long long>(tally.errors), rss_start / 1024.0, rss_peak.load() / 1024.0,
                  rss_end / 1024.0, p50, p99);
    s << row;
    s << "\nServer RSS, highest of each minute (MiB): " << by_minute
      << ". End: 2 s after the last stream, once the idle trim has kept only `HEARTH_KV_IDLE_CACHE` of cached prefixes.\n";
    if (!hearth::bench::update_doc_section_file(o.write_doc, "soak-bench", s.str())) {
      std::fprintf(stderr, "cannot write %s\n", o.write_doc.c_str());
      return 2;
    }
  }
  return tally.errors == 0 ? 0 : 1;
}
