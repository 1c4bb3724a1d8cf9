// Elastic KV against llama-server, server to server (issue: "compared with llama-server where
// one is available"): `hearth serve` and llama.cpp's `llama-server` load the same model with
// the same context (default 32,768 tokens over 8 slots), and each one's RSS is read after
// load, at the peak of 8 concurrent requests (--words plain words each), and 1.2 s and 5 s after
// the last one finished. llama-server reserves n_ctx of KV up front; Hearth commits KV as
// tokens arrive and gives it back when idle (HEARTH_KV_IDLE_CACHE, default and 0 both shown).
// Runs llama-server only when HEARTH_LLAMA_CPP_BIN names a build holding it; writes JSON and,
// with --write-doc, its fenced section of docs/performance.md.
//
//   HEARTH_LLAMA_CPP_BIN=/path/llama.cpp/build/bin bench_kv_server_bench --model 1b.gguf
//       [--ctx 32768] [--parallel 8] [--threads 2] [--json kv_server.json] [--write-doc docs/performance.md]
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "child_server.h"
#include "doc_sections.h"

namespace hearth::bench {
namespace {

struct Options {
  std::string model;
  int ctx = 32768;
  int parallel = 8;
  int threads = 2;
  int words = 250;
  std::string json = "kv_server_bench.json";
  std::string write_doc;
};

struct Figures {
  std::string server;
  bool ran = false;
  double loaded = 0, peak = 0, after_1s = 0, after_5s = 0;  // MiB
  int failed_requests = 0;
  int prompt_tokens = 0;  // of one request, as the server counted it
};

// A prompt of `words` plain words, different from its first word on per request (no prefix in
// common between the requests). Its length in tokens depends on the model's vocabulary: the
// servers' usage.prompt_tokens says it.
std::string prompt(int i, int words) {
  std::string p = "Request " + std::to_string(i) + ":";
  const char* vocabulary[] = {"river", "stone", "lantern", "meadow", "harbor", "violet", "engine", "quiet"};
  for (int k = 0; k < words; ++k) p += std::string(" ") + vocabulary[(k * 7 + i * 3) % 8];
  return p;
}

Figures measure(const std::string& name, std::vector<std::string> args, int port, int parallel, int words) {
  Figures f;
  f.server = name;
  ChildServer server;
  const std::string log = "/tmp/kv_server_bench_" + std::to_string(port) + ".log";
  if (!server.start(std::move(args), port, log)) {
    std::fprintf(stderr, "%s did not start (log: %s)\n", name.c_str(), log.c_str());
    return f;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  f.ran = true;
  f.loaded = server.rss_kib() / 1024.0;
  std::atomic<long> peak{server.rss_kib()};
  std::atomic<bool> sampling{true};
  std::thread sampler([&] {
    while (sampling) {
      peak = std::max(peak.load(), server.rss_kib());
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  std::atomic<int> failed{0};
  std::atomic<int> prompt_tokens{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < parallel; ++i) {
    clients.emplace_back([&, i] {
      httplib::Client cli("127.0.0.1", port);
      cli.set_read_timeout(600, 0);
      const nlohmann::json body = {{"prompt", prompt(i, words)}, {"max_tokens", 32}, {"temperature", 0}};
      auto r = cli.Post("/v1/completions", body.dump(), "application/json");
      if (!r || r->status != 200) {
        ++failed;
        return;
      }
      const auto answer = nlohmann::json::parse(r->body, nullptr, false);
      if (answer.is_object() && answer.contains("usage")) prompt_tokens = answer["usage"].value("prompt_tokens", 0);
    });
  }
  for (auto& t : clients) t.join();
  sampling = false;
  sampler.join();
  f.peak = peak.load() / 1024.0;
  f.failed_requests = failed.load();
  f.prompt_tokens = prompt_tokens.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  f.after_1s = server.rss_kib() / 1024.0;
  std::this_thread::sleep_for(std::chrono::milliseconds(3800));
  f.after_5s = server.rss_kib() / 1024.0;
  return f;
}

}  // namespace
}  // namespace hearth::bench

int main(int argc, char** argv) {
  using namespace hearth::bench;
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--model" && has_value) o.model = argv[++i];
    else if (a == "--ctx" && has_value) o.ctx = std::atoi(argv[++i]);
    else if (a == "--parallel" && has_value) o.parallel = std::atoi(argv[++i]);
    else if (a == "--threads" && has_value) o.threads = std::atoi(argv[++i]);
    else if (a == "--words" && has_value) o.words = std::atoi(argv[++i]);
    else if (a == "--json" && has_value) o.json = argv[++i];
    else if (a == "--write-doc" && has_value) o.write_doc = argv[++i];
    else {
      std::fprintf(stderr, "usage: bench_kv_server_bench --model FILE.gguf [--ctx N] [--parallel N] [--threads N] "
                           "[--words N] [--json FILE] [--write-doc FILE]\n");
      return 2;
    }
  }
  if (o.model.empty() || o.ctx < 256 || o.parallel < 1) {
    std::fprintf(stderr, "bench_kv_server_bench: --model is required (and --ctx >= 256, --parallel >= 1)\n");
    return 2;
  }
  double load_at_start = 0;
  getloadavg(&load_at_start, 1);
  ::setenv("HEARTH_LOG_LEVEL", "warn", 0);
  ::setenv("HEARTH_GPU", "none", 0);  // CPU KV is measured; no Vulkan driver pages in the RSS

  std::vector<Figures> all;
  for (const char* idle_cache : {"256MiB", "0"}) {
    const int port = free_loopback_port();
    ::setenv("HEARTH_KV_IDLE_CACHE", idle_cache, 1);
    all.push_back(measure(std::string("hearth serve (HEARTH_KV_IDLE_CACHE=") + idle_cache + ")",
                          {HEARTH_EXE, "serve", "-m", o.model, "--host", "127.0.0.1", "--port", std::to_string(port),
                           "--ctx-size", std::to_string(o.ctx), "--parallel", std::to_string(o.parallel), "-t",
                           std::to_string(o.threads)},
                          port, o.parallel, o.words));
  }
  const char* bin = std::getenv("HEARTH_LLAMA_CPP_BIN");
  std::string llama_note = "not run: HEARTH_LLAMA_CPP_BIN is not set";
  if (bin != nullptr) {
    const std::string exe = std::string(bin) + "/llama-server";
    if (std::filesystem::exists(exe)) {
      const int port = free_loopback_port();
      all.push_back(measure("llama-server", {exe, "-m", o.model, "--host", "127.0.0.1", "--port", std::to_string(port),
                                             "-c", std::to_string(o.ctx), "-np", std::to_string(o.parallel), "-t",
                                             std::to_string(o.threads)},
                            port, o.parallel, o.words));
      llama_note = "";
    } else {
      llama_note = "not run: no llama-server in " + std::string(bin);
    }
  }

  nlohmann::json j = {{"bench", "kv_server"}, {"model", o.model},         {"ctx", o.ctx},
                      {"parallel", o.parallel}, {"load_average_at_start", load_at_start}};
  std::printf("RSS (MiB)                                  after load   peak   1.2 s after   5 s after   failed\n");
  for (const Figures& f : all) {
    j["servers"].push_back({{"server", f.server}, {"ran", f.ran}, {"loaded_mib", f.loaded}, {"peak_mib", f.peak},
                            {"after_1_2s_mib", f.after_1s}, {"after_5s_mib", f.after_5s}, {"failed", f.failed_requests},
                            {"prompt_tokens", f.prompt_tokens}});
    if (!f.ran) {
      std::printf("%-42s did not start\n", f.server.c_str());
      continue;
    }
    std::printf("%-42s %10.1f %6.1f %13.1f %11.1f %8d\n", f.server.c_str(), f.loaded, f.peak, f.after_1s, f.after_5s,
                f.failed_requests);
  }
  if (!llama_note.empty()) std::printf("llama-server %s\n", llama_note.c_str());
  std::ofstream(o.json) << j.dump(2) << "\n";
  if (!o.write_doc.empty()) {
    std::ostringstream d;
    d << "## Elastic KV against llama-server\n\n"
      << "Written by `bench_kv_server_bench --write-doc docs/performance.md` (bench/kv_server_bench.cpp). Model: `"
      << o.model << "`, context " << o.ctx << " tokens over " << o.parallel << " slots, " << o.threads
      << " threads, F16 KV, " << o.parallel << " concurrent requests of " << o.words
      << " words (prompt tokens as each server counted them below) and 32 generated tokens. "
      << "Load average when the run started: " << load_at_start << ".\n\n"
      << "| server | prompt tokens | RSS after load (MiB) | peak | 1.2 s after the last request | 5 s after | failed |\n"
      << "|---|---|---|---|---|---|---|\n";
    char row[512];
    for (const Figures& f : all) {
      if (!f.ran) {
        d << "| " << f.server << " | did not start | | | | | |\n";
        continue;
      }
      std::snprintf(row, sizeof row, "| %s | %d | %.1f | %.1f | %.1f | %.1f | %d |\n", f.server.c_str(), f.prompt_tokens,
                    f.loaded, f.peak, f.after_1s, f.after_5s, f.failed_requests);
      d << row;
    }
    if (!llama_note.empty()) d << "\nllama-server " << llama_note << ".\n";
    if (!update_doc_section_file(o.write_doc, "kv_server_bench", d.str())) {
      std::fprintf(stderr, "cannot write %s\n", o.write_doc.c_str());
      return 2;
    }
  }
  const bool all_ran = std::all_of(all.begin(), all.end(), [](const Figures& f) { return f.ran && f.failed_requests == 0; });
  return all_ran ? 0 : 1;
}
