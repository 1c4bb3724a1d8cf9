// Time to quantize an F16 GGUF to Q4_K_M (or another type): Hearth's quantizer
// (gguf_quantizer.h, all cores, streaming, atomic write) against llama.cpp's llama-quantize on
// the same file in the same run, when HEARTH_LLAMA_CPP_BIN names a llama.cpp build that has
// it (the comparison is skipped with a note otherwise). Rounds alternate which tool goes
// first; medians are reported. Writes JSON (--json) and can update its section of
// docs/performance.md (--write-doc). Target: Hearth >= 1x llama-quantize.
//
//   hearth-dev make-model --arch llama --shape 1b --type f16 -o /tmp/llama-1b-f16.gguf
//   bench_gguf_quantize_bench --model /tmp/llama-1b-f16.gguf --write-doc docs/performance.md
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "doc_sections.h"
#include "gguf/gguf_quantizer.h"
#include "llama_bench_runner.h"
#include "util/settings.h"
#include "util/thread_pool.h"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace hearth;
  using namespace hearth::bench;
  Settings s({
      {"model", 'm', SettingType::kString, "", "the F16 (or BF16/F32) GGUF to quantize", ""},
      {"type", 0, SettingType::kString, "Q4_K_M", "target type (F16, Q8_0, Q4_0, Q4_K_M, Q5_K_M, Q6_K)", ""},
      {"threads", 't', SettingType::kInt, "0", "threads for both tools (0: physical cores)", "", SettingRange::between(0, 1024)},
      {"rounds", 'r', SettingType::kInt, "3", "rounds (medians are reported)", "", SettingRange::between(1, 100)},
      {"out_dir", 0, SettingType::kString, "", "folder for the outputs (default: beside the model)", ""},
      {"json", 0, SettingType::kString, "bench_gguf_quantize.json", "write results as JSON here", ""},
      {"write_doc", 0, SettingType::kString, "", "update the quantize section of this Markdown file (docs/performance.md)", ""},
      {"note", 0, SettingType::kString, "", "a remark about this run for the doc (e.g. other load on the machine)", ""},
  });
  std::vector<std::string> args(argv + 1, argv + argc);
  if (auto st = s.parse(args); !st.ok()) {
    std::fprintf(stderr, "%s\n", st.error().message.c_str());
    return 2;
  }
  if (s.help_requested() || s.get_string("model").empty()) {
    std::printf("%s", s.help_text("bench_gguf_quantize_bench --model F16.gguf [options]").c_str());
    return s.help_requested() ? 0 : 2;
  }
  const std::string model = s.get_string("model");
  auto type = gguf::quantize_type_from_name(s.get_string("type"));
  if (!type.ok()) {
    std::fprintf(stderr, "%s\n", type.error().message.c_str());
    return 2;
  }
  const std::string type_name = gguf::file_type_name(*type);
  const int threads = s.get_int("threads") > 0 ? static_cast<int>(s.get_int("threads")) : physical_core_count();
  const int rounds = static_cast<int>(s.get_int("rounds"));
  std::string out_dir = s.get_string("out_dir");
  if (out_dir.empty()) out_dir = std::filesystem::path(model).parent_path().string();
  if (out_dir.empty()) out_dir = ".";
  const std::string hearth_out = out_dir + "/bench-quantize-hearth.gguf";
  const std::string llama_out = out_dir + "/bench-quantize-llama.gguf";
  std::string command;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--note") {
      ++i;
      continue;
    }
    if (!a.starts_with("--note=")) command += (i ? " " : "") + a;
  }

  std::optional<std::string> llama_quantize;
  std::string skipped;
  if (const char* bin = std::getenv("HEARTH_LLAMA_CPP_BIN"); bin != nullptr && *bin != '\0') {
    const std::string exe = std::string(bin) + "/llama-quantize";
    if (::access(exe.c_str(), X_OK) == 0) llama_quantize = exe;
    else skipped = exe + " is not there";
  } else {
    skipped = "HEARTH_LLAMA_CPP_BIN is not set";
  }

  std::vector<double> hearth_s, llama_s;
  std::string error;
  for (int r = 0; r < rounds && error.empty(); ++r) {
    auto run_hearth = [&] {
      const auto t = std::chrono::steady_clock::now();
      auto q = gguf::quantize_gguf_file(model, hearth_out, *type, threads, nullptr);
      if (!q.ok()) error = "hearth: " + q.error().to_string();
      hearth_s.push_back(seconds_since(t));
    };
    auto run_llama = [&] {
      if (!llama_quantize) return;
      int code = 0;
      const auto t = std::chrono::steady_clock::now();
      run_capture({*llama_quantize, model, llama_out, type_name, std::to_string(threads)}, code, nullptr);
      llama_s.push_back(seconds_since(t));
      if (code != 0) error = "llama-quantize exited with " + std::to_string(code);
    };
    if (r % 2 == 0) {
      run_hearth();
      run_llama();
    } else {
      run_llama();
      run_hearth();
    }
  }
  std::error_code ec;
  const uint64_t in_bytes = std::filesystem::file_size(model, ec);
  const uint64_t out_bytes = std::filesystem::file_size(hearth_out, ec);
  std::filesystem::remove(hearth_out, ec);
  std::filesystem::remove(llama_out, ec);
  if (!error.empty()) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  const std::string date = utc_date("%Y-%m-%d %H:%M UTC");
  const double h = median(hearth_s);
  const double l = median(llama_s);
  nlohmann::json j{{"command", command}, {"date", date},        {"model", model},     {"model_bytes", in_bytes},
                   {"type", type_name},  {"threads", threads},  {"rounds", rounds},   {"hearth_seconds", hearth_s},
                   {"output_bytes", out_bytes}};
  std::printf("quantize %s (%.1f MiB) to %s, %d threads, median of %d rounds\n", model.c_str(), in_bytes / 1048576.0,
              type_name.c_str(), threads, rounds);
  std::printf("  hearth          %8.3f s  %8.1f MiB/s in\n", h, in_bytes / 1048576.0 / h);
  std::string table = "| tool | seconds | MiB/s (input) | vs llama-quantize |\n|---|---:|---:|---:|\n";
  char row[256];
  if (llama_quantize) {
    j["llama_quantize_seconds"] = llama_s;
    j["ratio"] = l / h;
    std::printf("  llama-quantize  %8.3f s  %8.1f MiB/s in\n  hearth speed vs llama-quantize: %.2fx\n", l,
                in_bytes / 1048576.0 / l, l / h);
    std::snprintf(row, sizeof row, "| Hearth | %.3f | %.1f | %.2fx |\n| llama-quantize | %.3f | %.1f | 1.00x |\n", h,
                  in_bytes / 1048576.0 / h, l / h, l, in_bytes / 1048576.0 / l);
  } else {
    j["llama_quantize_skipped"] = skipped;
    std::printf("  llama-quantize: skipped (%s)\n", skipped.c_str());
    std::snprintf(row, sizeof row, "| Hearth | %.3f | %.1f | n/a |\n", h, in_bytes / 1048576.0 / h);
  }
  table += row;
  if (const std::string path = s.get_string("json"); !path.empty()) std::ofstream(path) << j.dump(2) << "\n";
  if (const std::string doc = s.get_string("write_doc"); !doc.empty()) {
    std::string body =
        "## Quantize (`create --quantize`)\n\n"
        "Generated by `bench/gguf_quantize_bench.cpp`; regenerate with `build/release/bench/bench_gguf_quantize_bench "
        "--model F16.gguf --write-doc docs/performance.md` (and `HEARTH_LLAMA_CPP_BIN` set for the comparison).\n\n"
        "This run: `" + command + "` on " + date + ": " + std::to_string(in_bytes >> 20) + " MiB F16 model to " +
        type_name + ", " + std::to_string(threads) + " threads, median of " + std::to_string(rounds) + " rounds" +
        (llama_quantize ? " (the order of the tools alternating by round). Target: Hearth >= 1x.\n"
                        : ". llama-quantize comparison skipped: " + skipped + ".\n") +
        (s.get_string("note").empty() ? "" : "\nNote: " + s.get_string("note") + "\n") + "\n" + table;
    std::ifstream in(doc);
    std::string old((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(doc) << replace_doc_section(old, "gguf_quantize_bench", body);
  }
  return 0;
}
