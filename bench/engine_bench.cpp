// End-to-end engine speed against llama.cpp on the same GGUF files, machine and thread count:
// prompt processing (pp, default 512 tokens in one batch) and generation (tg, default 128
// single-token steps), repeated in rounds; in each round the two engines' pp runs and then their
// tg runs go back to back, the first engine alternating by round, so that load from other
// processes hits both alike; medians are reported. Also measured in the same run:
// the machine's memcpy and streaming-read bandwidth (decode's ceiling) at the start and the end,
// a shorter read probe just before and after each of Hearth's CPU tg runs (the host's bandwidth
// switches between regimes within seconds, so each run's share of the ceiling is taken against
// its own probes), Hearth's warm load time and its peak RSS while decoding. Prints a table
// (Hearth, llama.cpp, ratio, GB/s), writes JSON (--json) and can regenerate docs/performance.md
// (--write-doc); both are rewritten after each model, so a run cut short keeps what it measured.
// llama.cpp comes from the build named by HEARTH_LLAMA_CPP_BIN (its bin/ folder); without it only Hearth is measured. --gpu-layers puts
// layers on a GPU in both engines (Hearth's device from HEARTH_GPU as for `hearth run -ngl`;
// llama-bench -ngl, so the llama.cpp build must have a GPU backend such as Vulkan).
//
//   bench_engine_bench --models-dir /work/models-bench --threads 2 --rounds 3
//       --json engine_bench.json --write-doc docs/performance.md
//   bench_engine_bench --models-dir /work/models-bench --gpu-layers all --rounds 2
//       --write-doc docs/performance.md --doc-section vulkan_engine_bench
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "doc_sections.h"
#include "engine/inference_context.h"
#include "engine_bench_report.h"
#include "llama_bench_runner.h"
#include "machine_probe.h"
#include "util/settings.h"
#include "util/thread_pool.h"

