// Results of the engine benchmark (engine_bench.cpp) and their three renderings: the console
// table, JSON with every sample, and docs/performance.md, which is only ever written from a run
// (never by hand) so the published numbers are the measured ones. A run with layers on a GPU
// (--gpu-layers) names the device each engine used and how many layers Hearth put there.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llama_bench_runner.h"

namespace hearth::bench {

struct RunInfo {
  std::string cpu, date, command, llama_bin, llama_commit;
  int threads = 0, pp = 0, tg = 0, rounds = 0;
  int depth = 0;                  // context tokens before each tg run
  bool llama_flash_attn = false;  // llama.cpp ran with -fa 1
  std::string kv_type = "f16";    // both engines' KV cache type (llama-bench -ctk / -ctv)
  double memcpy_gbs = 0, read_gbs = 0;
  // Layers both engines were asked to put on a GPU (0: none, the CPU run; int32 max: all).
  int32_t gpu_layers = 0;
  std::string gpu;                       // the device Hearth's layers ran on (describe_device)
  std::vector<std::string> gpu_devices;  // every device Hearth's discovery listed, in its order
  std::string llama_gpu, llama_backends;  // the devices and backends llama-bench reported
};

struct ModelResult {
  std::string path, name, error, llama_error, llama_commit;
  std::string gpu;                        // Hearth's device for this model (empty on the CPU)
  std::string llama_gpu, llama_backends;  // what llama-bench reported for it
  uint64_t file_bytes = 0, decode_weight_bytes = 0, kv_bytes = 0;
  uint64_t decode_kv_bytes = 0;  // KV one generation step reads at the run's depth (0 at depth 0)
  uint64_t baseline_rss = 0, peak_rss = 0, llama_peak_rss = 0;
  bool peak_rss_measured = false;
  int32_t n_layer = 0, gpu_layers = 0;  // Hearth's layers in all and on the GPU
  bool gpu_output = false;              // the output layer on the GPU too
  uint64_t device_bytes = 0;            // GPU memory Hearth held for the model (its size_vram)
  std::vector<double> hearth_pp, hearth_tg, llama_pp, llama_tg, load_ms;
  // CPU runs: the read probe beside each of Hearth's tg runs (GB/s, the higher of the probes just
  // before and just after it), hearth_tg's partner sample by sample.
  std::vector<double> hearth_tg_read_gbs;
};

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

inline double mib(uint64_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); }

// "F16 KV cache", "BF16 KV cache", ... (both engines run the run's type).
inline std::string kv_cache_text(const RunInfo& info) {
  std::string t = info.kv_type;
  for (char& c : t) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return t + " KV cache";
}

// Memory the issue allows while decoding: the file, the KV cache and 64 MiB.
inline uint64_t rss_budget(const ModelResult& m) { return m.file_bytes + m.kv_bytes + (uint64_t{64} << 20); }
// Hearth's own peak: the process's peak during this model minus what it held before loading.
inline uint64_t hearth_rss(const ModelResult& m) { return m.peak_rss > m.baseline_rss ? m.peak_rss - m.baseline_rss : 0; }

// Bytes one generation step reads: the weights it multiplies and, at depth, the KV it attends to.
inline double decode_step_bytes(const ModelResult& m) { return static_cast<double>(m.decode_weight_bytes + m.decode_kv_bytes); }

// Hearth's decode as a share of the read bandwidth: the median over its tg runs of each run's
// bytes per second against the probe beside it, or (a run without probes) the median run against
// the run's start/end probe.
inline double hearth_read_share(const ModelResult& m, const RunInfo& info) {
  if (m.hearth_tg_read_gbs.size() == m.hearth_tg.size() && !m.hearth_tg.empty()) {
    std::vector<double> shares;
    for (size_t i = 0; i < m.hearth_tg.size(); ++i) {
      shares.push_back(m.hearth_tg[i] * decode_step_bytes(m) / 1e9 / m.hearth_tg_read_gbs[i]);
    }
    return median(shares);
  }
  return median(m.hearth_tg) * decode_step_bytes(m) / 1e9 / info.read_gbs;
}
// The read bandwidth the bound uses: the median probe beside Hearth's tg runs, else the run's.
inline double bound_read_gbs(const ModelResult& m, const RunInfo& info) {
  return m.hearth_tg_read_gbs.empty() ? info.read_gbs : median(m.hearth_tg_read_gbs);
}

