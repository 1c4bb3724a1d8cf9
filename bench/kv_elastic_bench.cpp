// Elastic KV memory against a static worst-case allocation of the same engine (every KV chunk
// committed up front and never returned, llama-server's and ollama's way), on one model:
//   - idle RSS: after load, at the peak of 8 concurrent requests, and 1.2 s after the last one
//     finished (elastic with an idle cache of 0);
//   - time to first token of a request whose 2,000-token prefix another slot left cached,
//     against the same request with prefix sharing off;
//   - sequences that fit a fixed KV budget with a length mix (alone and behind a shared
//     1,000-token system prompt) against n_ctx x n_parallel static slots;
//   - decode speed, one stream, elastic against static (median of rounds, interleaved).
// Prints the figures, writes JSON (--json) and regenerates docs/performance-kv.md
// (--write-doc).
//
//   bench_kv_elastic_bench [MODEL.gguf] --json kv.json --write-doc docs/performance-kv.md
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
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

double decode_tps(engine::InferenceContext& ctx, bool is_static) {
  auto engine = serve(ctx, is_static);
  const auto ev = finish(*engine->submit(request(tokens(16, 7, ctx.n_vocab()), 1024)));
  return ev.timings.predicted_ms > 0 ? (ev.timings.predicted_n - 1) * 1000.0 / ev.timings.predicted_ms : 0;
}

// Sequences of a length mix that fit `budget` bytes of KV: each starts with the shared prefix
// (adopted when sharing, its own copy otherwise) and appends its own tokens while the pool
// admits them.
int32_t fit_in_budget(const kv::KvLayout& layout, size_t budget, int32_t shared_prefix, bool sharing) {
  kv::KvCacheOptions o;
  o.pool.background_commit = false;
  o.prefix_sharing = sharing;
  auto cache = std::move(kv::KvCache::create(layout, 1 << 16, o)).value();
  cache.pool().set_limit(budget);
  const int32_t mix[] = {300, 800, 1500, 600, 3000, 400, 1200, 200};  // own tokens per conversation
  std::vector<int32_t> system(static_cast<size_t>(shared_prefix));
  for (size_t i = 0; i < system.size(); ++i) system[i] = static_cast<int32_t>(i);
  const int32_t bt = layout.block_tokens;
  if (shared_prefix > 0) {
    const int32_t s = cache.seq_create();
    if (!cache.seq_append(s, shared_prefix).ok()) return 0;
    cache.seq_publish(s, system);
  }
  int32_t n = 0;
  for (;; ++n) {
    const int32_t s = cache.seq_create();
    const int32_t adopted = cache.seq_adopt_prefix(s, system, shared_prefix);
    const int32_t own = mix[n % 8] + shared_prefix - adopted;
    if (!cache.pool().admits_blocks((own + bt - 1) / bt + 1) || !cache.seq_append(s, own).ok()) break;
  }
  return n;
}

}  // namespace
}  // namespace hearth::bench