namespace hearth::bench {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Bytes of weights one decode step reads: every tensor except an untied token embedding (of
// which one row is read); of a mixture-of-experts model's stacked expert tensors, the share of
// the experts a token uses (the model's active-parameter bytes).
uint64_t decode_weight_bytes(const gguf::File& f) {
  uint64_t total = 0;
  const bool tied = f.find_tensor("output.weight") == nullptr;
  const std::string arch = f.get_or<std::string>("general.architecture", "");
  const auto n_expert = f.get_or<uint32_t>(arch + ".expert_count", 0);
  const auto n_used = f.get_or<uint32_t>(arch + ".expert_used_count", 0);
  for (const auto& t : f.tensors()) {
    if (!tied && t.name == "token_embd.weight") continue;
    const bool experts = n_expert > 0 && t.name.find("_exps.") != std::string::npos;
    total += experts ? t.size_bytes / n_expert * n_used : t.size_bytes;
  }
  return total;
}

// Hearth's side: one loaded context, prompt and generation runs as llama-bench does them
// (random token ids, BOS first when the model adds one, an empty sequence each run, logits of
// the last prompt token / of every generated token).
class HearthRunner {
 public:
  static Result<std::unique_ptr<HearthRunner>> open(const std::string& path, int threads, int n_ctx, bool interleave,
                                                    int32_t gpu_layers, DType kv_type) {
    engine::ContextOptions o;
    o.kv_type = kv_type;
    o.n_threads = threads;
    o.n_ctx = n_ctx;
    o.interleave_weights = interleave;
    o.gpu_layers = gpu_layers;
    HEARTH_ASSIGN(auto ctx, engine::InferenceContext::load(path, o));
    auto r = std::unique_ptr<HearthRunner>(new HearthRunner());
    r->ctx_ = std::move(ctx);
    return r;
  }

  engine::InferenceContext& ctx() { return *ctx_; }

  Result<double> prompt_tps(int n) {
    const int32_t seq = ctx_->seq_create();
    std::vector<model::BatchToken> batch;
    for (int i = 0; i < n; ++i) batch.push_back({random_token(i == 0), seq, i, i == n - 1});
    auto start = std::chrono::steady_clock::now();
    auto st = ctx_->decode(batch, logits_);
    const double s = seconds_since(start);
    ctx_->seq_free(seq);
    if (!st.ok()) return st.error();
    return n / s;
  }

  // n single-token steps after `depth` tokens of context (one untimed prompt batch, as
  // llama-bench -d does).
  Result<double> generation_tps(int n, int depth = 0) {
    const int32_t seq = ctx_->seq_create();
    if (depth > 0) {
      std::vector<model::BatchToken> batch;
      for (int i = 0; i < depth; ++i) batch.push_back({random_token(i == 0), seq, i, i == depth - 1});
      if (auto st = ctx_->decode(batch, logits_); !st.ok()) {
        ctx_->seq_free(seq);
        return st.error();
      }
    }
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) {
      const model::BatchToken t{random_token(i == 0 && depth == 0), seq, depth + i, true};
      auto st = ctx_->decode(std::span<const model::BatchToken>(&t, 1), logits_);
      if (!st.ok()) {
        ctx_->seq_free(seq);
        return st.error();
      }
    }
    const double s = seconds_since(start);
    ctx_->seq_free(seq);
    return n / s;
  }

 private:
  HearthRunner() = default;
  int32_t random_token(bool first) {
    const auto& tok = ctx_->tokenizer();
    if (first && tok.add_bos() && tok.bos_id() >= 0) return tok.bos_id();
    return static_cast<int32_t>(rng_() % static_cast<uint32_t>(ctx_->n_vocab()));
  }
  std::unique_ptr<engine::InferenceContext> ctx_;
  std::vector<float> logits_;
  std::mt19937 rng_{1234};
};

struct Options {
  std::vector<std::string> models;
  int threads = 2;
  int rounds = 3;
  int pp = 512;
  int tg = 128;
  int depth = 0;
  bool llama_flash_attn = false;
  std::string kv_type = "f16";  // both engines' (llama-bench -ctk / -ctv)
  DType kv_dtype = DType::kF16;
  int load_reps = 5;
  bool warmup = true;
  bool interleave = true;
  int32_t gpu_layers = 0;  // engine::ContextOptions::gpu_layers (kAllGpuLayers: all); 0: the CPU
  std::string json_path;
  std::string doc_path;
  std::string doc_section;
  std::string command_line;
};

Result<Options> parse_options(int argc, char** argv) {
  Settings s({
      {"models_dir", 0, SettingType::kString, "", "benchmark every .gguf file in this folder (sorted by name)",
       "HEARTH_BENCH_MODELS"},
      {"filter", 0, SettingType::kString, "", "only files whose name contains this text", ""},
      {"threads", 't', SettingType::kInt, "2", "threads for both engines", "",
       SettingRange::at_least(1).lowered_above(hardware_thread_count())},
      {"rounds", 'r', SettingType::kInt, "3", "alternating Hearth / llama.cpp rounds (medians are reported)", "",
       SettingRange::between(1, 1000)},
      {"pp", 'p', SettingType::kInt, "512", "prompt tokens per prompt-processing run", "", SettingRange::between(1, 65536)},
      {"tg", 'n', SettingType::kInt, "128", "tokens per generation run", "", SettingRange::between(1, 65536)},
      {"depth", 'd', SettingType::kInt, "0", "context tokens before each generation run (llama-bench -d)", "",
       SettingRange::between(0, 131072)},
      {"llama_fa", 0, SettingType::kBool, "false", "run llama.cpp with flash attention (llama-bench -fa 1)", ""},
      SettingSpec{"kv_type", 0, SettingType::kString, "f16", "KV cache type of both engines (llama-bench -ctk / -ctv)", ""}
          .with_choices({"f16", "bf16", "f32", "q8_0", "q4_0"}),
      {"load_reps", 0, SettingType::kInt, "5", "warm loads timed per model", "", SettingRange::between(1, 1000)},
      {"warmup", 0, SettingType::kBool, "true",
       "run one untimed pp and tg first, as llama-bench does (off for long prompts, where one run takes minutes)", ""},
      {"weights", 0, SettingType::kString, "interleaved",
       "Hearth's weight layout: interleaved (as hearth runs) or gguf (rows as stored, for comparison)", ""},
      SettingSpec{"gpu_layers", 0, SettingType::kInt, "0",
                  "layers both engines put on the GPU: a count or all (the output layer too); Hearth's device is the "
                  "one HEARTH_GPU names, else the best GPU; llama.cpp gets -ngl; 0: the CPU alone",
                  "", SettingRange::at_least(0)}
          .with_aliases({"-ngl"})
          .with_choices({"all"}),
      {"json", 0, SettingType::kString, "bench_engine.json", "write results as JSON here", ""},
      {"write_doc", 0, SettingType::kString, "", "regenerate this Markdown file (docs/performance.md)", ""},
      {"doc_section", 0, SettingType::kString, "",
       "with --write-doc: replace only this fenced section of the file (for runs over other model sets)", ""},
  });
  std::vector<std::string> args(argv + 1, argv + argc);
  HEARTH_TRY(s.parse(args));
  if (s.help_requested()) {
    std::printf("%s", s.help_text("bench_engine_bench [--models-dir DIR] [FILE.gguf...] [options]").c_str());
    std::exit(0);
  }
  Options o;
  o.models = s.positionals();
  if (const std::string dir = s.get_string("models_dir"); !dir.empty()) {
    std::error_code ec;
    std::vector<std::string> found;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      if (e.path().extension() == ".gguf") found.push_back(e.path().string());
    }
    if (ec) return make_error(ErrorKind::kNotFound, "cannot list '" + dir + "': " + ec.message());
    std::sort(found.begin(), found.end());
    o.models.insert(o.models.end(), found.begin(), found.end());
  }
  if (const std::string f = s.get_string("filter"); !f.empty()) {
    std::erase_if(o.models, [&](const std::string& m) {
      return std::filesystem::path(m).filename().string().find(f) == std::string::npos;
    });
  }
  if (o.models.empty()) return make_error(ErrorKind::kInvalidArgument, "no model files (give FILE.gguf or --models-dir)");
  o.threads = static_cast<int>(s.get_int("threads"));
  o.rounds = static_cast<int>(s.get_int("rounds"));
  o.pp = static_cast<int>(s.get_int("pp"));
  o.tg = static_cast<int>(s.get_int("tg"));
  o.depth = static_cast<int>(s.get_int("depth"));
  o.llama_flash_attn = s.get_bool("llama_fa");
  o.kv_type = s.get_string("kv_type");
  o.kv_dtype = dtype_from_name(o.kv_type).value_or(DType::kF16);
  o.load_reps = static_cast<int>(s.get_int("load_reps"));
  o.warmup = s.get_bool("warmup");
  const std::string layout = s.get_string("weights");
  if (layout != "interleaved" && layout != "gguf") {
    return make_error(ErrorKind::kInvalidArgument, "--weights must be interleaved or gguf, not '" + layout + "'");
  }
  o.interleave = layout == "interleaved";
  o.gpu_layers = s.get_string("gpu_layers") == "all" ? engine::ContextOptions::kAllGpuLayers
                                                      : static_cast<int32_t>(s.get_int("gpu_layers"));
  o.json_path = s.get_string("json");
  o.doc_path = s.get_string("write_doc");
  o.doc_section = s.get_string("doc_section");
  for (int i = 0; i < argc; ++i) {
    if (i > 0) o.command_line += ' ';
    o.command_line += argv[i];
  }
  return o;
}