inline std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

inline std::string ratio_text(double a, double b) { return b > 0 && a > 0 ? fmt("%.2fx", a / b) : "-"; }

inline bool gpu_run(const RunInfo& info) { return info.gpu_layers != 0; }
inline std::string gpu_layers_text(int32_t n) {
  return n == std::numeric_limits<int32_t>::max() ? std::string("all") : std::to_string(n);
}
// Hearth's offload of one model: "24/24 + output", "12/24".
inline std::string offload_text(const ModelResult& m) {
  return std::to_string(m.gpu_layers) + "/" + std::to_string(m.n_layer) + (m.gpu_output ? " + output" : "");
}

// The Markdown table shared by the console and the doc. At depth, each row also shows the
// bandwidth bound: the tokens/s a step reading its weights and its KV at the measured
// streaming-read bandwidth would reach. The host's read bandwidth says nothing of a GPU's, so a
// GPU run leaves out the columns that compare with it and shows the offload instead.
inline std::string markdown_table(const RunInfo& info, const std::vector<ModelResult>& results) {
  const std::string pp = "pp" + std::to_string(info.pp), tg = "tg" + std::to_string(info.tg) + (info.depth > 0 ? "@d" + std::to_string(info.depth) : "");
  // CPU rows show the bandwidth bound: the tokens/s a step reading its weights (and, at depth, its
  // KV) at the measured streaming-read bandwidth would reach.
  const bool at_depth = info.depth > 0, gpu = gpu_run(info);
  auto step_bytes = decode_step_bytes;
  auto rate = [](double tps) { return tps > 0 ? fmt("%.2f", tps) : std::string("-"); };
  auto gbs = [&](double tps, const ModelResult& m) { return tps > 0 ? fmt("%.1f", tps * step_bytes(m) / 1e9) : std::string("-"); };
  struct Column {
    std::string header;
    std::function<std::string(const ModelResult&)> cell;
  };
  std::vector<Column> cols = {{"MiB", [](const ModelResult& m) { return fmt("%.0f", mib(m.file_bytes)); }}};
  if (gpu) {
    cols.push_back({"GPU layers", offload_text});
    cols.push_back({"GPU MiB", [](const ModelResult& m) { return fmt("%.0f", mib(m.device_bytes)); }});
  }
  cols.insert(cols.end(), {
      {pp + " Hearth", [&](const ModelResult& m) { return rate(median(m.hearth_pp)); }},
      {pp + " llama.cpp", [&](const ModelResult& m) { return rate(median(m.llama_pp)); }},
      {"ratio", [](const ModelResult& m) { return ratio_text(median(m.hearth_pp), median(m.llama_pp)); }},
      {tg + " Hearth", [&](const ModelResult& m) { return rate(median(m.hearth_tg)); }},
      {tg + " llama.cpp", [&](const ModelResult& m) { return rate(median(m.llama_tg)); }},
      {"ratio", [](const ModelResult& m) { return ratio_text(median(m.hearth_tg), median(m.llama_tg)); }},
      {"decode GB/s Hearth", [&](const ModelResult& m) { return gbs(median(m.hearth_tg), m); }},
      {"llama.cpp", [&](const ModelResult& m) { return gbs(median(m.llama_tg), m); }},
  });
  if (!gpu) {
    cols.push_back({"% of read bw", [&](const ModelResult& m) { return fmt("%.0f%%", 100.0 * hearth_read_share(m, info)); }});
    cols.push_back({"probe GB/s", [&](const ModelResult& m) { return fmt("%.1f", bound_read_gbs(m, info)); }});
    if (at_depth) {
      cols.push_back({"KV MiB read per step", [](const ModelResult& m) { return fmt("%.0f", mib(m.decode_kv_bytes)); }});
    }
    cols.push_back({"bw bound tok/s", [&](const ModelResult& m) { return fmt("%.1f", bound_read_gbs(m, info) * 1e9 / step_bytes(m)); }});
  }
  cols.push_back({"load ms", [](const ModelResult& m) { return fmt("%.0f", median(m.load_ms)); }});
  cols.push_back({"RSS MiB (budget)", [](const ModelResult& m) {
                    return (m.peak_rss_measured ? fmt("%.0f", mib(hearth_rss(m))) : std::string("?")) + " (" +
                           fmt("%.0f", mib(rss_budget(m))) + ")";
                  }});
  std::string out = "| model |", rule = "|---|";
  for (const auto& c : cols) {
    out += " " + c.header + " |";
    rule += "---:|";
  }
  out += "\n" + rule + "\n";
  for (const auto& m : results) {
    out += "| " + m.name + " |";
    if (!m.error.empty()) {
      out += " error: " + m.error + " |" + std::string(cols.size() - 1, '|') + "\n";
      continue;
    }
    for (const auto& c : cols) {
      out += ' ';
      out += c.cell(m);
      out += " |";
    }
    out += "\n";
  }
  return out;
}