int main(int argc, char** argv) {
  using namespace hearth::bench;
  std::string model = "../shared/models/random/llama-Q4_0.gguf", json_path, doc_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else if (a == "--write-doc" && i + 1 < argc) {
      doc_path = argv[++i];
    } else if (!a.empty() && a[0] != '-') {
      model = a;
    } else {
      std::fprintf(stderr, "usage: bench_kv_elastic_bench [MODEL.gguf] [--json FILE] [--write-doc FILE]\n");
      return 2;
    }
  }
  hearth::set_log_level(hearth::LogLevel::kWarn);
  nlohmann::json j;
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

  auto ctx = load(model, false, true);
  const hearth::kv::KvLayout layout = ctx->kv().pool().layout();
  const size_t per_token = ctx->kv().pool().block_bytes() / static_cast<size_t>(layout.block_tokens);
  const size_t budget = per_token * kSlotCtx * kSlots;  // what static n_ctx x n_parallel needs
  const int32_t alone = fit_in_budget(layout, budget, 0, true);
  const int32_t unshared = fit_in_budget(layout, budget, 1000, false);
  const int32_t shared = fit_in_budget(layout, budget, 1000, true);
  j["budget"] = {{"bytes", budget}, {"static_sequences", kSlots}, {"elastic_sequences", alone},
                 {"elastic_system_prompt_unshared", unshared}, {"elastic_system_prompt_shared", shared}};
  std::printf("sequences in %.1f MiB: static %d, elastic %d (%.1fx); with a 1,000-token system prompt: elastic %d, "
              "shared %d (%.1fx)\n",
              mib(budget), kSlots, alone, alone / static_cast<double>(kSlots), unshared, shared,
              shared / static_cast<double>(kSlots));

  auto ctx_static = load(model, true, true);
  std::vector<double> tps_static, tps_elastic;
  for (int round = 0; round < 5; ++round) {  // the first engine alternates by round
    if (round % 2 == 0) tps_static.push_back(decode_tps(*ctx_static, true));
    tps_elastic.push_back(decode_tps(*ctx, false));
    if (round % 2 == 1) tps_static.push_back(decode_tps(*ctx_static, true));
  }
  std::sort(tps_static.begin(), tps_static.end());
  std::sort(tps_elastic.begin(), tps_elastic.end());
  j["decode_tps"] = {{"static", tps_static}, {"elastic", tps_elastic}};
  std::printf("decode tok/s (median of 5): static %.1f, elastic %.1f (%.1f%%)\n", tps_static[2], tps_elastic[2],
              100.0 * (tps_elastic[2] / tps_static[2] - 1.0));

  if (!json_path.empty()) std::ofstream(json_path) << j.dump(2) << "\n";
  if (!doc_path.empty()) {
    std::ofstream d(doc_path + ".tmp");
    d << "# Elastic KV memory: measured figures\n\n"
      << "Written by `bench_kv_elastic_bench --write-doc` (bench/kv_elastic_bench.cpp), never by hand. Model: `"
      << model << "`, " << kSlots << " slots of " << kSlotCtx << " tokens, 2 threads, " << utc_date()
      << ". One run on a machine shared with other jobs: timings are from a loaded machine.\n\n"
      << "| figure | static (all KV committed up front) | elastic |\n|---|---|---|\n";
    char row[256];
    std::snprintf(row, sizeof row, "| RSS after load (MiB) | %.1f | %.1f |\n", mib(st.loaded), mib(el.loaded));
    d << row;
    std::snprintf(row, sizeof row, "| RSS at peak, 8 x 1,000-token requests (MiB) | %.1f | %.1f |\n", mib(st.peak), mib(el.peak));
    d << row;
    std::snprintf(row, sizeof row, "| RSS 1.2 s after the last request, idle cache 0 (MiB) | %.1f | %.1f (KV committed %.1f) |\n",
                  mib(st.idle), mib(el.idle), mib(el.committed_idle));
    d << row;
    std::snprintf(row, sizeof row, "| sequences in %.1f MiB of KV, length mix | %d | %d |\n", mib(budget), kSlots, alone);
    d << row;
    std::snprintf(row, sizeof row, "| ... each behind a 1,000-token system prompt, not shared / shared | %d | %d / %d |\n",
                  kSlots, unshared, shared);
    d << row;
    std::snprintf(row, sizeof row, "| decode tok/s, one stream of 1,024 tokens (median of 5) | %.1f | %.1f |\n", tps_static[2],
                  tps_elastic[2]);
    d << row;
    std::snprintf(row, sizeof row, "\nTime to first token after a 2,000-token prefix: %.1f ms uncached (sharing off), %.1f ms "
                  "with the prefix cached by another slot (%.1fx).\n", uncached, cached, uncached / cached);
    d << row;
    d.close();
    std::rename((doc_path + ".tmp").c_str(), doc_path.c_str());
  }
  return 0;
}
