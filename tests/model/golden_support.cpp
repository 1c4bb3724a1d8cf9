// Golden-comparison helpers (see golden_support.h).
#include "model/golden_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "common/test_paths.h"

namespace hearth::test {

nlohmann::json load_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) return nlohmann::json();
  return nlohmann::json::parse(in, nullptr, false);
}

Tolerance logit_tolerance(const nlohmann::json& tol, const std::string& stem) {
  std::string kind = "quantized";
  for (const char* plain : {"F32", "F16", "BF16"}) {
    std::string p = plain;
    if (stem.size() > p.size() && stem.substr(stem.size() - p.size()) == p) kind = p;
  }
  if (stem.size() > 4 && stem.substr(stem.size() - 4) == "-f32") kind = "F32";
  if (stem.size() > 4 && stem.substr(stem.size() - 4) == "-f16") kind = "F16";
  const auto& t = tol["logits"][kind];
  return {t["max_abs_over_sigma"].get<double>(), t["rms_over_sigma"].get<double>(),
          t["top1_gate_over_sigma"].get<double>()};
}

std::string model_path_for_stem(const std::string& stem) {
  std::string random = models_dir() + "/random/" + stem + ".gguf";
  if (file_exists(random)) return random;
  return models_dir() + "/" + stem + ".gguf";
}

std::vector<std::string> golden_stems() {
  std::vector<std::string> stems;
  auto summary = load_json(reference_dir() + "/summary.json");
  if (summary.is_object()) {
    for (auto it = summary.begin(); it != summary.end(); ++it) stems.push_back(it.key());
  }
  if (stems.empty()) stems.push_back("missing-summary-json");
  return stems;
}

std::string next_reference_dir() { return shared_dir() + "/next/reference"; }

std::string next_model_path_for_stem(const std::string& stem) { return shared_dir() + "/next/models/" + stem + ".gguf"; }

std::vector<std::string> next_golden_stems() { return {"llama-IQ4_NL", "llama-IQ4_XS"}; }

std::unique_ptr<GoldenRunner> GoldenRunner::open(const std::string& path, int32_t n_ctx) {
  auto r = std::make_unique<GoldenRunner>();
  auto m = model::Model::load(path);
  EXPECT_TRUE(m.ok()) << m.error().to_string();
  if (!m.ok()) return nullptr;
  r->model = std::move(m).value();
  r->pool = std::make_unique<ThreadPool>(2);
  kv::KvCacheOptions kv_options;
  kv_options.sliding = r->model->kv_sliding();  // sliding layers release what leaves their window
  auto kv = kv::KvCache::create(r->model->kv_layout(DType::kF16), (n_ctx + 15) / 16 + 1, kv_options);
  EXPECT_TRUE(kv.ok());
  if (!kv.ok()) return nullptr;
  r->kv = std::make_unique<kv::KvCache>(std::move(kv).value());
  r->seq = r->kv->seq_create();
  r->forward = std::make_unique<model::ForwardPass>(*r->model, *r->pool);
  return r;
}

void GoldenRunner::reset() { (void)kv->seq_truncate(seq, 0); }

std::vector<float> GoldenRunner::run(const std::vector<int32_t>& tokens, bool all_outputs) {
  std::vector<model::BatchToken> batch;
  int32_t pos = kv->seq_length(seq);
  for (size_t i = 0; i < tokens.size(); ++i) {
    batch.push_back({tokens[i], seq, pos + static_cast<int32_t>(i), all_outputs || i + 1 == tokens.size()});
  }
  std::vector<float> logits, hidden;
  auto st = forward->run(batch, *kv, model->is_encoder() ? nullptr : &logits, model->is_encoder() ? &hidden : nullptr);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  return model->is_encoder() ? hidden : logits;
}

int32_t argmax(const float* x, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; ++i) {
    if (x[i] > x[best]) best = i;
  }
  return best;
}

void check_logits_golden(GoldenRunner& r, const nlohmann::json& g, double sigma, const Tolerance& tol,
                         const std::string& label) {
  const int32_t n_vocab = r.model->hparams().n_vocab;
  std::vector<int32_t> tokens = g["tokens"].get<std::vector<int32_t>>();
  r.reset();
  std::vector<float> logits = r.run(tokens, true);
  ASSERT_EQ(logits.size(), tokens.size() * static_cast<size_t>(n_vocab));
  double max_err = 0.0;
  int gated = 0, agree = 0;
  const auto& positions = g["positions"];
  for (size_t i = 0; i < tokens.size(); ++i) {
    const float* row = logits.data() + i * static_cast<size_t>(n_vocab);
    for (const auto& pair : positions[i]["top"]) {
      max_err = std::max(max_err, std::fabs(row[pair[0].get<int32_t>()] - pair[1].get<double>()));
    }
    if (positions[i]["margin"].get<double>() >= tol.top1_gate_over_sigma * sigma) {
      ++gated;
      int32_t want = positions[i]["top"][0][0].get<int32_t>();
      agree += argmax(row, n_vocab) == want;
      EXPECT_EQ(argmax(row, n_vocab), want) << label << " position " << i;
    }
  }
  // Full last-position vector.
  const auto& last = g["last_logits"];
  const float* row = logits.data() + (tokens.size() - 1) * static_cast<size_t>(n_vocab);
  double sq = 0.0;
  for (int32_t v = 0; v < n_vocab; ++v) {
    double e = row[v] - last[static_cast<size_t>(v)].get<double>();
    sq += e * e;
    max_err = std::max(max_err, std::fabs(e));
  }
  double rms = std::sqrt(sq / n_vocab);
  EXPECT_LE(rms / sigma, tol.rms_over_sigma) << label << " last-position rms error " << rms;

  // Greedy continuation, teacher-forced with the golden tokens.
  const auto& steps = g["greedy"]["steps"];
  std::vector<float> step_logits(row, row + n_vocab);
  for (size_t s = 0; s < steps.size(); ++s) {
    const auto& step = steps[s];
    for (const auto& pair : step["top"]) {
      max_err = std::max(max_err, std::fabs(step_logits[pair[0].get<size_t>()] - pair[1].get<double>()));
    }
    int32_t want = step["token"].get<int32_t>();
    if (step["margin"].get<double>() >= tol.top1_gate_over_sigma * sigma) {
      ++gated;
      agree += argmax(step_logits.data(), n_vocab) == want;
      EXPECT_EQ(argmax(step_logits.data(), n_vocab), want) << label << " greedy step " << s;
    }
    if (s + 1 < steps.size()) step_logits = r.run({want}, false);
  }
  EXPECT_LE(max_err / sigma, tol.max_abs_over_sigma) << label << " max abs error " << max_err;
  std::printf("[golden] %s max_abs/sigma=%.4f rms/sigma=%.4f top1 %d/%d\n", label.c_str(), max_err / sigma,
              rms / sigma, agree, gated);
}

}  // namespace hearth::test