inline std::string machine_line(const RunInfo& info) {
  std::string line = info.cpu + ", " + std::to_string(info.threads) + " threads; memcpy " + fmt("%.1f", info.memcpy_gbs) +
                     " GB/s, streaming read " + fmt("%.1f", info.read_gbs) + " GB/s (same thread count, same run" +
                     (gpu_run(info) ? ", the host's; the GPU is named below" : "") + ")";
  return line;
}

// How a GPU run put layers on the device, in both engines (empty for a CPU run).
inline std::string gpu_paragraph(const RunInfo& info) {
  if (!gpu_run(info)) return "";
  std::string out = "GPU offload: Hearth with `--gpu-layers " + gpu_layers_text(info.gpu_layers) +
                    "` (the engine's gpu_layers, as `hearth run -ngl`), on " +
                    (info.gpu.empty() ? std::string("no device (every layer stayed on the CPU)") : info.gpu) +
                    "; its discovery listed " + std::to_string(info.gpu_devices.size()) + " device(s)";
  for (size_t i = 0; i < info.gpu_devices.size(); ++i) out += (i == 0 ? ": " : "; ") + info.gpu_devices[i];
  out += ". llama.cpp with `-ngl " + llama_ngl(info.gpu_layers) + "`";
  if (!info.llama_commit.empty()) {
    out += ", reporting devices \"" + info.llama_gpu + "\" and backends \"" + info.llama_backends + "\"";
  }
  return out + ". The GPU layers column is Hearth's offload (layers on the device / layers; + output: the output "
               "layer too) and GPU MiB the device memory it held once loaded (weights and buffers; KV "
               "chunks come as sequences grow).\n";
}

// Checks of the targets that this run can decide, one line each.
inline std::vector<std::string> target_lines(const RunInfo& info, const std::vector<ModelResult>& results) {
  std::vector<std::string> lines;
  double worst = 1e9;
  std::string worst_name;
  for (const auto& m : results) {
    if (!m.error.empty() || m.llama_pp.empty()) continue;
    for (auto [h, l, what] : {std::tuple{median(m.hearth_pp), median(m.llama_pp), "pp"},
                              std::tuple{median(m.hearth_tg), median(m.llama_tg), "tg"}}) {
      if (l > 0 && h / l < worst) {
        worst = h / l;
        worst_name = m.name + " " + what;
      }
    }
  }
  if (!worst_name.empty()) {
    lines.push_back("Worst Hearth/llama.cpp ratio: " + fmt("%.2fx", worst) + " (" + worst_name + ")" +
                    (gpu_run(info) ? std::string(".")
                                   : std::string("; the 1.0x floor ") + (worst >= 1.0 ? "holds" : "does not hold") +
                                         " in this run."));
  }
  // The bandwidth, load and memory targets are the CPU engine's.
  if (gpu_run(info)) return lines;
  for (const auto& m : results) {
    if (!m.error.empty()) continue;
    if (m.name.find("-1b-q8_0") != std::string::npos) {
      const double gbs = median(m.hearth_tg) * decode_step_bytes(m) / 1e9;
      lines.push_back("Decode bandwidth, " + m.name + ": " + fmt("%.1f", gbs) + " GB/s = " +
                      fmt("%.0f%%", 100 * hearth_read_share(m, info)) + " of the measured read bandwidth (target 80%).");
    }
    if (m.name.find("-1b-q4_0") != std::string::npos) {
      lines.push_back("Warm load, " + m.name + ": " + fmt("%.0f", median(m.load_ms)) + " ms (target < 200 ms).");
    }
  }
  int within = 0, measured = 0;
  for (const auto& m : results) {
    if (!m.error.empty() || !m.peak_rss_measured) continue;
    ++measured;
    within += hearth_rss(m) <= rss_budget(m);
  }
  if (measured > 0) {
    lines.push_back("Peak RSS while decoding within file + KV + 64 MiB: " + std::to_string(within) + " of " +
                    std::to_string(measured) + " models.");
  }
  return lines;
}

