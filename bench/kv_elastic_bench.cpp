// Elastic KV memory against a static worst-case allocation of the same engine (every KV chunk
// committed up front and never returned, llama-server's and ollama's way), on one model:
//   - idle RSS: after load, at the peak of 8 concurrent requests, and 1.2 s after the last one
//     finished (elastic with an idle cache of 0);
//   - time to first token of a request whose 2,000-token prefix another slot left cached,
//     against the same request with prefix sharing off;
//   - sequences served at once in the same KV pool for three length mixes: static slots
//     splitting the pool against unified KV (slots sharing it, admission by blocks, preemption);
//   - decode speed, one stream, elastic against static (median of rounds, interleaved).
// Prints the figures, writes JSON (--json) and regenerates its section of docs/performance.md
// (--write-doc).
//
//   bench_kv_elastic_bench [MODEL.gguf] --json kv.json --write-doc docs/performance.md
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "doc_sections.h"
#include "engine/inference_context.h"
#include "engine/serving_engine.h"
#include "util/log.h"

namespace hearth::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int32_t kSlots = 8;
constexpr int32_t kSlotCtx = 4096;

size_t rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

double mib(size_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); }

std::unique_ptr<engine::InferenceContext> load(const std::string& path, bool is_static, bool sharing) {
  engine::ContextOptions o;
  o.n_threads = 2;
  o.n_ctx = kSlots * kSlotCtx;
  o.prefix_sharing = sharing;
  if (is_static) o.kv_pool.reserve_chunks = 1 << 30;  // every chunk committed ahead, none released
  auto ctx = engine::InferenceContext::load(path, o);
  if (!ctx.ok()) {
    std::fprintf(stderr, "bench_kv_elastic_bench: %s\n", ctx.error().to_string().c_str());
    std::exit(1);
  }
  return std::move(ctx).value();
}

std::unique_ptr<engine::ServingEngine> serve(engine::InferenceContext& ctx, bool is_static) {
  engine::ServingOptions o;
  o.n_slots = kSlots;
  o.idle_cache_bytes = 0;
  o.idle_after = is_static ? std::chrono::hours(24) : std::chrono::milliseconds(1000);
  return std::move(engine::ServingEngine::create(ctx, o)).value();
}

std::vector<int32_t> tokens(int32_t n, int32_t seed, int32_t n_vocab) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  uint32_t x = static_cast<uint32_t>(seed) * 2654435761u + 1;
  for (auto& v : t) {
    x = x * 1664525u + 1013904223u;
    v = static_cast<int32_t>((x >> 8) % static_cast<uint32_t>(n_vocab - 10)) + 5;
  }
  return t;
}

engine::GenerationRequest request(std::vector<int32_t> prompt, int32_t n_predict, int32_t slot = -1) {
  engine::GenerationRequest r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0;
  r.n_predict = n_predict;
  r.ignore_eos = true;
  r.slot = slot;
  return r;
}

engine::EngineEvent finish(engine::ResultStream& s) {
  engine::EngineEvent ev;
  while (s.next(ev, std::chrono::seconds(600))) {
    if (ev.kind != engine::EngineEvent::Kind::kText) break;
  }
  return ev;
}

struct IdleResult {
  size_t loaded = 0, peak = 0, idle = 0, committed_idle = 0;
};

IdleResult idle_rss(const std::string& path, bool is_static) {
  auto ctx = load(path, is_static, true);
  auto engine = serve(*ctx, is_static);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the committer's prefaulting
  IdleResult r;
  r.loaded = rss_bytes();
  std::vector<std::shared_ptr<engine::ResultStream>> streams;
  for (int32_t i = 0; i < kSlots; ++i) streams.push_back(engine->submit(request(tokens(1000, i, ctx->n_vocab()), 32)));
  for (auto& s : streams) finish(*s);
  r.peak = rss_bytes();
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  r.idle = rss_bytes();
  r.committed_idle = engine->kv_pool_stats().committed_bytes;
  return r;
}