// probe: the read probe taken beside each of Hearth's tg runs (null for a GPU run, whose decode
// the host's bandwidth does not bound).
ModelResult bench_model(const std::string& path, const Options& o, const std::optional<std::string>& llama,
                        const ReadProbe* probe) {
  ModelResult m;
  m.path = path;
  m.name = std::filesystem::path(path).stem().string();
  std::fprintf(stderr, "== %s\n", m.name.c_str());
  {
    auto f = gguf::File::open(path);
    if (!f.ok()) {
      m.error = f.error().to_string();
      return m;
    }
    m.file_bytes = f->file_size();
    m.decode_weight_bytes = decode_weight_bytes(*f);
  }
  const int n_ctx = std::max(o.pp, o.depth + o.tg) + 1;
  // Warm loads: the first one brings the file into the page cache and is not counted.
  for (int i = 0; i <= o.load_reps; ++i) {
    auto start = std::chrono::steady_clock::now();
    auto r = HearthRunner::open(path, o.threads, n_ctx, o.interleave, o.gpu_layers, o.kv_dtype);
    const double ms = seconds_since(start) * 1000.0;
    if (!r.ok()) {
      m.error = r.error().to_string();
      return m;
    }
    if (i > 0) m.load_ms.push_back(ms);
  }
  m.baseline_rss = current_rss_bytes();
  m.peak_rss_measured = reset_peak_rss();
  auto runner = HearthRunner::open(path, o.threads, n_ctx, o.interleave, o.gpu_layers, o.kv_dtype);
  if (!runner.ok()) {
    m.error = runner.error().to_string();
    return m;
  }
  const auto& h = (*runner)->ctx().model().hparams();
  const engine::InferenceContext& ctx = (*runner)->ctx();
  m.n_layer = h.n_layer;
  m.gpu_layers = ctx.gpu_layers();
  m.gpu_output = ctx.gpu_output();
  m.device_bytes = ctx.device_bytes();
  if (ctx.gpu() != nullptr) m.gpu = device::describe_device(*ctx.gpu());
  if (o.gpu_layers > 0) {
    std::fprintf(stderr, "   hearth: %s layers on %s, %.0f MiB of device memory\n", offload_text(m).c_str(),
                 m.gpu.empty() ? "no GPU" : m.gpu.c_str(), mib(m.device_bytes));
    // A CPU figure in a GPU table would mislead: the log above says why no layer went up.
    if (m.gpu_layers == 0) {
      m.error = "no layer went to a GPU (no device chosen, or the model's layers cannot run there; see the log; "
                "a CPU driver such as lavapipe is used only when HEARTH_GPU names it)";
      return m;
    }
  }
  auto row_bytes = [&](int32_t head_dim) {
    const auto b = dtype_row_bytes(o.kv_dtype, static_cast<uint64_t>(h.n_head_kv) * static_cast<uint64_t>(head_dim));
    return b.ok() ? *b : 0;
  };
  const uint64_t kv_token_bytes = static_cast<uint64_t>(h.n_layer) * (row_bytes(h.head_dim_k) + row_bytes(h.head_dim_v));
  m.kv_bytes = kv_token_bytes * static_cast<uint64_t>(n_ctx);
  // A generation step at depth d reads the K and V of every earlier token: on average over
  // the run, depth + tg/2 of them.
  m.decode_kv_bytes = o.depth > 0 ? kv_token_bytes * static_cast<uint64_t>(o.depth + o.tg / 2) : 0;
  // Warm-up, as llama-bench does one before its runs.
  if (o.warmup) {
    if (auto w = (*runner)->prompt_tps(o.pp); !w.ok()) {
      m.error = w.error().to_string();
      return m;
    }
    (void)(*runner)->generation_tps(std::min(o.tg, 4));
  }

  // One measurement of one kind (prompt processing or generation) by each engine.
  auto hearth_run = [&](bool prompt) -> bool {
    const bool probed = !prompt && probe != nullptr;
    const double before = probed ? probe->read_gbs() : 0;
    auto tps = prompt ? (*runner)->prompt_tps(o.pp) : (*runner)->generation_tps(o.tg, o.depth);
    if (!tps.ok()) {
      m.error = tps.error().to_string();
      return false;
    }
    (prompt ? m.hearth_pp : m.hearth_tg).push_back(*tps);
    if (probed) {
      const double probe_gbs = std::max(before, probe->read_gbs());
      m.hearth_tg_read_gbs.push_back(probe_gbs);
      const double run_gbs = *tps * decode_step_bytes(m) / 1e9;
      std::fprintf(stderr, "   hearth     tg %8.2f  (%.1f GB/s, %.0f%% of the read probe beside it, %.1f GB/s)\n", *tps,
                   run_gbs, 100.0 * run_gbs / probe_gbs, probe_gbs);
    } else {
      std::fprintf(stderr, "   hearth     %s %8.2f\n", prompt ? "pp" : "tg", *tps);
    }
    return true;
  };
  auto llama_run = [&](bool prompt) {
    if (!llama || !m.llama_error.empty()) return;
    LlamaBenchResult r = run_llama_bench(*llama, path, o.threads, prompt ? o.pp : 0, prompt ? 0 : o.tg,
                                         prompt ? 0 : o.depth, o.llama_flash_attn, o.gpu_layers, o.kv_type);
    if (!r.error.empty()) {
      m.llama_error = r.error;
      return;
    }
    (prompt ? m.llama_pp : m.llama_tg).push_back(prompt ? r.pp_tps : r.tg_tps);
    m.llama_peak_rss = std::max(m.llama_peak_rss, r.peak_rss_bytes);
    m.llama_commit = r.build_commit;
    m.llama_gpu = r.gpu_info;
    m.llama_backends = r.backends;
    std::fprintf(stderr, "   llama.cpp  %s %8.2f\n", prompt ? "pp" : "tg", prompt ? r.pp_tps : r.tg_tps);
  };
  // The machine's memory bandwidth drifts over minutes (other tenants), so the two engines'
  // measurements of one kind run back to back, and which engine goes first alternates by round.
  for (int round = 0; round < o.rounds; ++round) {
    for (const bool prompt : {true, false}) {
      if (round % 2 == 1) llama_run(prompt);
      if (!hearth_run(prompt)) return m;
      if (round % 2 == 0) llama_run(prompt);
    }
  }
  m.peak_rss = peak_rss_bytes();
  return m;
}