inline std::string format_console_table(const RunInfo& info, const std::vector<ModelResult>& results) {
  std::string out = "\n" + machine_line(info) + "\n\n" + gpu_paragraph(info) + (gpu_run(info) ? "\n" : "") +
                    markdown_table(info, results) + "\n";
  for (const auto& l : target_lines(info, results)) out += l + "\n";
  for (const auto& m : results) {
    if (!m.llama_error.empty()) out += m.name + ": llama.cpp failed: " + m.llama_error + "\n";
  }
  return out;
}

inline nlohmann::json results_json(const RunInfo& info, const std::vector<ModelResult>& results) {
  nlohmann::json j;
  j["machine"] = {{"cpu", info.cpu},           {"threads", info.threads},   {"memcpy_gbs", info.memcpy_gbs},
                  {"read_gbs", info.read_gbs}, {"date", info.date}};
  j["settings"] = {{"pp", info.pp},         {"tg", info.tg},
                   {"depth", info.depth},   {"llama_flash_attn", info.llama_flash_attn}, {"kv_type", info.kv_type},
                   {"rounds", info.rounds}, {"command", info.command}};
  j["llama_cpp"] = {{"bin", info.llama_bin},
                    {"commit", info.llama_commit},
                    {"gpu_info", info.llama_gpu},
                    {"backends", info.llama_backends},
                    {"ngl", llama_ngl(info.gpu_layers)}};
  j["gpu"] = {{"layers_asked", gpu_layers_text(info.gpu_layers)}, {"device", info.gpu}, {"devices", info.gpu_devices}};
  for (const auto& m : results) {
    nlohmann::json r = {{"name", m.name},
                        {"path", m.path},
                        {"file_bytes", m.file_bytes},
                        {"decode_weight_bytes", m.decode_weight_bytes},
                        {"kv_bytes", m.kv_bytes},
                        {"decode_kv_bytes", m.decode_kv_bytes},
                        {"hearth", {{"pp_tps", m.hearth_pp}, {"tg_tps", m.hearth_tg}, {"tg_read_gbs", m.hearth_tg_read_gbs},
                                    {"load_ms", m.load_ms},
                                    {"pp_median", median(m.hearth_pp)}, {"tg_median", median(m.hearth_tg)},
                                    {"peak_rss_bytes", hearth_rss(m)}, {"rss_budget_bytes", rss_budget(m)},
                                    {"n_layer", m.n_layer}, {"gpu_layers", m.gpu_layers}, {"gpu_output", m.gpu_output},
                                    {"device_bytes", m.device_bytes}}},
                        {"llama_cpp", {{"pp_tps", m.llama_pp}, {"tg_tps", m.llama_tg},
                                       {"pp_median", median(m.llama_pp)}, {"tg_median", median(m.llama_tg)},
                                       {"peak_rss_bytes", m.llama_peak_rss}}}};
    if (!m.error.empty()) r["error"] = m.error;
    if (!m.llama_error.empty()) r["llama_cpp"]["error"] = m.llama_error;
    j["models"].push_back(r);
  }
  return j;
}