double ttft_ms(const std::string& path, bool sharing) {
  auto ctx = load(path, false, sharing);
  auto engine = serve(*ctx, false);
  std::vector<int32_t> prefix = tokens(2000, 99, ctx->n_vocab());
  std::vector<int32_t> a = prefix, b = prefix;
  for (int32_t t : tokens(16, 1, ctx->n_vocab())) a.push_back(t);
  for (int32_t t : tokens(16, 2, ctx->n_vocab())) b.push_back(t);
  finish(*engine->submit(request(a, 1, 0)));
  return finish(*engine->submit(request(b, 1, 1))).timings.ttft_ms;
}

double decode_tps(engine::InferenceContext& ctx, bool is_static, int32_t n_tokens) {
  auto engine = serve(ctx, is_static);
  const auto ev = finish(*engine->submit(request(tokens(16, 7, ctx.n_vocab()), n_tokens)));
  return ev.timings.predicted_ms > 0 ? (ev.timings.predicted_n - 1) * 1000.0 / ev.timings.predicted_ms : 0;
}

// A length mix: each conversation's own tokens (prompt after the shared system prompt, plus
// kGenerated generated), cycled over the requests.
struct LengthMix {
  const char* name;
  std::vector<int32_t> own;
  int32_t system = 0;  // tokens of a system prompt every request starts with (0: none)
  double mean() const {
    double sum = 0;
    for (int32_t n : own) sum += n;
    return sum / static_cast<double>(own.size());
  }
};
constexpr int32_t kGenerated = 32;

struct Served {
  int32_t at_once = 0;  // most sequences holding KV in one batch
  uint64_t preemptions = 0;
  int32_t failed = 0;
  double seconds = 0;
};

// Requests of `mix` served by one engine whose KV pool is the static budget (kSlots x kSlotCtx
// tokens): static = kSlots slots splitting it, unified = up to 256 slots sharing it. Counts the
// sequences that held KV in one batch at once.
Served served_at_once(const std::string& path, const LengthMix& mix, bool unified, int32_t n_requests) {
  auto ctx = load(path, false, true);
  engine::ServingOptions o;
  o.n_slots = unified ? 256 : kSlots;
  o.kv_unified = unified;
  o.idle_cache_bytes = 0;
  o.step_token_budget = 1024;
  Served r;
  std::mutex mu;
  o.step_observer = [&](const engine::StepRecord& rec) {
    std::lock_guard lock(mu);
    r.at_once = std::max(r.at_once, static_cast<int32_t>(rec.shares.size()));
  };
  auto engine = std::move(engine::ServingEngine::create(*ctx, o)).value();
  const std::vector<int32_t> system = tokens(mix.system, 4242, ctx->n_vocab());
  std::vector<std::shared_ptr<engine::ResultStream>> streams;
  const auto t0 = Clock::now();
  for (int32_t i = 0; i < n_requests; ++i) {
    std::vector<int32_t> prompt = system;
    const int32_t own = mix.own[static_cast<size_t>(i) % mix.own.size()] - kGenerated;
    for (int32_t t : tokens(own, 1000 + i, ctx->n_vocab())) prompt.push_back(t);
    streams.push_back(engine->submit(request(std::move(prompt), kGenerated)));
  }
  for (auto& st : streams) r.failed += finish(*st).kind == engine::EngineEvent::Kind::kDone ? 0 : 1;
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.preemptions = engine->metrics().kv_preemptions_total;
  return r;
}

}  // namespace
}  // namespace hearth::bench