// The JSON and the doc (--json, --write-doc) for the models measured so far, each written
// atomically (a run killed midway leaves the last complete files).
bool write_outputs(const Options& o, const RunInfo& info, const std::vector<ModelResult>& results) {
  bool ok = true;
  if (!o.json_path.empty() && !write_file_atomically(o.json_path, results_json(info, results).dump(2) + "\n")) {
    std::fprintf(stderr, "cannot write %s\n", o.json_path.c_str());
    ok = false;
  }
  if (!o.doc_path.empty()) {
    // Sections other benchmarks own (registry pull, ...) survive the rewrite.
    std::ifstream in(o.doc_path);
    const std::string old((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string doc = o.doc_section.empty()
                                ? keep_doc_sections(old, format_performance_doc(info, results))
                                : replace_doc_section(old, o.doc_section, format_section_doc(info, results));
    if (!write_file_atomically(o.doc_path, doc)) {
      std::fprintf(stderr, "cannot write %s\n", o.doc_path.c_str());
      ok = false;
    }
  }
  return ok;
}

}  // namespace
}  // namespace hearth::bench

int main(int argc, char** argv) {
  using namespace hearth::bench;
  auto opts = parse_options(argc, argv);
  if (!opts.ok()) {
    std::fprintf(stderr, "bench_engine_bench: %s\n", opts.error().message.c_str());
    return 2;
  }
  const Options& o = *opts;
  RunInfo info;
  info.cpu = cpu_model_name();
  info.threads = o.threads;
  info.pp = o.pp;
  info.tg = o.tg;
  info.depth = o.depth;
  info.llama_flash_attn = o.llama_flash_attn;
  info.kv_type = o.kv_type;
  info.rounds = o.rounds;
  info.date = utc_date();
  info.command = o.command_line;
  info.gpu_layers = o.gpu_layers;
  if (o.gpu_layers > 0) {
    // What discovery sees, as `hearth serve` lists it at start (the device the engine picks is
    // recorded per model once layers went up).
    auto devices = hearth::device::list_devices();
    if (!devices.ok()) {
      std::fprintf(stderr, "no GPU: %s\n", devices.error().message.c_str());
    } else {
      for (size_t i = 0; i < devices->size(); ++i) info.gpu_devices.push_back(hearth::device::describe_device(i, (*devices)[i]));
      for (const auto& line : info.gpu_devices) std::fprintf(stderr, "GPU %s\n", line.c_str());
      if (devices->empty()) std::fprintf(stderr, "Vulkan lists no device\n");
    }
  }
  std::fprintf(stderr, "measuring memory bandwidth (%d threads)...\n", o.threads);
  const Bandwidth bw = measure_bandwidth(o.threads);
  info.memcpy_gbs = bw.memcpy_gbs;
  info.read_gbs = bw.read_gbs;
  const auto llama = llama_bench_path();
  info.llama_bin = llama ? *llama : "";
  if (!llama) std::fprintf(stderr, "HEARTH_LLAMA_CPP_BIN is not set: measuring Hearth only\n");

  // Held from here on, so every model's baseline memory includes it.
  std::optional<ReadProbe> probe;
  if (o.gpu_layers == 0) probe.emplace(o.threads);
  std::vector<ModelResult> results;
  for (const auto& path : o.models) {
    results.push_back(bench_model(path, o, llama, probe ? &*probe : nullptr));
    if (!results.back().error.empty()) std::fprintf(stderr, "   error: %s\n", results.back().error.c_str());
    const ModelResult& m = results.back();
    if (!m.llama_commit.empty()) info.llama_commit = m.llama_commit;
    if (!m.llama_gpu.empty()) info.llama_gpu = m.llama_gpu;
    if (!m.llama_backends.empty()) info.llama_backends = m.llama_backends;
    if (!m.gpu.empty()) info.gpu = m.gpu;
    write_outputs(o, info, results);
  }
  // The bandwidth again at the end: the machine's load may have changed during the run.
  const Bandwidth after = measure_bandwidth(o.threads);
  info.read_gbs = std::max(info.read_gbs, after.read_gbs);
  info.memcpy_gbs = std::max(info.memcpy_gbs, after.memcpy_gbs);

  std::printf("%s", format_console_table(info, results).c_str());
  if (!write_outputs(o, info, results)) return 1;
  for (const auto& r : results) {
    if (!r.error.empty()) return 1;
  }
  return 0;
}