inline std::string format_performance_doc(const RunInfo& info, const std::vector<ModelResult>& results) {
  std::string out =
      "# Performance\n\n"
      "Generated by `bench/engine_bench.cpp` from one run; do not edit by hand. To regenerate:\n\n"
      "```sh\n"
      "scripts/build.sh release --target bench_engine_bench hearth-dev\n"
      "# once: the models (random weights, real shapes; see hearth-dev make-model --help)\n"
      "for t in f16 q8_0 q4_0 q4_k_m q6_k; do\n"
      "  build/release/src/devtools/hearth-dev make-model --arch llama --shape 1b --type $t -o /work/models-bench/llama-1b-$t.gguf\n"
      "  build/release/src/devtools/hearth-dev make-model --arch qwen2 --shape 0.5b --type $t -o /work/models-bench/qwen2-0.5b-$t.gguf\n"
      "  build/release/src/devtools/hearth-dev make-model --arch llama --shape 3b --type $t -o /work/models-bench/llama-3b-$t.gguf\n"
      "done\n"
      "HEARTH_LLAMA_CPP_BIN=/path/to/llama.cpp/build/bin build/release/bench/bench_engine_bench \\\n"
      "  --models-dir /work/models-bench --threads 2 --rounds 3 --write-doc docs/performance.md\n"
      "```\n\n"
      "This run: `" + info.command + "` on " + info.date + ".\n\n"
      "- Machine: " + machine_line(info) + ".\n"
      "- llama.cpp: `llama-bench` build " + (info.llama_commit.empty() ? std::string("(not run)") : info.llama_commit) +
      ", default settings (mmap, " + kv_cache_text(info) + (info.llama_flash_attn ? ", flash attention on (-fa 1)" : ", no flash attention") +
      (info.depth > 0 ? ", generation after " + std::to_string(info.depth) + " context tokens (-d)" : std::string()) +
      "), one repetition per run. In each of " +
      std::to_string(info.rounds) + " rounds the two engines' pp runs and then their tg runs go back to back, the "
      "engine that goes first alternating by round (the machine's bandwidth drifts over minutes); the table shows "
      "medians.\n"
      "- pp" + std::to_string(info.pp) + ": tokens/s of one batch of " + std::to_string(info.pp) +
      " random tokens (logits of the last); tg" + std::to_string(info.tg) + ": tokens/s of " +
      std::to_string(info.tg) + " single-token steps from an empty cache (logits every step), as llama-bench measures them.\n"
      "- decode GB/s: bytes of weights one step reads (every tensor but an untied token embedding), plus at depth the "
      "KV it reads, times tg tokens/s; "
      "% of read bw compares each of Hearth's tg runs with a streaming-read probe taken just before and just after "
      "it (the higher; same threads, 256 MiB), median over the runs; probe GB/s is the median probe and bw bound "
      "tok/s that bandwidth divided by those bytes per step (the speed of a step that did nothing but read them). "
      "The streaming read above is the whole run's, at its start and end.\n"
      "- load ms: Hearth's warm load (mmap, weights bound, tokenizer and KV cache ready), median of several. "
      "RSS: Hearth's peak resident memory while running the model, against the budget file + KV cache + 64 MiB.\n\n" +
      (gpu_run(info) ? "- " + gpu_paragraph(info) + "\n" : std::string()) + markdown_table(info, results) + "\n";
  for (const auto& l : target_lines(info, results)) out += "- " + l + "\n";
  return out;
}

// A fenced section of docs/performance.md for a run over another set of models (MoE shapes):
// the run's command, date, machine and load, the table and the target lines.
inline std::string format_section_doc(const RunInfo& info, const std::vector<ModelResult>& results) {
  double load[3] = {0, 0, 0};
  const bool have_load = getloadavg(load, 3) == 3;
  std::string out = "### Engine benchmark: `" + info.command + "`\n\n";
  out += "Run on " + info.date + "; " + machine_line(info) + "; llama.cpp `llama-bench` build " +
         (info.llama_commit.empty() ? std::string("(not run)") : info.llama_commit) + ". " +
         (have_load ? "Load average at the end of the run: " + fmt("%.1f", load[0]) + " (1 min), " + fmt("%.1f", load[1]) +
                          " (5 min): the absolute numbers are taken under that load; the ratios come from "
                          "interleaved runs of both engines in the same rounds.\n\n"
                    : std::string("\n\n")) +
         "decode GB/s counts the bytes one token reads: for mixture-of-experts files, the share of the expert "
         "tensors its chosen experts hold (the active-parameter bytes), plus every other tensor" +
         (info.depth > 0 ? ", plus the " + kv_cache_text(info) + " of the depth's tokens" : std::string()) +
         (gpu_run(info) ? std::string()
                        : std::string("; % of read bw compares each of Hearth's tg runs with a streaming-read probe "
                                      "taken just before and just after it (the higher; same threads, 256 MiB), median "
                                      "over the runs; probe GB/s is the median probe, and bw bound tok/s that bandwidth "
                                      "divided by those bytes per step (the speed a step that only read them would "
                                      "reach)")) +
         ".\n\n" + (gpu_run(info) ? gpu_paragraph(info) + "\n" : std::string()) +
         markdown_table(info, results) + "\n";
  for (const auto& l : target_lines(info, results)) out += "- " + l + "\n";
  for (const auto& m : results) {
    if (!m.llama_error.empty()) out += "- " + m.name + ": llama.cpp could not run it (" + m.llama_error + ").\n";
  }
  return out;
}

}  // namespace hearth::bench