int main(int argc, char** argv) {
  using namespace hearth::bench;
  std::string model = "../shared/models/random/llama-Q4_0.gguf", json_path, doc_path, decode_model;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else if (a == "--write-doc" && i + 1 < argc) {
      doc_path = argv[++i];
    } else if (a == "--decode-model" && i + 1 < argc) {
      decode_model = argv[++i];
    } else if (!a.empty() && a[0] != '-') {
      model = a;
    } else {
      std::fprintf(stderr, "usage: bench_kv_elastic_bench [MODEL.gguf] [--decode-model BIG.gguf] [--json FILE] [--write-doc FILE]\n");
      return 2;
    }
  }
  hearth::set_log_level(hearth::LogLevel::kWarn);
  // CPU KV is what is measured: no Vulkan discovery, whose drivers (lavapipe maps libLLVM,
  // ~44 MiB resident) would count in every RSS figure below.
  setenv("HEARTH_GPU", "none", 0);
  double load_at_start = 0;
  getloadavg(&load_at_start, 1);
  nlohmann::json j;
  j["load_average_at_start"] = load_at_start;
  j["model"] = model;
  j["date"] = utc_date();
  j["slots"] = kSlots;
  j["slot_ctx"] = kSlotCtx;

  const IdleResult st = idle_rss(model, true);
  const IdleResult el = idle_rss(model, false);
  j["idle_rss"] = {{"static", {{"loaded", st.loaded}, {"peak", st.peak}, {"idle", st.idle}}},
                   {"elastic", {{"loaded", el.loaded}, {"peak", el.peak}, {"idle", el.idle}, {"kv_committed_idle", el.committed_idle}}}};
  std::printf("idle RSS (MiB)      loaded   peak   1.2 s after\n");
  std::printf("  static          %8.1f %6.1f %8.1f\n", mib(st.loaded), mib(st.peak), mib(st.idle));
  std::printf("  elastic         %8.1f %6.1f %8.1f  (KV committed %.1f MiB)\n", mib(el.loaded), mib(el.peak), mib(el.idle),
              mib(el.committed_idle));

  const double uncached = ttft_ms(model, false);
  const double cached = ttft_ms(model, true);
  j["ttft_ms"] = {{"uncached", uncached}, {"cached_2000", cached}};
  std::printf("TTFT 2,000-token prefix: uncached %.1f ms, cached %.1f ms (%.1fx)\n", uncached, cached, uncached / cached);

  // Length mixes (own tokens per conversation; docs/decisions.md says why these): long chats,
  // everyday chat, and short turns behind one 2,000-token system prompt (agents, support bots).
  const std::vector<LengthMix> mixes = {
      {"long chats (mean 1,000 tokens, up to 3,000)", {300, 800, 1500, 600, 3000, 400, 1200, 200}, 0},
      {"everyday chat (mean 725, up to 3,000)", {120, 250, 400, 650, 180, 900, 3000, 300}, 0},
      {"2,000-token system prompt + short turns (mean 215, up to 500)", {60, 120, 200, 350, 90, 500, 250, 150}, 2000},
  };
  nlohmann::json mixes_json = nlohmann::json::array();
  std::vector<std::pair<Served, Served>> served;
  for (const LengthMix& mix : mixes) {
    const double fit = (kSlots * kSlotCtx - mix.system) / mix.mean();
    const auto n_requests = static_cast<int32_t>(fit * 1.5) + kSlots;  // more than fit: the pool is the limit
    const Served st_r = served_at_once(model, mix, false, n_requests);
    const Served un_r = served_at_once(model, mix, true, n_requests);
    served.push_back({st_r, un_r});
    mixes_json.push_back({{"mix", mix.name}, {"own_tokens", mix.own}, {"system_tokens", mix.system}, {"requests", n_requests},
                          {"static", {{"at_once", st_r.at_once}, {"failed", st_r.failed}, {"seconds", st_r.seconds}}},
                          {"unified", {{"at_once", un_r.at_once}, {"failed", un_r.failed}, {"seconds", un_r.seconds},
                                       {"preemptions", un_r.preemptions}}}});
    std::printf("%s: %d requests; at once static %d, unified %d (%.1fx), preemptions %llu, failed %d/%d, %.1f s / %.1f s\n",
                mix.name, n_requests, st_r.at_once, un_r.at_once, un_r.at_once / static_cast<double>(st_r.at_once),
                static_cast<unsigned long long>(un_r.preemptions), st_r.failed, un_r.failed, st_r.seconds, un_r.seconds);
  }
  j["sequences_at_once"] = mixes_json;

  // Decode speed on --decode-model when given (a realistic size, where the KV read is a real
  // share of each token's time), else on the mixes' model.
  if (decode_model.empty()) decode_model = model;
  const int32_t n_decode = decode_model == model ? 1024 : 256;
  auto ctx = load(decode_model, false, true);
  auto ctx_static = load(decode_model, true, true);
  std::vector<double> tps_static, tps_elastic;
  for (int round = 0; round < 5; ++round) {  // the first engine alternates by round
    if (round % 2 == 0) tps_static.push_back(decode_tps(*ctx_static, true, n_decode));
    tps_elastic.push_back(decode_tps(*ctx, false, n_decode));
    if (round % 2 == 1) tps_static.push_back(decode_tps(*ctx_static, true, n_decode));
  }
  j["decode_model"] = decode_model;
  j["decode_tokens"] = n_decode;
  std::sort(tps_static.begin(), tps_static.end());
  std::sort(tps_elastic.begin(), tps_elastic.end());
  j["decode_tps"] = {{"static", tps_static}, {"elastic", tps_elastic}};
  std::printf("decode tok/s (median of 5): static %.1f, elastic %.1f (%.1f%%)\n", tps_static[2], tps_elastic[2],
              100.0 * (tps_elastic[2] / tps_static[2] - 1.0));

  if (!json_path.empty()) std::ofstream(json_path) << j.dump(2) << "\n";
  if (!doc_path.empty()) {
    std::ostringstream d;
    d << "## Elastic KV memory\n\n"
      << "Written by `bench_kv_elastic_bench --write-doc docs/performance.md` (bench/kv_elastic_bench.cpp). Model: `" << model
      << "`, a KV pool of " << kSlots << " x " << kSlotCtx << " tokens, 2 threads, " << utc_date()
      << ". Static: the same engine with every KV chunk committed up front and " << kSlots
      << " slots splitting the pool (llama-server's and ollama's way). Load average when the run started: " << load_at_start
      << " (2 cores; above ~1 the timings share the machine with other jobs).\n\n"
      << "| figure | static | elastic |\n|---|---|---|\n";
    char row[512];
    std::snprintf(row, sizeof row, "| RSS after load (MiB) | %.1f | %.1f |\n", mib(st.loaded), mib(el.loaded));
    d << row;
    std::snprintf(row, sizeof row, "| RSS at peak, 8 x 1,000-token requests (MiB) | %.1f | %.1f |\n", mib(st.peak), mib(el.peak));
    d << row;
    std::snprintf(row, sizeof row, "| RSS 1.2 s after the last request, idle cache 0 (MiB) | %.1f | %.1f (KV committed %.1f) |\n",
                  mib(st.idle), mib(el.idle), mib(el.committed_idle));
    d << row;
    std::snprintf(row, sizeof row, "| decode tok/s, one stream of %d tokens on `%s` (median of 5, interleaved) | %.1f | %.1f (%+.1f%%) |\n",
                  n_decode, decode_model.c_str(), tps_static[2], tps_elastic[2], 100.0 * (tps_elastic[2] / tps_static[2] - 1.0));
    d << row;
    d << "\nSequences holding KV at once in the same pool (`--kv-unified`: slots share it, requests are admitted by the "
         "blocks they need and preempted/recomputed when it runs short), each request generating "
      << kGenerated << " tokens:\n\n| length mix | static | unified | ratio | preemptions | failed |\n|---|---|---|---|---|---|\n";
    for (size_t i = 0; i < mixes.size(); ++i) {
      const auto& [st_r, un_r] = served[i];
      std::snprintf(row, sizeof row, "| %s | %d | %d | %.1fx | %llu | %d |\n", mixes[i].name, st_r.at_once, un_r.at_once,
                    un_r.at_once / static_cast<double>(st_r.at_once), static_cast<unsigned long long>(un_r.preemptions),
                    st_r.failed + un_r.failed);
      d << row;
    }
    std::snprintf(row, sizeof row, "\nTime to first token after a 2,000-token prefix: %.1f ms uncached (sharing off), %.1f ms "
                  "with the prefix cached by another slot (%.1fx).\n", uncached, cached, uncached / cached);
    d << row;
    if (!update_doc_section_file(doc_path, "kv_elastic_bench", d.str())) {
      std::fprintf(stderr, "bench_kv_elastic_bench: cannot write %s\n", doc_path.c_str());
      return 2;
    }
  }
  return 0;
}
