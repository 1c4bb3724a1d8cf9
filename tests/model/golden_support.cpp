// Golden-comparison helpers (see golden_support.h).
#include "model/golden_support.h"

#include <gtest/gtest.h>

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
  auto kv = kv::KvCache::create(r->model->kv_layout(DType::kF16), (n_ctx + 15) / 16 + 1);
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

}  // namespace hearth::test
