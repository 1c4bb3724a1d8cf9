// The accuracy cost of each KV cache type (issue 23): models read a text with an F16 cache and
// with F32, BF16, Q8_0 and Q4_0 caches (engine::kv_accuracy: first half one prefill batch, the rest
// decode steps), and the table gives per type the mean and largest KL divergence of the
// next-token distributions from the F16 cache's, the top-1 agreement, the largest logit
// difference and the text's perplexity. A type a model cannot take (quantized caches need head
// sizes that are multiples of 32) gets the reason instead of figures.
//   bench_kv_accuracy_bench [--tokens N] [--threads N] [--write-doc docs/kv_accuracy.md]
//                           MODEL.gguf... (default: the shared stories260K and random llama)
// The text is ../shared/reference/stories-eval.txt (--text FILE overrides).
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "doc_sections.h"
#include "engine/kv_accuracy.h"
#include "util/file_io.h"

namespace {

using namespace hearth;

struct Options {
  std::vector<std::string> models;
  std::string text = "../shared/reference/stories-eval.txt";
  int tokens = 512;
  int threads = 0;
  std::string write_doc;
};

int usage() {
  std::fprintf(stderr,
               "usage: bench_kv_accuracy_bench [--tokens N] [--threads N] [--text FILE] [--write-doc FILE.md] "
               "[MODEL.gguf...]\n");
  return 2;
}

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--tokens" && (v = value())) {
      o.tokens = std::atoi(v);
    } else if (a == "--threads" && (v = value())) {
      o.threads = std::atoi(v);
    } else if (a == "--text" && (v = value())) {
      o.text = v;
    } else if (a == "--write-doc" && (v = value())) {
      o.write_doc = v;
    } else if (!a.empty() && a[0] != '-') {
      o.models.push_back(a);
    } else {
      return usage();
    }
  }
  if (o.tokens < 4) return usage();
  if (o.models.empty()) {
    o.models = {"../shared/models/stories260K-llama-f32.gguf", "../shared/models/random/llama-F32.gguf"};
  }
  auto text = read_file(o.text);
  if (!text.ok()) {
    std::fprintf(stderr, "%s\n", text.error().to_string().c_str());
    return 1;
  }
  const std::vector<DType> types = {DType::kF32, DType::kBF16, DType::kQ8_0, DType::kQ4_0};
  std::ostringstream doc;
  doc << "# KV cache types: accuracy against an F16 cache\n\n"
      << "Written by `bench_kv_accuracy_bench --write-doc docs/kv_accuracy.md` on " << bench::utc_date() << ". "
      << "Each model reads the first " << o.tokens << " tokens of `reference/stories-eval.txt` "
      << "(the first half as one prefill batch through the flash tile, the rest as decode steps; "
      << "with a Q8_0 or Q4_0 cache a decode step quantizes Q to Q8_0 for integer Q.K dot products, as "
      << "llama.cpp does, while the prefill tile keeps Q in F32; with a BF16 cache both round Q and the "
      << "probabilities to BF16, as llama.cpp multiplies a BF16 cache), "
      << "once with an F16 cache and once per type below; the figures compare the next-token "
      << "distributions at every position with the F16 cache's. KL is KL(F16 cache || type) in nats; "
      << "top-1 is the share of positions whose most likely token is the F16 cache's; PPL is the text's "
      << "perplexity (F16 cache's in brackets). `tests/engine/kv_accuracy_test.cpp` bounds these per type.\n\n"
      << "| model | KV type | mean KL | max KL | top-1 | max logit error | PPL (F16) |\n"
      << "|---|---|---:|---:|---:|---:|---:|\n";
  int failures = 0;
  for (const std::string& model : o.models) {
    engine::ContextOptions base;
    base.n_threads = o.threads;
    std::vector<int32_t> tokens;
    {
      auto ctx = engine::InferenceContext::load(model, base);
      if (!ctx.ok()) {
        std::fprintf(stderr, "%s\n", ctx.error().to_string().c_str());
        return 1;
      }
      tokens = (*ctx)->tokenizer().encode(*text, true, false);
    }
    if (tokens.size() > static_cast<size_t>(o.tokens)) tokens.resize(static_cast<size_t>(o.tokens));
    const std::string name = model.substr(model.find_last_of('/') + 1);
    for (DType type : types) {
      auto r = engine::kv_accuracy(model, tokens, {type}, base);
      const std::string tname(dtype_name(type));
      if (!r.ok()) {
        std::printf("%s %s: %s\n", name.c_str(), tname.c_str(), r.error().message.c_str());
        const bool head_size = r.error().message.find("multiples of 32") != std::string::npos;
        if (!head_size) ++failures;
        doc << "| " << name << " | " << tname << " | "
            << (head_size ? "not possible: head size not a multiple of 32" : "error: " + r.error().message)
            << " | | | | |\n";
        continue;
      }
      const engine::KvAccuracy& a = r->front();
      std::printf("%s %s: mean KL %.3g, max KL %.3g, top-1 %.4f, max logit error %.3g, ppl %.4f (F16 %.4f)\n",
                  name.c_str(), tname.c_str(), a.mean_kl, a.max_kl, a.top1_agreement, a.max_logit_error, a.ppl,
                  a.ppl_f16);
      doc << "| " << name << " | " << tname << " | " << fmt("%.3g", a.mean_kl) << " | " << fmt("%.3g", a.max_kl)
          << " | " << fmt("%.4f", a.top1_agreement) << " | " << fmt("%.3g", a.max_logit_error) << " | "
          << fmt("%.4f", a.ppl) << " (" << fmt("%.4f", a.ppl_f16) << ") |\n";
    }
  }
  doc << "\nstories260K has trained weights but head size 8, so it can show only F32 and BF16 against F16: Q8_0 and Q4_0 "
      << "blocks hold 32 values and every head must start on a block (llama.cpp has the same limit). The random "
      << "models have head size 64 but no training, so their perplexities are near the vocabulary size and only "
      << "the differences from F16 mean anything.\n";
  if (!o.write_doc.empty()) {
    if (auto st = write_file_atomic(o.write_doc, doc.str()); !st.ok()) {
      std::fprintf(stderr, "%s\n", st.error().to_string().c_str());
      return 1;
    }
    std::printf("wrote %s\n", o.write_doc.c_str());
  }
  return failures == 0 ? 0 : 1;
}
