// Tokenizer throughput: encoding ~1 MB of mixed English prose, C++/Python code and CJK text
// (generated deterministically here) with the 32k SentencePiece vocabulary and the 50k GPT-2
// BPE vocabulary from shared/vocab, plus decoding, against a memcpy of the same text measured
// in the same run. Reports MB/s of input text, prints the ratio to memcpy and writes JSON
// (bench_tokenizer.json unless --benchmark_out is given). Shared data: $HEARTH_SHARED_DIR, else
// ../shared beside the checkout.
#include <benchmark/benchmark.h>

#include "bench_ratio_reporter.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace {

std::string shared_dir() {
  if (const char* env = std::getenv("HEARTH_SHARED_DIR"); env != nullptr && *env != '\0') return env;
  std::string here = __FILE__;  // .../bench/tokenizer_bench.cpp
  here.erase(here.rfind('/'));
  here.erase(here.rfind('/'));
  return here + "/../shared";
}

// About 1 MB: fragments chosen by a fixed linear congruential sequence.
const std::string& mixed_text() {
  static const std::string text = [] {
    const char* fragments[] = {
        "The quick brown fox jumps over the lazy dog while the model streams its answer. ",
        "In 2024, about 3.5 million people visited the museum; admission was $12.50 each.\n",
        "She said: \"We'll see what happens tomorrow,\" and closed the door quietly.\n\n",
        "int main(int argc, char** argv) {\n    for (int i = 0; i < argc; ++i) printf(\"%s\\n\", argv[i]);\n}\n",
        "def tokenize(text: str) -> list[int]:\n    return [vocab.get(w, UNK) for w in text.split()]\n",
        "    if (x->next != nullptr && x->next->value >= threshold) { return x->next; }\n",
        "\xE8\xBF\x99\xE6\x98\xAF\xE4\xB8\x80\xE4\xB8\xAA\xE6\xB5\x8B\xE8\xAF\x95\xE5\x8F\xA5\xE5\xAD\x90"
        "\xEF\xBC\x8C\xE7\x94\xA8\xE6\x9D\xA5\xE8\xA1\xA1\xE9\x87\x8F\xE5\x88\x86\xE8\xAF\x8D\xE5\x99\xA8"
        "\xE7\x9A\x84\xE9\x80\x9F\xE5\xBA\xA6\xE3\x80\x82",
        "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9\xE3\x83\x88"
        "\xE3\x82\x82\xE5\x90\xAB\xE3\x81\xBE\xE3\x82\x8C\xE3\x81\xA6\xE3\x81\x84\xE3\x81\xBE\xE3\x81\x99\xE3\x80\x82\n",
        "Caf\xC3\xA9 na\xC3\xAFve r\xC3\xA9sum\xC3\xA9 \xF0\x9F\x99\x82 \xF0\x9F\xA6\x99 \xE2\x80\x94 \xC2\xBD ",
    };
    constexpr size_t kCount = sizeof(fragments) / sizeof(fragments[0]);
    std::string t;
    t.reserve((1u << 20) + 256);
    uint32_t state = 12345;
    while (t.size() < (1u << 20)) {
      state = state * 1664525u + 1013904223u;
      t += fragments[(state >> 16) % kCount];
    }
    return t;
  }();
  return text;
}

// 256 KB with no spaces at all (random CJK ideographs, then random lowercase letters): one
// pre-tokenizer piece per script, nothing any cache can reuse. Shows that long words cost
// O(n log n), not O(n^2).
const std::string& no_space_text() {
  static const std::string text = [] {
    std::string t;
    uint32_t state = 777;
    while (t.size() < (1u << 17)) {
      state = state * 1664525u + 1013904223u;
      const uint32_t cp = 0x4E00 + (state >> 8) % 0x5000;
      t += static_cast<char>(0xE0 | (cp >> 12));
      t += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      t += static_cast<char>(0x80 | (cp & 0x3F));
    }
    while (t.size() < (1u << 18)) {
      state = state * 1664525u + 1013904223u;
      t += static_cast<char>('a' + (state >> 16) % 26);
    }
    return t;
  }();
  return text;
}

std::shared_ptr<hearth::Tokenizer> load_tokenizer(const std::string& name) {
  static std::map<std::string, std::shared_ptr<hearth::Tokenizer>> cache;
  if (auto it = cache.find(name); it != cache.end()) return it->second;
  const std::string path = shared_dir() + "/vocab/" + name;
  auto file = hearth::gguf::File::open(path);
  if (!file.ok()) return nullptr;
  auto tok = hearth::Tokenizer::from_gguf(file.value());
  if (!tok.ok()) return nullptr;
  return cache[name] = std::make_shared<hearth::Tokenizer>(std::move(tok).value());
}

void set_rate(benchmark::State& state, double bytes) {
  state.counters["MB/s"] = benchmark::Counter(bytes / 1e6, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_MemcpyBaseline(benchmark::State& state) {
  const std::string& text = mixed_text();
  std::string dst(text.size(), '\0');
  for (auto _ : state) {
    std::memcpy(dst.data(), text.data(), text.size());
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  set_rate(state, static_cast<double>(text.size()));
}

void BM_Encode(benchmark::State& state, const std::string& vocab) {
  auto tok = load_tokenizer(vocab);
  if (!tok) {
    state.SkipWithError(("cannot load " + shared_dir() + "/vocab/" + vocab).c_str());
    return;
  }
  const std::string& text = mixed_text();
  size_t n_tokens = 0;
  for (auto _ : state) {
    auto ids = tok->encode(text, true, false);
    n_tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  set_rate(state, static_cast<double>(text.size()));
  state.counters["tokens"] = static_cast<double>(n_tokens);
}

void BM_EncodeNoSpaces(benchmark::State& state, const std::string& vocab) {
  auto tok = load_tokenizer(vocab);
  if (!tok) {
    state.SkipWithError(("cannot load " + shared_dir() + "/vocab/" + vocab).c_str());
    return;
  }
  const std::string& text = no_space_text();
  for (auto _ : state) {
    auto ids = tok->encode(text, false, false);
    benchmark::DoNotOptimize(ids.data());
  }
  set_rate(state, static_cast<double>(text.size()));
}

void BM_Decode(benchmark::State& state, const std::string& vocab) {
  auto tok = load_tokenizer(vocab);
  if (!tok) {
    state.SkipWithError(("cannot load " + shared_dir() + "/vocab/" + vocab).c_str());
    return;
  }
  const std::string& text = mixed_text();
  const auto ids = tok->encode(text, false, false);
  for (auto _ : state) {
    auto out = tok->decode(ids);
    benchmark::DoNotOptimize(out.data());
  }
  set_rate(state, static_cast<double>(text.size()));
}

// llama.cpp's llama-tokenize on the same text and vocabulary, when HEARTH_LLAMA_CPP_BIN names a
// llama.cpp build's bin/ folder. One iteration is one process run on the text file minus a run
// on a one-byte file (process start and vocabulary load), so the rate is tokenizing alone.
double run_seconds(const std::string& command) {
  auto start = std::chrono::steady_clock::now();
  int rc = std::system(command.c_str());
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return rc == 0 ? s : -1.0;
}

void BM_LlamaTokenize(benchmark::State& state, const std::string& vocab, const std::string& bin) {
  const std::string dir = std::filesystem::temp_directory_path().string();
  const std::string text_path = dir + "/hearth-bench-mixed.txt";
  const std::string tiny_path = dir + "/hearth-bench-tiny.txt";
  {
    std::ofstream(text_path, std::ios::binary) << mixed_text();
    std::ofstream(tiny_path, std::ios::binary) << "a";
  }
  const std::string base = bin + "/llama-tokenize -m " + shared_dir() + "/vocab/" + vocab + " --ids --log-disable -f ";
  for (auto _ : state) {
    double full = run_seconds(base + text_path + " >/dev/null 2>&1");
    double load = run_seconds(base + tiny_path + " >/dev/null 2>&1");
    if (full < 0 || load < 0) {
      state.SkipWithError("llama-tokenize failed");
      return;
    }
    state.SetIterationTime(std::max(full - load, 1e-6));
  }
  set_rate(state, static_cast<double>(mixed_text().size()));
}

// Input rates relative to memcpy, printed after the usual console table.
class RatioReporter : public hearth::bench::RatioReporter {
 public:
  RatioReporter() : hearth::bench::RatioReporter("MB/s", "input MB/s on mixed text, relative to memcpy (%.2f MB/s) in this run:") {}
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::RegisterBenchmark("MemcpyBaseline", BM_MemcpyBaseline)->UseRealTime();
  for (const auto& [label, vocab] : std::vector<std::pair<std::string, std::string>>{
           {"spm-llama-32k", "ggml-vocab-llama-spm.gguf"}, {"bpe-gpt2-50k", "ggml-vocab-gpt-2.gguf"}}) {
    benchmark::RegisterBenchmark(("Encode/" + label).c_str(), BM_Encode, vocab)->UseRealTime()->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("Decode/" + label).c_str(), BM_Decode, vocab)->UseRealTime()->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("EncodeNoSpaces256K/" + label).c_str(), BM_EncodeNoSpaces, vocab)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  if (const char* bin = std::getenv("HEARTH_LLAMA_CPP_BIN"); bin != nullptr && *bin != '\0') {
    for (const auto& [label, vocab] : std::vector<std::pair<std::string, std::string>>{
             {"spm-llama-32k", "ggml-vocab-llama-spm.gguf"}, {"bpe-gpt2-50k", "ggml-vocab-gpt-2.gguf"}}) {
      benchmark::RegisterBenchmark(("LlamaCppEncode/" + label).c_str(), BM_LlamaTokenize, vocab, std::string(bin))
          ->UseManualTime()
          ->Iterations(3)
          ->Unit(benchmark::kMillisecond);
    }
  }
  RatioReporter reporter;
  return hearth::bench::run_benchmarks(argc, argv, "bench_tokenizer.json", reporter);
}
